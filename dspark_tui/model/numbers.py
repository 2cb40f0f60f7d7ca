"""Numbers read from a file (a plan, config.toml, a cell, run.json) are held to a range every
layer can compute with: an integer of 10**400 is valid JSON and TOML, but a float conversion of it
raises OverflowError far from where it was read. Such a value is refused where it is read, as
one line naming its key, like any other bad value; and so is nesting deeper than any file of
this tool has (5,000 `[` make the parsers recurse until Python gives up)."""

from __future__ import annotations

import json
import math
from typing import Any

# Every count, length, time and rate this tool handles is far below this; integers up to it are
# exact as floats, so no sum or mean of them overflows or rounds a count.
LIMIT = 2**53
OUT_OF_RANGE = "out of range (beyond ±2^53)"
# Deeper than any plan, config or record of this tool (a plan nests 4 levels).
MAX_DEPTH = 64


def out_of_range(value: object) -> bool:
    """An int beyond ±LIMIT or a float that is not finite (bools are fine)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > LIMIT
    if isinstance(value, float):
        return not math.isfinite(value) or abs(value) > LIMIT
    return False


def check_scalars(value: Any) -> Any:
    """For a `mode="before"` field validator: the value itself, or the numbers of a list (a table
    is a model whose fields check their own)."""
    items = value if isinstance(value, list) else (value,)
    for item in items:
        if out_of_range(item):
            raise ValueError(f"{OUT_OF_RANGE}, got {_shown(item)}")
    return value


def too_deep(data: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and tables nest deeper than `limit` (iteratively: no recursion to exhaust)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _bounded_int(text: str) -> int:
    # LIMIT has 16 digits: a longer one is out of range without converting it (a 5,000-digit
    # one would meet int()'s own limit first)
    value = int(text) if len(text.lstrip("-")) <= 16 else LIMIT + 1
    if abs(value) > LIMIT:
        raise ValueError(f"a number {OUT_OF_RANGE}: {_cut(text)}")
    return value


def _bounded_float(text: str) -> float:
    value = float(text)
    if out_of_range(value):
        raise ValueError(f"a number {OUT_OF_RANGE}: {_cut(text)}")
    return value


def loads(raw: bytes | str) -> Any:
    """json.loads with every number in range and nesting bounded: a ValueError otherwise (never
    OverflowError, RecursionError or a 4,300-digit limit's own message)."""
    try:
        data = json.loads(raw, parse_int=_bounded_int, parse_float=_bounded_float)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if too_deep(data):
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return data


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:20] + "…"


def _cut(text: str) -> str:
    return text if len(text) <= 24 else text[:20] + "…"
