"""Where in a TOML file a pydantic error location points.

tomllib keeps no positions, so the text is searched: each step of the location narrows the
search to its table (`[server]`, the n-th `[[scenarios]]`) and the last step finds its
`key =` line, inline (`vars = { spec_tokens = 3 }`) or not. Best effort: when the key itself is
not written (a missing key), the line of the innermost table found stands for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _Step:
    """One key of the location, with the index that follows it for an array of tables."""

    key: str
    index: int | None = None


@dataclass(frozen=True)
class _Block:
    """Lines [start, end) holding one table's keys; `path` is its dotted name."""

    start: int
    end: int
    path: tuple[str, ...] = ()

    @property
    def header_line(self) -> int | None:
        return self.start + 1 if self.path else None


def line_of(text: str, loc: Sequence[Any]) -> int | None:
    """The 1-based line that `loc` (pydantic's error location) points to in `text`, if found."""
    lines = text.splitlines()
    block = _Block(0, len(lines))
    steps = _steps(loc)
    for number, step in enumerate(steps, start=1):
        is_last = number == len(steps)
        headers = _headers(lines, block, step.key, array=step.index is not None)
        if step.index is not None and step.index < len(headers):
            block = _array_entry(lines, block, headers, step)
            continue
        if step.index is None and headers and not is_last:
            block = _Block(headers[0], _next_table(lines, headers[0] + 1, len(lines)),
                           (*block.path, step.key))
            continue
        line = _key_line(lines, block, step.key)
        if line is not None:
            return line
        if step.index is None and headers:
            return headers[0] + 1
        return block.header_line
    return block.header_line


def _steps(loc: Sequence[Any]) -> list[_Step]:
    steps: list[_Step] = []
    for part in loc:
        if isinstance(part, str):
            steps.append(_Step(part))
        elif isinstance(part, int) and steps and steps[-1].index is None:
            steps[-1] = _Step(steps[-1].key, part)
    return steps


def _headers(lines: list[str], block: _Block, key: str, *, array: bool) -> list[int]:
    """Indexes of the `[path.key]` (or `[[path.key]]`) header lines inside `block`."""
    name = re.escape(".".join((*block.path, key)))
    pattern = re.compile(r"^\s*\[\[\s*" + name + r"\s*\]\]" if array else r"^\s*\[\s*" + name + r"\s*\]")
    # A sub-table (`[server.slurm]`) starts where its parent's block ends: look past it.
    span = range(block.start, block.end) if array else range(len(lines))
    return [n for n in span if pattern.match(lines[n])]


def _array_entry(lines: list[str], block: _Block, headers: list[int], step: _Step) -> _Block:
    assert step.index is not None
    start = headers[step.index]
    following = step.index + 1
    end = headers[following] if following < len(headers) else _next_table(lines, start + 1, block.end)
    return _Block(start, end, (*block.path, step.key))


def _key_line(lines: list[str], block: _Block, key: str) -> int | None:
    """The line of `key = ...` among the block's own keys, or inside an inline table there."""
    pattern = re.compile(r"^\s*" + re.escape(key) + r"\s*=|[{,]\s*" + re.escape(key) + r"\s*=")
    for n in range(block.start, block.end):
        if _is_header(lines[n]):
            if n == block.start:
                continue
            break
        if pattern.search(lines[n]):
            return n + 1
    return None


def _next_table(lines: list[str], start: int, end: int) -> int:
    return next((n for n in range(start, end) if _is_header(lines[n])), end)


def _is_header(line: str) -> bool:
    return line.lstrip().startswith("[")
