"""A site reader's fallback to the user's own browser, end to end: real daemon, real extension, real Chromium.

A private GitHub repository answers 404 to the REST API (no token); the user is signed in to the site in their
browser. trawl reads the issue through the extension (the browser's session), not through plain HTTP (which gets
the same 404 as the API), and says in ``source_reason`` why the reader did not answer.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from ..readers_fake import start_sites, stop_sites
from .conftest import close_linked, launch_linked

PRIVATE = "The staging deploy key rotates every Monday at 06:00 UTC."


async def test_private_repository_is_read_through_the_signed_in_browser(tmp_path: Path, chromium: str) -> None:
    sites = await start_sites()
    gh = sites.github
    gh.json("/api/v3/repos/acme/secret/issues/7", {"message": "Not Found",
            "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue"}, status=404)

    async def issue_page(request: web.Request) -> web.StreamResponse:
        if request.cookies.get("user_session") != "signed-in":  # GitHub hides a private repository: 404
            return web.Response(status=404, text="<html><body><h1>404</h1><p>This is not the web page you are "
                                "looking for.</p></body></html>", content_type="text/html")
        return web.Response(text="<!doctype html><html><head><title>Rotate the deploy key · Issue #7</title></head>"
                            f"<body><main><h1>Rotate the deploy key #7</h1><p>{PRIVATE}</p><p>Assigned to the "
                            "platform team; see the runbook for the steps.</p></main></body></html>",
                            content_type="text/html")

    gh.routes["/acme/secret/issues/7"] = issue_page
    url = f"{gh.base}/acme/secret/issues/7"
    settings = sites.settings(tmp_path, port=0, workers=2)
    linked = await launch_linked(tmp_path, chromium, settings=settings)
    try:
        assert await linked.hub.wait_attached(15), linked.hub.describe()
        await linked.context.add_cookies([{"name": "user_session", "value": "signed-in", "url": gh.base}])
        result = await linked.engine.fetch(url, "when does the deploy key rotate")
        assert result.ok, result.error
        assert result.source == "extension", result
        assert "github: GitHub API answered 404: private repository or missing item" in result.source_reason
        assert PRIVATE in " ".join(c.text for c in result.chunks)
        api = gh.api_hits("/api/v3/repos/acme/secret/issues/7")
        assert len(api) == 1 and "Cookie" not in api[0].headers  # the reader never carries the browser's session
    finally:
        await close_linked(linked)
        await stop_sites(sites)
