"""What earlier reads gave an agent, and whether a URL carries it: the exit guard's content-matching layer.

Remembered (bounded, in memory, as keyed hashes, never the text itself): the text of every result this daemon
returned to an agent (chunks, titles, tab hits), with the site it came from; the contents of local files read for
agents (site ``file:``); trawl's own secrets (the API token).

What a URL is searched for (:func:`url_parts`), in its query keys and values (each, and all values joined: one
token split over several parameters), fragment, path segments, user info and sub-domain labels; percent-decoded
and decoded repeatedly where a value is base64/base64url, base32 or hex, possibly gzip/zlib-compressed
(:func:`decodings`, MAX_DECODE_DEPTH layers); NFKC-normalised (full-width letters read as plain ones):

* a *token* (a run of 12+ letters and digits, with both) that appeared in an earlier result from another site,
  or in a local file; a local file's tokens, trawl's own secrets and secret-format strings are also found inside
  a value folded to letters and digits (dashes and spaces stripped, case folded) and reversed, as any 12-character
  window (keyed hashes);
* a run of 12 words that appeared in an earlier result from another site, or in a local file (terms the agent put
  in an earlier URL itself, before any read showed them, are its own, not data);
* a well-known secret format (:data:`SECRET_FORMATS`: private-key blocks, AWS key ids, GitHub/OpenAI/Slack tokens,
  JWTs), whatever its origin.

Memory is bounded: page features live in an LRU where a site holding a quarter of it evicts its own oldest
entries; local files, trawl's secrets and secret-format strings live in a separate store pages cannot evict.
This layer is the reason text and a hard stop for known secret formats, not the boundary: the exit rule is
information flow (:mod:`trawl.exitflow`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import re
import secrets
import unicodedata
import zlib
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, unquote_plus, urlsplit

SHINGLE_WORDS = 12  # a copied run of this many words counts as data from an earlier read
MIN_TOKEN = 12  # letters-and-digits runs at least this long count as tokens
MAX_ENTRIES = 400_000  # hashes remembered (LRU), ~40 MB at most
MAX_TEXT_CHARS = 400_000  # per observed text (a large local file is remembered this far)
MAX_KEPT = 300_000  # hashes from local files and secret-format strings: a store of their own, pages cannot evict it
HEAVY_SITE = MAX_ENTRIES // 4  # a site holding this many page entries evicts its own oldest ones, not others'
WINDOW = 12  # kept tokens are also remembered as every window of this many folded characters (split, re-spaced)
MAX_DECODE_DEPTH = 3  # layers of percent/base64/base32/hex/gzip peeled off a URL value
MAX_DECODE_CHARS = 8_192  # values longer than this are not decoded further
MAX_CANDIDATES = 200  # decoded forms searched per URL
FILE_ORIGIN = "file:"
TRAWL_ORIGIN = "trawl:"  # trawl's own secrets


_TOKEN = re.compile(r"[A-Za-z0-9]{" + str(MIN_TOKEN) + ",}")
_WORD = re.compile(r"\w+")


_B64 = re.compile(r"^[A-Za-z0-9+/_\-]{16,}={0,2}$")
_B32 = re.compile(r"^[A-Za-z2-7]{16,}={0,6}$")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2}){8,}$")


SECRET_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key block", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----|BEGIN OPENSSH PRIVATE KEY")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{40,}")),
    ("an API secret key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{24,}")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
)


def fold(text: str) -> str:
    """Compatibility-normalised (NFKC: full-width and styled letters), case-folded, letters and digits only:
    separators (dashes, spaces, dots, parameter boundaries) cannot hide a token."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())


