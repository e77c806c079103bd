"""The scan skips matching a selector that needs a class or id no element of the page carries
(:func:`trawl.sanitise.css.selectors.required_names`): the answer, the budgets and the count of unchecked
selectors stay those of the reference path, which matches every selector."""

from __future__ import annotations

import pytest
from cssselect import parse
from trawl.sanitise.css.selectors import required_names
from trawl.sanitise.hidden import MAX_XPATH_SELECTORS, scan


def _names(selector: str) -> set[tuple[str, str]] | None:
    got = required_names(parse(selector)[0].parsed_tree)
    return None if got is None else set(got)


@pytest.mark.parametrize(("selector", "names"), [
    (".a .b", {(".", "a"), (".", "b")}),
    ("#x > p.c", {("#", "x"), (".", "c")}),
    ("ul li + .d ~ .e", {(".", "d"), (".", "e")}),
    ("p:not(.a)", set()),  # what :not() names is not required
    (":is(.a, .b) .c", {(".", "c")}),  # nor one of :is()'s alternatives
    ("a:hover .b", {(".", "b")}),  # never matches; its compound is not read
    ("div[x~=y].f:first-child", {(".", "f")}),
    (".a:nth-child(2) .b", None),  # the matcher leaves :nth-child to XPath
    (".a:where(.b)", None),
    (".a:has(.b)", None),
])
def test_required_names(selector: str, names: set[tuple[str, str]] | None) -> None:
    assert _names(selector) == names


def _both(page: str) -> None:
    fast, ref = scan(page), scan(page, reference=True)
    assert fast == ref


def test_an_absent_ancestor_class_hides_nothing_and_a_present_one_hides() -> None:
    body = '<div class="box"><p class="b">Paragraph text that a rule may hide from people</p></div>'
    for css, hidden in ((".absent .b{display:none}", False), (".box .b{display:none}", True)):
        page = f"<html><head><style>{css}</style></head><body>{body}<p>Visible text stays here</p></body></html>"
        _both(page)
        assert bool(scan(page).passages) == hidden


def test_selectors_left_to_xpath_still_spend_its_budget() -> None:
    # Each ".absent:nth-child(n) .b" names a class the page lacks but still goes to XPath (the matcher raises
    # before it could tell): the XPath budget runs out on them as before, so the last rule stays unchecked.
    decoys = "".join(f".absent:nth-child({i}) .b{{display:none}}" for i in range(1, MAX_XPATH_SELECTORS + 1))
    css = decoys + ".box :nth-child(1).b{display:none}"
    body = '<div class="box"><p class="b">Paragraph text that the last rule would hide</p></div>'
    page = f"<html><head><style>{css}</style></head><body>{body}<p>Visible text stays here</p></body></html>"
    _both(page)
    got = scan(page)
    assert got.unchecked == 1
    assert not got.passages
