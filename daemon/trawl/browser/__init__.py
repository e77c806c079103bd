"""The companion Chrome extension's link: protocol, pairing, the /ext hub and the ExtensionSource.

    create_app(engine, settings, ..., extra_routes=[install_browser_link])
"""

from .hub import ExtensionHub
from .identity import PINNED_EXTENSION_ID
from .install import browser_link, install_browser_link
from .source import ExtensionSource

__all__ = ["PINNED_EXTENSION_ID", "ExtensionHub", "ExtensionSource", "browser_link", "install_browser_link"]
