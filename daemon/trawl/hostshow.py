"""Hosts and URLs as people are shown them wherever trawl names an exit: in the form that cannot pass for another name.

A yes to the exit question sends what the session read to the hosts it names, and a host copied from the status page
into an allow list vouches for it, so each is shown as the connection asks for it (the ASCII ``xn--`` form), with an
international name's letters named by script and a mark on a label that mixes scripts (:func:`shown_host`), its site
first (:func:`shown_where`), and a URL shown beside it in printable ASCII with its host spelled the same way
(:func:`shown_url`). Standard library only (``unicodedata``, the ``punycode`` codec): no table of look-alike
characters.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote, urlsplit, urlunsplit

from .policy import canonical_host

# Scripts that one writing system mixes by design (Japanese: kanji and kana; Korean: hangul and hanja; Chinese with
# bopomofo): a label of these together is one script for the mark below.
_HAN_SCRIPTS = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC"})
# Bidirectional classes that reorder the text around them: a name holding one is not echoed into a sentence.
_REORDERING = frozenset({"R", "AL", "AN", "RLE", "LRE", "RLO", "LRO", "PDF", "RLI", "LRI", "FSI", "PDI"})


def shown_host(host: str) -> str:
    """``host`` as the user is shown it in a question: in the form that cannot pass for another name, the ASCII
    one the connection asks for (an international name's ``xn--`` A-labels, as a browser's parser spells it:
    :func:`trawl.policy.canonical_host`), and, when it is an international name, beside it the letters it is
    written in, by script (``unicodedata``), with a mark when one label mixes scripts (``pаypal.com`` with a
    Cyrillic ``а`` reads as PayPal's). A host in plain ASCII letters is shown as it is."""
    ascii_form = canonical_host(host).strip() if host else ""
    if not ascii_form or not ascii_form.isascii():
        ascii_form = ascii(host)[1:-1]  # the parser refused it: escapes, never the letters themselves
    labels = [_u_label(label) for label in ascii_form.split(".")]
    if all(label.isascii() for label in labels):
        return ascii_form
    scripts_of = [_scripts(label) for label in labels]
    every = sorted({s for ss in scripts_of for s in ss})
    unicode_form = ".".join(labels)
    written = "" if any(unicodedata.bidirectional(c) in _REORDERING or unicodedata.category(c) == "Cf"
                        for c in unicode_form) else f' "{unicode_form}"'
    mixed = [label for label, ss in zip(labels, scripts_of, strict=True) if len(ss) > 1]
    mark = (f"; a part of it mixes {' and '.join(sorted({s for m in mixed for s in _scripts(m)}))} letters, as "
            "names made to pass for another site's do" if mixed else "")
    return f"{ascii_form} (an international name{written}, in {', '.join(every) or 'other'} letters{mark})"


def _u_label(label: str) -> str:
    """An ``xn--`` label decoded (the standard library's punycode codec), any other label unchanged."""
    if not label.startswith("xn--"):
        return label
    try:
        return label[4:].encode("ascii").decode("punycode")
    except (UnicodeError, ValueError):
        return label


def _scripts(label: str) -> set[str]:
    """The scripts of a label's letters, by their Unicode names (digits, hyphens and marks belong to none)."""
    out = set()
    for c in label:
        if not unicodedata.category(c).startswith("L"):
            continue
        script = unicodedata.name(c, "UNKNOWN").split(" ")[0]
        out.add("Han" if script in _HAN_SCRIPTS else script.capitalize())
    return out


def shown_where(host: str, site: str) -> str:
    """Where a request to ``host`` goes, for the user: its ``site`` (the registrable domain, which receives it and
    which a yes vouches for) first, then the full host when it is longer: "paypal.com.attacker.example" is
    attacker.example's page, "attacker.example (the host paypal.com.attacker.example)". Both as :func:`shown_host`."""
    shown = shown_host(site or host)
    return shown if not site or canonical_host(host) == site else f"{shown} (the host {shown_host(host)})"


# Printable ASCII stays as written in a shown URL (its own %-escapes too), and the space and ellipsis of a value trawl
# masked ("Zq8v…(22 chars)"); anything else is %-escaped as UTF-8: letters of another script, and characters that
# reorder or hide text on screen.
_URL_SAFE = frozenset(map(chr, range(0x20, 0x7F))) | {"\u2026"}
_QUOTE_SAFE = "".join(sorted(c for c in _URL_SAFE if c.isascii()))


def _printable(part: str) -> str:
    """``part`` with every character outside :data:`_URL_SAFE` %-escaped (``quote`` keeps only ASCII as written)."""
    return "\u2026".join(quote(piece, safe=_QUOTE_SAFE) for piece in part.split("\u2026"))


def shown_url(url: str) -> str:
    """``url`` as the user is shown it: its host in the ASCII form (:func:`shown_host`'s first part), every other part
    in printable ASCII (anything else %-escaped), so the URL shown beside a host's name cannot spell a look-alike again,
    in its host or in a URL nested inside it. A URL already of printable ASCII is shown as it is."""
    if _URL_SAFE.issuperset(url):
        return url
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ascii(url)[1:-1]
    ascii_host = canonical_host(host) if host else ""
    if not ascii_host.isascii():
        return ascii(url)[1:-1]
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (_printable(userinfo) + "@" if userinfo else "") + (
        f"[{ascii_host}]" if ":" in ascii_host and not ascii_host.startswith("[") else ascii_host) + (
        f":{port}" if port is not None else "")
    rest = [_printable(part) for part in (parts.path, parts.query, parts.fragment)]
    return urlunsplit((parts.scheme, netloc, *rest))
