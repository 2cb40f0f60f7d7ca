"""A cell measured several times: one record per (round, repeat), the cell they make up, the
running counts over them, and the schedule of rounds.

Kept apart from RunState so that the reducer reads as what a screen shows and this as the
bookkeeping under it. A measurement is identified by its cell, round and repeat, never by its
session: a retry or a resume that measures it again replaces it, and a run written before
rounds existed is one measurement per cell (round 1, repeat 1).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from dspark_tui.model.cell import CellKey, CellResult
from dspark_tui.model.events import RoundPlanned
from dspark_tui.model.planned import PlannedMeasurements, RoundPlan

MeasurementPhase = Literal["running", "done", "failed", "skipped"]
CellPhase = Literal["pending", "running", "done", "failed", "skipped"]
Slot = tuple[int, int]  # (round, repeat) within one cell (model/planned.Slot)


def slot_label(round_: int, repeat: int) -> str:
    """`r2 p1`: round 2, first pass (repeat) of that session."""
    return f"r{round_} p{repeat}"


@dataclass
class Measurement:
    """One run of a cell; `seq` orders records by their last change, so a cell knows its latest."""

    key: CellKey
    round: int = 1
    repeat: int = 1
    phase: MeasurementPhase = "running"
    reason: str = ""
    result: CellResult | None = None
    started_t: float | None = None
    finished_t: float | None = None
    seq: int = 0

    @property
    def slot(self) -> Slot:
        return (self.round, self.repeat)

    @property
    def label(self) -> str:
        return slot_label(self.round, self.repeat)

    @property
    def ended(self) -> bool:
        return self.phase != "running"

    @property
    def wall_s(self) -> float | None:
        """Seconds from start to end, for the ETA; None when it never started or has not ended."""
        if self.started_t is None or self.finished_t is None or not self.ended:
            return None
        return max(0.0, self.finished_t - self.started_t)


@dataclass
class CellState:
    """A cell and its measurements. `phase` is its latest measurement's, except that a cell is
    `done` only when every measurement planned for it is ok (until then an ok one leaves it
    `pending`). Everything but `measurements` and `planned` is derived by `refresh`."""

    key: CellKey
    phase: CellPhase = "pending"
    total_tok_s: float | None = None  # mean over its ok measurements
    reason: str = ""
    result: CellResult | None = None  # its latest ok measurement, else its latest one
    started_t: float | None = None
    finished_t: float | None = None
    planned: int = 1
    measurements: dict[Slot, Measurement] = field(default_factory=dict)
    # Every ok measurement, by round and repeat: what the verdicts are computed from.
    ok_results: list[CellResult] = field(default_factory=list)

    def _count(self, phase: MeasurementPhase) -> int:
        return sum(1 for m in self.measurements.values() if m.phase == phase)

    @property
    def ok_count(self) -> int:
        return len(self.ok_results)

    @property
    def failed_count(self) -> int:
        return self._count("failed")

    @property
    def ok_of_planned(self) -> str:
        """`2/4`: ok measurements of those planned."""
        return f"{self.ok_count}/{self.planned}"

    @property
    def failed_measurements(self) -> list[Measurement]:
        return [m for _, m in sorted(self.measurements.items()) if m.phase == "failed"]

    def refresh(self) -> None:
        """Derive the cell's view from its measurements after any of them changed."""
        latest = unhappy = None
        ok: list[CellResult] = []
        for _, m in sorted(self.measurements.items()):
            if latest is None or m.seq > latest.seq:
                latest = m
            if m.phase == "done" and m.result is not None:
                ok.append(m.result)
            elif m.phase in ("failed", "skipped") and (unhappy is None or m.seq > unhappy.seq):
                unhappy = m
        self.ok_results = ok
        self.result = ok[-1] if ok else (latest.result if latest is not None else None)
        throughputs = [r.total_throughput for r in ok if r.total_throughput is not None]
        if throughputs:
            self.total_tok_s = sum(throughputs) / len(throughputs)
        else:
            self.total_tok_s = self.result.total_throughput if self.result is not None else None
        if latest is None:
            self.phase, self.reason = "pending", ""
            self.started_t = self.finished_t = None
            return
        self.started_t, self.finished_t = latest.started_t, latest.finished_t
        if latest.phase == "done":
            self.phase = "done" if len(ok) >= self.planned else "pending"
        else:
            self.phase = latest.phase
        self.reason = unhappy.reason if unhappy is not None and latest.phase != "running" else ""


