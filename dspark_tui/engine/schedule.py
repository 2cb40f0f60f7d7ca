"""What a run measures and how far it got: rounds of server sessions, each arm measuring the
round's cells `repeats` times, and the state of every measurement slot (cell, round, repeat).

The rounds and the slots they plan are model/planned.py's (the plan's rounds, then the adaptive
ones from the `RoundPlanned` events a runner wrote, so a resume keeps its decisions).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from dspark_tui.model import CellKey, CellSpec, Plan
from dspark_tui.model.events import Event
from dspark_tui.model.planned import (
    GridCell,
    PlannedMeasurements,
    RoundPlan,
    adaptive_round,
    arm_order,
    grid,
    planned_rounds,
    rounds_of,
)

Slot = tuple[CellKey, int, int]  # (cell, round, repeat): one measurement
__all__ = ["GridCell", "RoundPlan", "Schedule", "Slot", "SlotState", "adaptive_round", "arm_order",
           "grid", "planned_rounds", "rounds_from_events"]


class SlotState(StrEnum):
    PENDING = "pending"  # to be measured (never tried, queued again, or left unfinished)
    OK = "ok"
    FAILED = "failed"  # tried in this runner; retry() queues it again, a resume redoes it
    SKIPPED = "skipped"  # skipped by the user in this runner; retry() and a resume redo it


def rounds_from_events(plan: Plan, events: Iterable[Event]) -> list[RoundPlan]:
    """The plan's rounds, then the adaptive rounds an earlier runner of this run decided
    (model/planned.rounds_of, the one fold)."""
    return rounds_of(plan, events)


class Schedule:
    """Every measurement slot of the run and its state; the runner's one source of "what next"."""

    def __init__(self, plan: Plan, rounds: list[RoundPlan], done: set[Slot]) -> None:
        self.plan = plan
        self.rounds = list(rounds)
        self._specs = {spec.key: spec for spec in plan.cells()}
        self.planned = PlannedMeasurements()
        self.state: dict[Slot, SlotState] = {}
        for rnd in self.rounds:
            self._add(rnd)
        for slot in done & self.state.keys():
            self.state[slot] = SlotState.OK

    def _add(self, rnd: RoundPlan) -> None:
        for key, (round_, repeat) in self.planned.add(rnd):
            self.state[(key, round_, repeat)] = SlotState.PENDING

    def add_round(self, rnd: RoundPlan) -> None:
        self.rounds.append(rnd)
        self._add(rnd)

    @property
    def extra_rounds(self) -> int:
        return sum(1 for rnd in self.rounds if rnd.reason == "adaptive")

    # -- what next -----------------------------------------------------------------------

    def todo(self, round: int, arm: str) -> list[tuple[CellSpec, int]]:
        """(cell, repeat) still pending in this round for this arm, in pass order."""
        rnd = self.rounds[round - 1]
        return [
            (self._specs[CellKey(arm=arm, scenario=s, concurrency=c)], repeat)
            for repeat in range(1, rnd.repeats + 1)
            for s, c in rnd.cells_of(arm)
            if self.state[(CellKey(arm=arm, scenario=s, concurrency=c), round, repeat)]
            == SlotState.PENDING
        ]

    def next_session(self) -> tuple[RoundPlan, str] | None:
        """The first (round, arm) with a pending measurement, in running order."""
        for rnd in self.rounds:
            for arm in rnd.arms:
                if self.todo(rnd.round, arm):
                    return rnd, arm
        return None

    # -- bookkeeping ---------------------------------------------------------------------

    def mark(self, slot: Slot, state: SlotState) -> None:
        self.state[slot] = state

    def retry(self) -> tuple[int, int]:
        """Failed and user-skipped slots back to pending; how many of each."""
        again = {SlotState.FAILED: 0, SlotState.SKIPPED: 0}
        for slot, st in self.state.items():
            if st in again:
                again[st] += 1
                self.state[slot] = SlotState.PENDING
        return again[SlotState.FAILED], again[SlotState.SKIPPED]

    def index(self, slot: Slot) -> int:
        return list(self.state).index(slot) + 1

    @property
    def total(self) -> int:
        return len(self.state)

    def count(self, state: SlotState) -> int:
        return sum(1 for st in self.state.values() if st == state)

    def cell_states(self) -> dict[CellKey, SlotState]:
        """Per cell the worst state of its slots: ok only when every planned measurement is ok."""
        worst = [SlotState.FAILED, SlotState.SKIPPED, SlotState.PENDING, SlotState.OK]
        cells: dict[CellKey, SlotState] = {}
        for (key, _, _), st in self.state.items():
            now = cells.get(key, SlotState.OK)
            cells[key] = min(now, st, key=worst.index)
        return cells


@dataclass(frozen=True)
class PlanCost:
    """What a plan costs in measurements (cell runs) and server starts: as planned, and at most
    when every adaptive round is spent on every cell (restarts after a crash not counted)."""

    measurements: int
    measurements_at_most: int
    server_starts: int
    server_starts_at_most: int


def plan_cost(plan: Plan) -> PlanCost:
    bench = plan.bench
    per_round = len(plan.cells()) * bench.repeats  # every arm, each cell it plans, every repeat
    most = bench.rounds + bench.adaptive_rounds
    started = len(plan.local_arms())  # an arm with a url is never started by this tool
    planned = PlannedMeasurements.of_rounds(planned_rounds(plan)).total
    return PlanCost(planned, per_round * most, started * bench.rounds, started * most)
