"""Which extension may attach: the pinned id and the exact Origins the link accepts.

Chrome derives an extension's id from the ``"key"`` in its manifest: the first
32 hex digits of SHA-256 over the DER public key, with 0-f written as a-p.
``extension/manifest.json`` pins that key, so the id below is fixed; the
contract test recomputes it from the manifest. A store-published build has
another id: add it with ``TRAWL_EXTENSION_IDS``.
"""

from __future__ import annotations

import base64
import hashlib
import re

from ..settings import Settings

PINNED_EXTENSION_ID = "hmchmcajpkipnemkpipjopiojnkocjgp"

_ID_RE = re.compile(r"^[a-p]{32}$")


def extension_id_from_key(key_b64: str) -> str:
    """The extension id Chrome derives from a manifest ``key`` (base64 DER public key)."""
    digest = hashlib.sha256(base64.b64decode(key_b64)).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def allowed_ids(settings: Settings) -> tuple[str, ...]:
    extra = tuple(i.strip().lower() for i in settings.extension_ids if _ID_RE.match(i.strip().lower()))
    return (PINNED_EXTENSION_ID, *(i for i in extra if i != PINNED_EXTENSION_ID))


def allowed_origins(settings: Settings) -> frozenset[str]:
    """Origins compared for exact equality (never as prefixes)."""
    return frozenset(f"chrome-extension://{i}" for i in allowed_ids(settings))
