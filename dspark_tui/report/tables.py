"""Markdown tables and the seed's number formats (two decimals, percentages)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

MISSING = "—"


def num(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.{digits}f}"


def pct(ratio: float | None, digits: int = 2) -> str:
    """0.314 -> `31.40%`: the seed's margin format."""
    if ratio is None or math.isnan(ratio):
        return MISSING
    return f"{ratio * 100:.{digits}f}%"


def signed(ratio: float | None) -> str:
    """1.041 -> `+4.1%`, 0.97 -> `-3.0%`: a ratio as a signed change (the report's one form
    of a gain; the SLO section writes its minus as U+2212)."""
    return MISSING if ratio is None else f"{(ratio - 1.0) * 100:+.1f}%"


def tokens(length: int | None) -> str:
    """16384 -> `16K`, 512 -> `512`: how the seed names scenario lengths."""
    if length is None:
        return MISSING
    return f"{length // 1024}K" if length >= 1024 and length % 1024 == 0 else str(length)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1) -> list[str]:
    """The first `left` columns left-aligned, the rest right-aligned, as in the seed."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines
