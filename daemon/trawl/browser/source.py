"""ExtensionSource: pages read through the user's own browser (priority 10, before plain HTTP).

Accepts ``tab:<id>`` / ``tab:active`` always (no other source can read a tab), and
http(s) URLs while a browser is attached and not paused. The user's site policy is
enforced in the extension; a refused site comes back as BLOCKED_BY_POLICY, and the
pipeline then falls back to the public fetch (without the user's session).
Pages from this source may be private: the page cache keeps them in memory only.
"""

from __future__ import annotations

from ..settings import Settings
from ..sources.base import FetchRequest
from ..types import ErrorCode, Page, TrawlError
from .hub import ExtensionHub


def parse_tab(target: str) -> str | None:
    """``tab:active`` -> "active", ``tab:12`` -> "12"; None when ``target`` is not a tab."""
    if not target.startswith("tab:"):
        return None
    ref = target[4:].strip().lower()
    if ref == "active" or (ref.isdigit() and len(ref) < 12):
        return ref
    raise TrawlError(ErrorCode.INVALID_REQUEST, f"bad tab {target[4:]!r}: use a tab id from list_tabs or 'active'")


class ExtensionSource:
    name = "extension"
    priority = 10

    def __init__(self, hub: ExtensionHub) -> None:
        self.hub = hub

    def accepts(self, req: FetchRequest) -> str | None:
        if req.target.startswith("tab:"):
            return "an open browser tab"
        if req.target.startswith(("http://", "https://")) and self.hub.attached and not self.hub.paused:
            return "the user's browser is attached"
        return None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        tab = parse_tab(req.target)
        if tab is not None:
            page = await self.hub.capture(tab=tab)
        elif req.target.startswith(("http://", "https://")):
            page = await self.hub.capture(url=req.target)
        else:
            raise TrawlError(ErrorCode.UNSUPPORTED_SCHEME, "the browser reads http(s) pages and tabs only")
        return page