def url_parts(url: str) -> list[str]:
    """The parts of a URL that can carry data: query keys and values, fragment, path segments, user info,
    sub-domain labels; each percent-decoded."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return [url]
    out: list[str] = []
    labels = host.split(".")
    out.extend(labels[:-2])  # sub-domain labels: DNS is an exit too
    if parts.username:
        out.append(unquote(parts.username))
    if parts.password:
        out.append(unquote(parts.password))
    out.extend(unquote(seg) for seg in parts.path.split("/") if seg)
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        out.extend((key, value))
    if parts.query and "=" not in parts.query:
        out.append(unquote_plus(parts.query))
    if parts.fragment:
        out.append(unquote_plus(parts.fragment))
    out.append(unquote_plus(parts.path + (" " + parts.query if parts.query else "")))  # data split across parts
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if len(pairs) > 1:  # one value split over several parameters: the values in order, and keys with them
        out.append("".join(v for _k, v in pairs))
        out.append("".join(k + v for k, v in pairs))
    return [p for p in out if p]


def decodings(value: str, depth: int = MAX_DECODE_DEPTH) -> Iterator[str]:
    """``value`` and what it decodes to when that is readable text: percent, base64/base64url, base32, hex, each
    possibly gzip/zlib-compressed, peeled off repeatedly (``depth`` layers, values up to MAX_DECODE_CHARS)."""
    seen: set[str] = set()
    todo = [(value, 0)]
    while todo and len(seen) < MAX_CANDIDATES:
        text, level = todo.pop()
        if text in seen:
            continue
        seen.add(text)
        yield text
        if level >= depth or len(text) > MAX_DECODE_CHARS:
            continue
        todo.extend((t, level + 1) for t in _one_layer(text) if t not in seen)


def _one_layer(value: str) -> Iterator[str]:
    once = unquote_plus(value)
    if once != value:
        yield once
    compact = value.strip()
    raws: list[bytes] = []
    if _HEX.match(compact):
        raws.append(binascii.unhexlify(compact))
    if _B64.match(compact):
        padded = compact + "=" * (-len(compact) % 4)
        for alt in (False, True):
            try:
                raws.append(base64.urlsafe_b64decode(padded) if alt else base64.b64decode(padded, validate=True))
            except (binascii.Error, ValueError):
                continue
    if _B32.match(compact):
        bare = compact.rstrip("=").upper()
        with contextlib.suppress(binascii.Error, ValueError):
            raws.append(base64.b32decode(bare + "=" * (-len(bare) % 8)))
    for raw in raws:
        text = _printable(raw) or _printable(_inflate(raw))
        if text:
            yield text


def _inflate(raw: bytes) -> bytes:
    """gzip or zlib data, decompressed (at most MAX_DECODE_CHARS bytes); b"" for anything else."""
    if not raw.startswith((b"\x1f\x8b", b"\x78")):
        return b""
    try:
        return zlib.decompressobj(wbits=47).decompress(raw, MAX_DECODE_CHARS)  # 47: gzip or zlib header
    except zlib.error:
        return b""


def _printable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text:
        return None
    good = sum(1 for c in text if c.isprintable() or c in "\n\r\t")
    return text if good / len(text) >= 0.9 else None


@dataclass(slots=True)
class _Entry:
    sites: set[str]
    first_read: int  # the read (one agent call) that brought it in first
    owner: str = ""  # the site that brought it in first (page store: whose quota it counts against)


def _mixed(window: str) -> bool:
    """A window worth remembering: at least two letters and two digits (a plain word is not a secret)."""
    digits = sum(c.isdigit() for c in window)
    return digits >= 2 and len(window) - digits >= 2


@dataclass(slots=True)
class _Owner:
    count: int = 0
    order: deque[bytes] = field(default_factory=deque)  # first-seen order of this site's entries (may hold stale)


class TaintStore:
    """Keyed hashes of tokens and word runs seen in earlier reads, each with the sites it came from.

    Two stores. *Pages*: an LRU of MAX_ENTRIES where a heavy site (HEAVY_SITE entries or more) evicts its own oldest
    entries, so one site's flood of fresh text cannot push out what other sites gave. *Kept*: what came from local
    files, trawl's own secrets and secret-format strings on any page, bounded on its own (MAX_KEPT) so no page can
    evict it; kept tokens are also remembered as every WINDOW-character window of their folded form, so a token
    split over parameters, re-spaced, reversed or re-encoded is still recognised."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_kept: int = MAX_KEPT) -> None:
        self._key = secrets.token_bytes(16)
        self._seen: OrderedDict[bytes, _Entry] = OrderedDict()
        self._kept: OrderedDict[bytes, _Entry] = OrderedDict()
        self._owners: dict[str, _Owner] = {}
        # What the agent itself put in URLs before any read showed it (its own search terms, ids): a page that
        # echoes them back ("results for …") does not make them data from that page.
        self._own: OrderedDict[bytes, None] = OrderedDict()
        self._max = max_entries
        self._max_kept = max_kept
        self._heavy = max(1, max_entries // 4)

    def _h(self, kind: bytes, text: str) -> bytes:
        return hashlib.blake2b(kind + text.encode("utf-8", "surrogatepass"), key=self._key, digest_size=10).digest()

    def features(self, text: str) -> Iterator[tuple[str, bytes, str]]:
        """(kind, hash, shown) for each token and each run of SHINGLE_WORDS words in ``text``."""
        for m in _TOKEN.finditer(text):
            tok = m.group(0)
            if any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok):
                yield "token", self._h(b"t", tok.casefold()), tok
        words = _WORD.findall(text.casefold())
        for i in range(len(words) - SHINGLE_WORDS + 1):
            run = words[i:i + SHINGLE_WORDS]
            yield "text", self._h(b"w", " ".join(run)), " ".join(run)

    def windows(self, folded: str, *, all_windows: bool = False) -> Iterator[tuple[bytes, str]]:
        """Keyed hashes of the WINDOW-character windows of ``folded`` (only mixed ones unless ``all_windows``: a
        lookup need not filter, only mixed windows were stored)."""
        for i in range(len(folded) - WINDOW + 1):
            w = folded[i:i + WINDOW]
            if all_windows or _mixed(w):
                yield self._h(b"g", w), w

    @property
    def has_kept(self) -> bool:
        return bool(self._kept)

    def mark_own(self, text: str) -> None:
        for _kind, h, _shown in self.features(text):
            if h not in self._seen and h not in self._kept:
                self._own[h] = None
                self._own.move_to_end(h)
                if len(self._own) > self._max // 4:
                    self._own.popitem(last=False)

    def keep(self, secret: str, origin: str, read: int = 0) -> None:
        """Remember ``secret`` (a local file's token, a secret-format string, trawl's own token) in the kept store."""
        for _kind, h, _shown in self.features(secret):
            self._put_kept(h, origin, read)
        for h, _w in self.windows(fold(secret)):
            self._put_kept(h, origin, read)

    def _put_kept(self, h: bytes, origin: str, read: int) -> None:
        entry = self._kept.get(h)
        if entry is None:
            self._kept[h] = _Entry({origin}, read, origin)
            if len(self._kept) > self._max_kept:
                self._kept.popitem(last=False)
        else:
            entry.sites.add(origin)
            self._kept.move_to_end(h)

    def add(self, text: str, origin: str, read: int = 0) -> None:
        text = text[:MAX_TEXT_CHARS]
        if origin == FILE_ORIGIN:
            for _kind, h, _shown in self.features(text):
                self._put_kept(h, origin, read)
            for m in _TOKEN.finditer(text):
                tok = m.group(0)
                if any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok):
                    for h, _w in self.windows(fold(tok)):
                        self._put_kept(h, origin, read)
        else:
            for _kind, h, _shown in self.features(text):
                if h in self._own:
                    continue
                self._put_page(h, origin, read)
        for _name, rx in SECRET_FORMATS:  # a key on any page is kept, whole and as windows
            for m in rx.finditer(text):
                self.keep(m.group(0), origin, read)

    def _put_page(self, h: bytes, origin: str, read: int) -> None:
        entry = self._seen.get(h)
        if entry is not None:
            entry.sites.add(origin)
            self._seen.move_to_end(h)
            return
        self._seen[h] = _Entry({origin}, read, origin)
        owner = self._owners.setdefault(origin, _Owner())
        owner.count += 1
        owner.order.append(h)
        if len(self._seen) <= self._max:
            return
        if owner.count > self._heavy:  # a heavy site pays for its own growth
            self._evict_own(origin, owner)
        else:
            _h, old = self._seen.popitem(last=False)
            self._forget(old.owner)
        if len(owner.order) > 2 * owner.count + 1024:  # drop stale hashes (evicted through the global LRU)
            owner.order = deque(x for x in owner.order if (e := self._seen.get(x)) is not None and e.owner == origin)

    def _evict_own(self, origin: str, owner: _Owner) -> None:
        while owner.order:
            old = owner.order.popleft()
            entry = self._seen.get(old)
            if entry is not None and entry.owner == origin:
                del self._seen[old]
                self._forget(origin)
                return

    def _forget(self, origin: str) -> None:
        owner = self._owners.get(origin)
        if owner is not None:
            owner.count -= 1
            if owner.count <= 0:
                del self._owners[origin]

    def lookup(self, text: str, skip_read: int | None = None) -> Iterator[tuple[str, str, set[str]]]:
        """Tainted features of ``text``; ``skip_read``: ignore what that read itself first brought in."""
        for kind, h, shown in self.features(text):
            for store in (self._kept, self._seen):
                entry = store.get(h)
                if entry is not None and entry.first_read != skip_read:
                    yield kind, shown, entry.sites
                    break

    def lookup_kept(self, text: str, skip_read: int | None = None) -> Iterator[tuple[str, str, set[str]]]:
        """Kept tokens inside ``text`` folded, and inside it reversed: windows of WINDOW characters."""
        folded = fold(text)
        for form in (folded, folded[::-1]):
            for h, shown in self.windows(form, all_windows=True):
                entry = self._kept.get(h)
                if entry is not None and entry.first_read != skip_read:
                    yield "token", shown, entry.sites

    def __len__(self) -> int:
        return len(self._seen) + len(self._kept)
