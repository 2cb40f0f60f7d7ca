"""Rounds in parallel (`bench.parallel`, docs/launchers.md): up to N lanes, each running one
round at a time on one cluster node — every arm of that round in turn, in the round's
alternating order — so both sides of every paired comparison ran on the same node.

A lane claims the next round with something pending; the first server of the round lands where
the cluster puts it (away from the nodes the other lanes hold), and the round's later sessions
(its other arms, a restart) are placed on that node. A round that a node served before (a
resume, a retry) goes back to that node. With one lane this is the sequential run:
rounds in order, arms in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dspark_tui.engine.placement import Placement
from dspark_tui.engine.schedule import RoundPlan, Schedule
from dspark_tui.model import CellResult
from dspark_tui.model import events as ev

Emit = Callable[[ev.Event], None]


@dataclass
class Lane:
    number: int  # 1 … parallel
    round: int | None = None  # the round it runs now
    node: str | None = None  # that round's node, once its first server was placed


@dataclass
class Lanes:
    count: int
    # Rounds a node already served (saved measurements: a resumed or retried round goes back
    # there, so the cells measured before and after are still paired on one node).
    known: dict[int, str] = field(default_factory=dict)
    lanes: list[Lane] = field(default_factory=list)
    _claimed: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.lanes = [Lane(number) for number in range(1, self.count + 1)]

    @property
    def parallel(self) -> bool:
        return self.count > 1

    def claim(self, lane: Lane, schedule: Schedule) -> RoundPlan | None:
        """The first round no lane took yet that has a pending measurement, for `lane`."""
        for rnd in schedule.rounds:
            if rnd.round in self._claimed:
                continue
            if any(schedule.todo(rnd.round, arm) for arm in rnd.arms):
                self._claimed.add(rnd.round)
                lane.round, lane.node = rnd.round, self.known.get(rnd.round)
                return rnd
        return None

    def release(self, lane: Lane) -> None:
        lane.round, lane.node = None, None

    def placement(self, lane: Lane) -> Placement:
        """Where the lane's next session goes: its round's node once known, never another
        lane's."""
        held = tuple(other.node for other in self.lanes
                     if other is not lane and other.node is not None)
        return Placement(node=lane.node, avoid=held)

    def placed(self, lane: Lane, node: str | None) -> None:
        """The lane's session runs on `node` (None: this machine, or a launcher that cannot tell)."""
        if lane.node is None and node is not None:
            lane.node = node


def round_nodes(measurements: Iterable[CellResult]) -> dict[int, str]:
    """The node each round's saved measurements ran on (the first one found a round)."""
    nodes: dict[int, str] = {}
    for m in measurements:
        if m.node:
            nodes.setdefault(m.round, m.node)
    return nodes


def lane_emit(emit: Emit, lane: int | None, round_: int) -> Emit:
    """`emit`, marking each session event with its lane (ev.OnLane) and a server's state with
    its round, so watchers see a lane move on to its next round; `emit` itself without a lane."""
    if lane is None:
        return emit

    def on_lane(event: ev.Event) -> None:
        if isinstance(event, ev.OnLane) and event.lane is None:
            event.lane = lane
        if isinstance(event, ev.ServerStateChanged) and event.round is None:
            event.round = round_
        emit(event)
    return on_lane
