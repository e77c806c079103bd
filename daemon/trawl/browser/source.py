"""ExtensionSource: pages read through the user's own browser (priority 10, before plain HTTP).

Accepts ``tab:<id>`` / ``tab:active`` always (no other source can read a tab), and
http(s) URLs while a browser is attached and not paused. The user's site policy is
enforced in the extension too: on the requested URL, on every redirect hop (a background
tab's main-frame requests, a PDF fetch's hops, followed by hand), on the URL of the
document actually serialised and on the tab's URL after it (a tab that moved to another
site during capture is refused). A refusal comes back as BLOCKED_BY_POLICY, which is final.
The reply's ``final_url`` is the serialised document's ``location.href`` (or the URL the PDF
bytes came from), so the daemon checks the same URL again. Captured HTML carries
``data-trawl-hidden="<reason>"`` on text the browser did not show (extension/hidden.js).
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
        if req.target[:8].lower().startswith(("http://", "https://")) and self.hub.attached and not self.hub.paused:
            return "the user's browser is attached"
        return None

    async def fetch(self, req: FetchRequest, settings: Settings) -> Page:
        tab = parse_tab(req.target)
        if tab is not None:
            page = await self.hub.capture(tab=tab)
        elif req.target[:8].lower().startswith(("http://", "https://")):
            page = await self.hub.capture(url=req.target)
        else:
            raise TrawlError(ErrorCode.UNSUPPORTED_SCHEME, "the browser reads http(s) pages and tabs only")
        return page
