"""Where a cluster launcher puts a server: on one node, or anywhere but some nodes.

Rounds run in parallel (`[bench] parallel`) each keep one node for all their arms, so node
differences cancel in the paired comparison: a round's later arms follow its first arm's node
(`node`), and a round's first arm avoids the nodes other rounds in flight hold (`avoid`).
Here, not in launchers/, because server.py takes it and launchers/ imports server.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    node: str | None = None  # run on exactly this node (None: wherever the cluster puts it)
    avoid: tuple[str, ...] = ()  # never on these nodes
