"""What the user reads for trawl's modes: one declaration, ``extension/labels.json``, read here (the status page,
``trawl status``, refusals) and by the extension's popup and options page (``labels.js``), so the words for the
site policy's modes and for a paused trawl are the same wherever they show."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

# The extension ships inside the package (trawl/extension -> ../../extension in the repository, package data in
# the wheel).
LABELS_PATH = Path(__file__).with_name("extension") / "labels.json"


@functools.cache
def labels() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(LABELS_PATH.read_text(encoding="utf-8"))
    return data


def policy_mode(mode: str) -> str:
    """The site policy mode's label ("Every site except the deny list", ...); an unknown mode by its name."""
    return str(labels()["policy_mode"].get(mode, mode))


def paused() -> str:
    """What a paused trawl means, as the popup says it."""
    return str(labels()["pause"]["state"])
