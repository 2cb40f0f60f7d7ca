"""A run's cells counted across rounds from their saved measurements: one rule for every view
that counts from files (the report's header today), so none of them calls a user's skip a
failure.

A cell is ok when every measurement planned for it is ok, skipped when the user skipped one of
them (and none failed), failed when one failed, and not run while some planned measurement has
no record yet. A run whose cells are all ok or skipped is completed ("completed, 1 skipped").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dspark_tui.model.cell import CellStatus

CellOutcome = Literal["ok", "skipped", "failed", "not_run"]


def cell_outcome(planned: int, statuses: Iterable[CellStatus | str]) -> CellOutcome:
    """The cell's outcome from the status of each of its measurements (the latest record of
    each planned (round, repeat)) and how many measurements were planned for it."""
    seen = [CellStatus(s) for s in statuses]
    if CellStatus.FAILED in seen:
        return "failed"
    if CellStatus.SKIPPED in seen:
        return "skipped"
    return "ok" if seen.count(CellStatus.OK) >= max(planned, 1) else "not_run"


@dataclass(frozen=True)
class CellCounts:
    ok: int = 0
    skipped: int = 0
    failed: int = 0
    not_run: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[CellOutcome]) -> CellCounts:
        listed = list(outcomes)
        return cls(ok=listed.count("ok"), skipped=listed.count("skipped"),
                   failed=listed.count("failed"), not_run=listed.count("not_run"))

    @property
    def total(self) -> int:
        return self.ok + self.skipped + self.failed + self.not_run

    @property
    def completed(self) -> bool:
        """Nothing failed and nothing is left to run; skips the user asked for do not count."""
        return self.failed == 0 and self.not_run == 0