@dataclass
class Tally:
    """Running counts over every measurement record, adjusted as records come and go, so that
    views read counts and the ETA's pace in constant time however long the run."""

    phases: Counter[MeasurementPhase] = field(default_factory=Counter)
    records: int = 0
    wall_s_sum: float = 0.0
    wall_s_count: int = 0
    repeated: bool = False  # a slot other than r1 p1 was seen
    # Wall seconds per (scenario, concurrency), over every arm: a cell's pace learnt from the
    # measurements of its own workload (c=128 takes longer than c=1), for the ETA.
    pace: dict[tuple[str, int], list[float]] = field(default_factory=dict)

    def add(self, measurement: Measurement, sign: int = 1) -> None:
        """Count a record in (sign 1) or out (sign -1)."""
        self.phases[measurement.phase] += sign
        self.records += sign
        wall_s = measurement.wall_s
        if wall_s is not None:
            self.wall_s_sum += sign * wall_s
            self.wall_s_count += sign
            key = measurement.key
            seen = self.pace.setdefault((key.scenario, key.concurrency), [0.0, 0.0])
            seen[0] += sign * wall_s
            seen[1] += sign
        if measurement.slot != (1, 1):
            self.repeated = True

    @property
    def mean_wall_s(self) -> float | None:
        return self.wall_s_sum / self.wall_s_count if self.wall_s_count > 0 else None

    def wall_s_of(self, key: CellKey) -> float | None:
        """The mean wall time of this cell's workload so far, else of every measurement."""
        total, count = self.pace.get((key.scenario, key.concurrency), (0.0, 0.0))
        return total / count if count > 0 else self.mean_wall_s


@dataclass
class RoundSchedule:
    """What the runner's RoundPlanned and SessionStarted events say: the measurements planned
    for each cell (model/planned.py's fold, of the events alone: the runner announces its
    planned rounds too), and which (arm, round) server sessions have begun.

    Plans only add: a resume that announces a round again, or an adaptive round for a few
    cells, can only raise what is planned, never forget a measurement already counted.
    `open` counts, per (arm, round), the planned measurements that have not ended: a session
    with open ones and not yet begun is a server start still ahead.
    """

    planned: PlannedMeasurements = field(default_factory=PlannedMeasurements)
    begun: set[tuple[str, int]] = field(default_factory=set)
    open: Counter[tuple[str, int]] = field(default_factory=Counter)

    @property
    def known(self) -> bool:
        """False for runs of one round and for logs written before rounds existed."""
        return bool(self.planned.slots)

    @property
    def total(self) -> int:
        return self.planned.total

    def plan(self, event: RoundPlanned) -> list[tuple[CellKey, Slot]]:
        """Adds the round's measurements; returns those that were not planned before, which the
        caller counts as open unless they already ended."""
        return self.planned.add(RoundPlan.of_event(event))

    def planned_for(self, key: CellKey) -> int:
        return self.planned.count(key)

    def settle(self, key: CellKey, slot: Slot, sign: int = 1) -> None:
        """A planned measurement ended (sign 1) or is open again (sign -1: a retry runs it)."""
        if self.planned.has(key, slot):
            self.open[(key.arm, slot[0])] -= sign

    def begin_session(self, arm: str, round_: int) -> None:
        self.begun.add((arm, round_))

    def sessions_ahead(self) -> set[tuple[str, int]]:
        """(arm, round) sessions that still have open measurements and have not begun."""
        return {pair for pair, count in self.open.items() if count > 0 and pair not in self.begun}
