"""JSON from a peer (an HTTP body, a WebSocket frame), parsed with a bound on nesting.

``json.loads`` recurses once per level: a few hundred kilobytes of ``[[[[...`` raise RecursionError, which is
not a ValueError, so a handler that catches malformed JSON answered HTTP 500 (or dropped the frame handler).
:func:`loads` turns that, and any value nested deeper than :data:`MAX_DEPTH` (no trawl message comes near it),
into a ValueError the caller already answers as a typed ``invalid_request``.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


def loads(raw: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads``, raising ValueError (never RecursionError) for input nested deeper than ``max_depth``."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"JSON nested more than {max_depth} levels deep") from None
    if depth(value) > max_depth:
        raise ValueError(f"JSON nested more than {max_depth} levels deep")
    return value


def depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed value (0 for a scalar), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        stack.extend((child, level) for child in children if isinstance(child, dict | list))
    return deepest
