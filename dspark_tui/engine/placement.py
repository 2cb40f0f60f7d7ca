"""Where a launcher puts a server (`bench.parallel`, engine/lanes.py): on one node, away from
others; the local launcher ignores it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    node: str | None = None  # run on exactly this node (None: wherever the cluster puts it)
    avoid: tuple[str, ...] = ()  # never on these nodes
