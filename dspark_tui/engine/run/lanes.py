"""Rounds in parallel (`bench.parallel`, docs/launchers.md): up to N lanes, each running one
round at a time on one cluster node — every arm of that round in turn, in the round's
alternating order — so both sides of every paired comparison ran on the same node.

A lane claims the next round with something pending; the first server of the round lands where
the cluster puts it (away from the nodes the other lanes hold, known as soon as a server is
located), and the round's later sessions (its other arms, a restart) are placed on that node. A
round that a node served before (a resume, a retry) goes back to that node; a start that fails
there moves the round off it, once. With one lane this is the sequential run: rounds in order,
arms in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dspark_tui.engine.schedule import RoundPlan, Schedule
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.model import CellResult
from dspark_tui.model import events as ev

Emit = Callable[[ev.Event], None]


@dataclass
class Lane:
    number: int  # 1 … parallel
    node: str | None = None  # that round's node, once its first server was placed
    # The node its starting server was located on, before it is ready (other lanes keep off).
    locating: Callable[[], str | None] | None = None
    last_parity: int | None = None  # of its last round: the next one has the other arm order
    moved: bool = False  # its round's node failed a start and the round left it

    @property
    def holds(self) -> str | None:
        """The node this lane's round occupies now, as soon as any of its servers was placed."""
        return self.node or (self.locating() if self.locating is not None else None)


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
        """A round no lane took yet that has a pending measurement, for `lane`: one whose arm
        order differs from the lane's last round first (so a node that keeps its lane serves
        both orders, A B and B A, and an order effect does not become a node effect), and never
        one whose recorded node another lane holds now (it is left for later, not placed on
        a node that is both asked for and avoided)."""
        held = {other.holds for other in self.lanes if other is not lane} - {None}
        open_rounds = [rnd for rnd in schedule.rounds
                       if rnd.round not in self._claimed and self.known.get(rnd.round) not in held
                       and any(schedule.todo(rnd.round, arm) for arm in rnd.arms)]
        if not open_rounds:
            return None
        rnd = open_rounds[0]
        if self.parallel:  # one lane runs the rounds in order, as a sequential run always did
            rnd = next((r for r in open_rounds if r.round % 2 != lane.last_parity), rnd)
        self._claimed.add(rnd.round)
        lane.node, lane.moved = self.known.get(rnd.round), False
        lane.last_parity = rnd.round % 2
        return rnd

    def release(self, lane: Lane) -> None:
        lane.node, lane.locating = None, None

    def tag(self, lane: Lane) -> int | None:
        """The lane number events carry: only when rounds run at once (else, as before, none)."""
        return lane.number if self.parallel else None

    def placement(self, lane: Lane) -> Placement:
        """Where the lane's next session goes: its round's node once known (nothing to avoid
        then), else anywhere but the nodes the other lanes hold."""
        if lane.node is not None:
            return Placement(node=lane.node)
        held = tuple(dict.fromkeys(node for other in self.lanes if other is not lane
                                   if (node := other.holds) is not None))
        return Placement(avoid=held)

    def placed(self, lane: Lane, node: str | None) -> None:
        """The lane's session runs on `node` (None: this machine, or a launcher that cannot tell)."""
        if lane.node is None and node is not None:
            lane.node = node

    def move_off(self, lane: Lane) -> bool:
        """A server did not start on the lane's pinned node (drained, taken, gone): the round
        goes on wherever the cluster puts it — its cells measured before and after are then
        not paired, and the analysis counts them — once a round. False: nothing to move."""
        if lane.node is None or lane.moved:
            return False
        lane.node, lane.moved = None, True
        return True


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
