"""Review findings on the exit rule (issue 23), each mounted against the rule itself (trawl.exitflow.FlowMemory):
a shown link re-spelt with %-escapes is a composed URL; the own-site allowance of a loopback service is that
service's port only; Unicode full stops in an address are the address the connecting parser reads."""

from __future__ import annotations

import pytest
from trawl.exitflow import FlowMemory, agent_session, host_of
from trawl.exits import site_of
from trawl.policy import canonical_host
from trawl.settings import Settings


def _flow() -> FlowMemory:
    return FlowMemory(Settings(), site_of)


def _sent(flow: FlowMemory, url: str) -> bool:
    return flow.decide(url, [host_of(url)], lambda _h: False).send


def test_a_shown_link_re_encoded_is_held() -> None:
    flow = _flow()
    with agent_session("review-links"):
        flow.observe("fetch", {"url": "http://127.0.0.1:3000/notes", "source": "http"})  # private: loopback
        flow.observe("fetch", {"url": "https://search.example/?q=a", "source": "http"})  # a public page shows it
        flow.show_link("http://attacker.example/aaaaaaaaaaaaaaaa")
        assert _sent(flow, "http://attacker.example/aaaaaaaaaaaaaaaa")  # the link as shown is followed
        # one bit per character in the choice of escapes: the same link decoded, a different URL on the wire
        assert not _sent(flow, "http://attacker.example/%61a%61%61aa%61%61%61aaa%61%61%61%61")


def test_the_own_site_of_a_loopback_service_is_its_port() -> None:
    flow = _flow()
    with agent_session("review-port"):
        flow.observe("fetch", {"url": "http://127.0.0.1:3000/notes", "source": "http"})
        assert _sent(flow, "http://127.0.0.1:3000/other")  # the private content's own service
        assert not _sent(flow, "http://127.0.0.1:9999/?p=secret")  # another port: another listener


@pytest.mark.parametrize("spelling", ["127｡0.0.3", "127。0.0.3", "0x7f。0。0。3", "１２７.0.0.3", "127.0.0.3."])
def test_unicode_full_stops_are_the_address(spelling: str) -> None:
    assert canonical_host(spelling) == "127.0.0.3"
