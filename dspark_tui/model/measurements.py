"""A cell measured several times: one record per (round, repeat), and the schedule of rounds.

Kept apart from RunState so that the reducer reads as what a screen shows and this as the
bookkeeping under it. A measurement is identified by its cell, round and repeat, never by its
session: a retry or a resume that measures it again replaces it, and a run written before
rounds existed is one measurement per cell (round 1, repeat 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dspark_tui.model.cell import CellKey, CellResult
from dspark_tui.model.events import RoundPlanned

MeasurementPhase = Literal["running", "done", "failed", "skipped"]
Slot = tuple[int, int]  # (round, repeat) within one cell


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
class RoundSchedule:
    """What the runner's RoundPlanned and SessionStarted events say: the measurements planned
    for each cell, and which (arm, round) server sessions have begun.

    Plans only add: a resume that announces a round again, or an adaptive round for a few
    cells, can only raise what is planned, never forget a measurement already counted.
    """

    planned: dict[CellKey, set[Slot]] = field(default_factory=dict)
    begun: set[tuple[str, int]] = field(default_factory=set)
    rounds: dict[int, RoundPlanned] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        """False for runs of one round and for logs written before rounds existed."""
        return bool(self.planned)

    @property
    def total(self) -> int:
        return sum(len(slots) for slots in self.planned.values())

    def plan(self, event: RoundPlanned) -> list[CellKey]:
        """Adds the round's measurements; returns the cells it touches."""
        self.rounds[event.round] = event
        keys = []
        for arm in event.arms:
            for scenario, concurrency in event.cells:
                key = CellKey(arm=arm, scenario=scenario, concurrency=concurrency)
                slots = self.planned.setdefault(key, set())
                slots.update((event.round, repeat) for repeat in range(1, event.repeats + 1))
                keys.append(key)
        return keys

    def planned_for(self, key: CellKey) -> int:
        return len(self.planned.get(key, ()))

    def begin_session(self, arm: str, round_: int) -> None:
        self.begun.add((arm, round_))

    def sessions_ahead(self, open_slots: dict[CellKey, set[Slot]]) -> set[tuple[str, int]]:
        """(arm, round) sessions that still have planned measurements and have not begun.

        `open_slots`: per cell, the planned slots that have not ended yet.
        """
        ahead: set[tuple[str, int]] = set()
        for key, slots in open_slots.items():
            for round_, _ in slots:
                if (key.arm, round_) not in self.begun:
                    ahead.add((key.arm, round_))
        return ahead
