"""trawl's capabilities: each operation declared once (name, description, input and output models, flags,
rendering, handler), and the faces generated from them.

    catalog()                       every capability trawl serves (fetch, read_more, list_tabs, read_tab, search_tabs)
    execute(services, registry, name, payload) -> JSON body     how any face runs one
    build_server(registry, backend) the MCP tools (daemon /mcp and the stdio bridge)
    attach_browser(services, hub)   the browser link's public hook

The faces (``trawl.cli``, ``trawl.server``, ``trawl.browser``, ``trawl_mcp``) import this package and never each
other. Adding an operation is one :class:`Capability` here (plus its handler and tests).
"""

from .base import Backend, Capability, Input, LocalBackend, Output, Registry, Services, error_body, execute
from .core import EXIT_CHECK, FETCH, READ_MORE, FetchIn, ReadMoreIn
from .models import ErrorOut, PageOut, SearchOut, TabsOut
from .profile import PROFILE_PAGE
from .stats import STATS
from .tabs import LIST_TABS, READ_TAB, SEARCH_TABS, attach_browser

CAPABILITIES: tuple[Capability, ...] = (FETCH, READ_MORE, LIST_TABS, READ_TAB, SEARCH_TABS, STATS, PROFILE_PAGE,
                                        EXIT_CHECK)


def catalog() -> Registry:
    """A fresh registry of every capability trawl declares."""
    return Registry(CAPABILITIES)


__all__ = [
    "CAPABILITIES",
    "EXIT_CHECK",
    "FETCH",
    "LIST_TABS",
    "PROFILE_PAGE",
    "READ_MORE",
    "READ_TAB",
    "SEARCH_TABS",
    "STATS",
    "Backend",
    "Capability",
    "ErrorOut",
    "FetchIn",
    "Input",
    "LocalBackend",
    "Output",
    "PageOut",
    "ReadMoreIn",
    "Registry",
    "SearchOut",
    "Services",
    "TabsOut",
    "attach_browser",
    "catalog",
    "error_body",
    "execute",
]
