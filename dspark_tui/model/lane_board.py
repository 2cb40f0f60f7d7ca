"""The measurements in flight and, for rounds in parallel (`bench.parallel`), what each lane is
doing: its node, round, arm, server state and cell. Part of the one reducer (run_state.py).

Events of a session carry their lane (ev.OnLane.lane; None when rounds run one at a time), so
two sessions of the same arm on two nodes stay apart here; a sequential run has one slot, None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dspark_tui.model import events as ev
from dspark_tui.model.cell import CellKey
from dspark_tui.model.measurements import slot_label


@dataclass
class CurrentCell:
    """A running measurement: which one (its CellStarted) and its live client numbers: the
    latest CellProgress, each optional number the last one reported (a progress event without
    it keeps the older)."""

    key: CellKey
    num_prompts: int
    index: int
    total: int
    started_t: float
    numbers: ev.CellProgress
    round: int = 1
    repeat: int = 1

    @property
    def completed(self) -> int:
        return self.numbers.completed

    @property
    def fraction(self) -> float:
        return self.completed / self.num_prompts if self.num_prompts else 0.0

    @property
    def label(self) -> str:
        """`r2 p1`: which measurement of the cell this is."""
        return slot_label(self.round, self.repeat)


# CellProgress's numbers that may be missing from one event (None): the last one known stays.
_KEPT = tuple(name for name, spec in ev.CellProgress.model_fields.items()
              if spec.default is None and name not in ev.OnLane.model_fields)


@dataclass
class LaneState:
    """One lane of a parallel run, as its latest events say."""

    number: int
    arm: str = ""
    round: int | None = None
    node: str | None = None
    session: str | None = None
    server_state: str = "pending"
    message: str = ""

    def where(self) -> str:
        """`lane 2 · node07 · r2`: the lane, its round's node once known, the round."""
        parts = [f"lane {self.number}"]
        parts += [self.node] if self.node else []
        parts += [f"r{self.round}"] if self.round is not None else []
        return " · ".join(parts)

    def describe(self) -> str:
        """`lane 2 · node07 · r2 · st=5`: where the lane is and which arm it serves."""
        return f"{self.where()} · {self.arm}" if self.arm else self.where()


@dataclass
class LaneBoard:
    cells: dict[int | None, CurrentCell] = field(default_factory=dict)  # in flight, by lane
    lanes: dict[int, LaneState] = field(default_factory=dict)

    def apply(self, event: ev.Event) -> None:
        lane = event.lane if isinstance(event, ev.OnLane) else None
        if isinstance(event, ev.CellStarted):
            self.cells[lane] = CurrentCell(
                key=event.key, num_prompts=event.num_prompts, index=event.index, total=event.total,
                started_t=event.t, round=event.round, repeat=event.repeat,
                numbers=ev.CellProgress(key=event.key, completed=0, total=event.num_prompts,
                                        t=event.t, lane=lane))
        elif isinstance(event, ev.CellProgress):
            self._progress(self.cells.get(lane), event)
        if lane is None:
            return
        state = self.lanes.setdefault(lane, LaneState(lane))
        if isinstance(event, ev.SessionStarted):
            state.arm, state.round, state.session = event.arm, event.round, event.session
            state.node = event.node or state.node
        elif isinstance(event, ev.ServerStateChanged):
            if event.round is not None and event.round != state.round:  # on to its next round
                state.round, state.node = event.round, None
            if state.arm != event.arm:  # the round's next arm, on the round's node
                state.arm, state.session = event.arm, None
            state.server_state, state.message = event.state, event.message

    @staticmethod
    def _progress(cell: CurrentCell | None, event: ev.CellProgress) -> None:
        if cell is None or cell.key != event.key:
            return
        cell.num_prompts = event.total or cell.num_prompts
        cell.numbers = event.model_copy(update={name: getattr(cell.numbers, name) for name in _KEPT
                                                if getattr(event, name) is None})

    def ended(self, key: CellKey, round_: int, repeat: int) -> None:
        for lane, cell in list(self.cells.items()):
            if (cell.key, cell.round, cell.repeat) == (key, round_, repeat):
                del self.cells[lane]

    def clear(self) -> None:
        """The runner stopped: nothing it ran is in flight any more."""
        self.cells.clear()
        for state in self.lanes.values():
            state.server_state, state.message = "stopped", ""

    @property
    def latest(self) -> CurrentCell | None:
        """The measurement in flight that started last (the one a single panel shows)."""
        return self.cells[self._latest_lane()] if self.cells else None

    def _latest_lane(self) -> int | None:
        return max(self.cells, key=lambda lane: self.cells[lane].started_t)

    def shown(self, event: ev.Event) -> bool:
        """Whether a session event belongs to the lane whose cell the panel shows (the latest
        started): its sparklines follow one server, not two nodes' in turn."""
        lane = event.lane if isinstance(event, ev.OnLane) else None
        return lane is None or not self.cells or lane == self._latest_lane()

    def cell_of(self, lane: int) -> CurrentCell | None:
        return self.cells.get(lane)


def without_superseded(events: list[ev.Event]) -> list[ev.Event]:
    """The events of a catch-up (a replay, an attach, a screen opened on a long run) less those
    whose whole effect a later event replaces: a progress event before the last CellStarted of
    its lane (which replaces that lane's live numbers) and a /metrics sample before the last
    CellStarted of any lane (which clears every sparkline). Folding the rest gives the same
    state; a run of days is mostly such lines (about 3 a second of measurement)."""
    last_start: dict[int | None, int] = {}
    for index, event in enumerate(events):
        if isinstance(event, ev.CellStarted):
            last_start[event.lane] = index
    last_any = max(last_start.values(), default=-1)
    return [event for index, event in enumerate(events)
            if not (isinstance(event, ev.MetricsSample) and index < last_any)
            and not (isinstance(event, ev.CellProgress)
                     and index < last_start.get(event.lane, -1))]


_KIND = re.compile(rb'"kind":"(cell_started|cell_progress|metrics_sample)"')
_LANE = re.compile(rb'"lane":(\d+)')


def superseded_lines_dropped(lines: list[bytes]) -> list[bytes]:
    """without_superseded on events.jsonl's lines before they are parsed (parsing is most of a
    catch-up's cost): the kind and lane read from the compact JSON the runner writes. A line
    not recognised is kept, so a line is only ever dropped when the parsed rule drops it."""
    marks: list[tuple[bytes, int | None] | None] = []
    last_start: dict[int | None, int] = {}
    for index, line in enumerate(lines):
        kind = _KIND.search(line)
        if kind is None:
            marks.append(None)
            continue
        lane_match = _LANE.search(line)
        lane = int(lane_match.group(1)) if lane_match else None
        marks.append((kind.group(1), lane))
        if kind.group(1) == b"cell_started":
            last_start[lane] = index
    last_any = max(last_start.values(), default=-1)
    kept = []
    for index, (line, mark) in enumerate(zip(lines, marks, strict=True)):
        if mark is not None and ((mark[0] == b"metrics_sample" and index < last_any) or (
                mark[0] == b"cell_progress" and index < last_start.get(mark[1], -1))):
            continue
        kept.append(line)
    return kept
