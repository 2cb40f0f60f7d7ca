"""Numbers as the screens print them: short, aligned, and '—' for what was not measured."""

from __future__ import annotations

MISSING = "—"


def number(value: float | None, digits: int = 2) -> str:
    return MISSING if value is None else f"{value:,.{digits}f}"


def percent(value: float | None) -> str:
    return MISSING if value is None else f"{value * 100:.2f}%"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return MISSING
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`1 cell`, `2 cells`: never "1 cells"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
