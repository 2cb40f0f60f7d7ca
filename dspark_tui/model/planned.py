"""Planned measurements per cell: the one fold of the plan and the RoundPlanned events.

A run plans rounds (model/events.RoundPlanned): the plan's own `bench.rounds`, each arm
measuring every cell `repeats` times in one server session, then the adaptive rounds its runner
announced for the cells still unsure. `rounds_of(plan, events)` is that list of rounds, and
`PlannedMeasurements` folds rounds into the (round, repeat) slots planned for each cell.
Everything that counts planned measurements asks these: the runner's schedule
(engine/schedule.py), a watcher's RunState (model/measurements.RoundSchedule, from the events
alone, since the runner announces its planned rounds too), the report's cell counts
(analysis/counting.py) and the disk budget (engine/checks/disk_budget.py).

Round r runs the arms in plan order when r is odd and reversed when it is even (A B | B A | A B),
so a linear drift cancels instead of landing on one arm.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from dspark_tui.model.cell import CellKey
from dspark_tui.model.events import Event, RoundPlanned
from dspark_tui.model.plan import Plan

GridCell = tuple[str, int]  # (scenario, concurrency)
Slot = tuple[int, int]  # (round, repeat) within one cell
RoundReason = Literal["planned", "adaptive"]


@dataclass(frozen=True)
class RoundPlan:
    round: int
    arms: tuple[str, ...]
    cells: tuple[GridCell, ...]
    reason: str = "planned"
    repeats: int = 1
    # Arms that measure only some of the round's cells (the plan's `cells` key): arm -> those.
    arm_cells: Mapping[str, tuple[GridCell, ...]] = field(default_factory=dict)

    def event(self) -> RoundPlanned:
        return RoundPlanned(round=self.round, arms=list(self.arms), cells=list(self.cells),
                            reason=self.reason, repeats=self.repeats,  # type: ignore[arg-type]
                            arm_cells={arm: list(cells) for arm, cells in self.arm_cells.items()})

    @classmethod
    def of_event(cls, event: RoundPlanned) -> RoundPlan:
        return cls(event.round, tuple(event.arms), tuple((s, c) for s, c in event.cells),
                   event.reason, event.repeats,
                   {arm: tuple((s, c) for s, c in cells) for arm, cells in event.arm_cells.items()})

    def cells_of(self, arm: str) -> tuple[GridCell, ...]:
        """The round's cells the arm measures, in the round's order."""
        limited = self.arm_cells.get(arm)
        if limited is None:
            return self.cells
        return tuple(cell for cell in self.cells if cell in limited)

    def slots(self) -> Iterator[tuple[CellKey, Slot]]:
        """Its measurements in running order: each arm's passes (repeats) over its cells."""
        for arm in self.arms:
            for repeat in range(1, self.repeats + 1):
                for scenario, concurrency in self.cells_of(arm):
                    yield CellKey(arm=arm, scenario=scenario, concurrency=concurrency), (self.round, repeat)


def arm_order(plan: Plan, round: int) -> tuple[str, ...]:
    names = tuple(arm.name for arm in plan.arms)
    return names if round % 2 == 1 else names[::-1]


def grid(plan: Plan) -> tuple[GridCell, ...]:
    """The plan's (scenario, concurrency) in plan order: every cell some arm measures."""
    seen: dict[GridCell, None] = {}
    for spec in plan.cells():
        seen.setdefault((spec.key.scenario, spec.key.concurrency), None)
    return tuple(seen)


def arm_cells(plan: Plan, cells: tuple[GridCell, ...]) -> dict[str, tuple[GridCell, ...]]:
    """Of `cells`, those each arm with a `cells` key measures (the others measure all)."""
    return {arm.name: tuple(cell for cell in cells if arm.plans(*cell))
            for arm in plan.arms if arm.cells is not None}


def planned_rounds(plan: Plan) -> list[RoundPlan]:
    cells = grid(plan)
    limited = arm_cells(plan, cells)
    return [RoundPlan(r, arm_order(plan, r), cells, "planned", plan.bench.repeats, limited)
            for r in range(1, plan.bench.rounds + 1)]


def adaptive_round(plan: Plan, round: int, cells: Iterable[GridCell]) -> RoundPlan:
    wanted = {(str(s), int(c)) for s, c in cells}
    ordered = tuple(cell for cell in grid(plan) if cell in wanted)  # plan order, grid cells only
    return RoundPlan(round, arm_order(plan, round), ordered, "adaptive", plan.bench.repeats,
                     arm_cells(plan, ordered))


def rounds_of(plan: Plan, events: Iterable[Event]) -> list[RoundPlan]:
    """The plan's rounds, then the adaptive rounds its runner announced (each the round after
    the last; a resume announces a round again, and that changes nothing)."""
    rounds = planned_rounds(plan)
    for event in events:
        if isinstance(event, RoundPlanned) and event.reason == "adaptive" \
                and event.round == len(rounds) + 1:
            rounds.append(adaptive_round(plan, event.round, event.cells))
    return rounds


@dataclass
class PlannedMeasurements:
    """The slots planned for each cell. Rounds only add: a round announced again, or an
    adaptive round for a few cells, can only raise what is planned."""

    slots: dict[CellKey, set[Slot]] = field(default_factory=dict)
    total: int = 0

    @classmethod
    def of_rounds(cls, rounds: Iterable[RoundPlan]) -> PlannedMeasurements:
        planned = cls()
        for rnd in rounds:
            planned.add(rnd)
        return planned

    def add(self, rnd: RoundPlan) -> list[tuple[CellKey, Slot]]:
        """Adds the round's measurements; returns those not planned before, in running order."""
        added = []
        for key, slot in rnd.slots():
            slots = self.slots.setdefault(key, set())
            if slot not in slots:
                slots.add(slot)
                added.append((key, slot))
        self.total += len(added)
        return added

    def count(self, key: CellKey) -> int:
        return len(self.slots.get(key, ()))

    def has(self, key: CellKey, slot: Slot) -> bool:
        return slot in self.slots.get(key, ())
