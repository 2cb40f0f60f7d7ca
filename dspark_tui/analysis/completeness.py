"""Whether a run measured what its plan asked, told where the answer is: the run's status
(aborted, interrupted, still running), the arms with no ok measurement at all, and each failed
cell with its arm and why (the reason of its first failed measurement). The summary's first
lines, schedule.json, the decision view and History's best-arm column all read this one
record, so none of them answers "what to deploy" as if the run were whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dspark_tui.analysis.counting import cell_outcomes
from dspark_tui.analysis.layout import RunLayout, layout_of
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.model import CellKey
from dspark_tui.model.outcome import CellCounts
from dspark_tui.results.manifest import RunManifest
from dspark_tui.results.store import LoadedRun

SIMULATOR_MARK = "dspark_tui.sim"

# run.json's status of a run that ended before its plan was done.
STOPPED = ("aborted", "interrupted", "failed")


@dataclass(frozen=True)
class FailedCell:
    arm: str
    scenario: str
    concurrency: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "scenario": self.scenario, "concurrency": self.concurrency,
                "reason": self.reason}


@dataclass(frozen=True)
class Completeness:
    status: str  # run.json's: completed, aborted, interrupted, failed, running
    arms: list[str]  # the plan's
    missing_arms: list[str]  # arms without a single ok measurement
    failed: list[FailedCell] = field(default_factory=list)
    not_run: int = 0  # cells with measurements still to make (none failed)
    total: int = 0  # cells planned (an arm with `cells` plans only those)
    ok: int = 0  # cells whose every planned measurement is ok
    counts: CellCounts = field(default_factory=CellCounts)  # the report header's count

    @property
    def complete(self) -> bool:
        return (self.status == "completed" and not self.missing_arms and not self.failed
                and self.not_run == 0)

    @property
    def stopped(self) -> bool:
        return self.status in STOPPED

    def to_json(self) -> dict[str, Any] | None:
        """schedule.json's `incomplete`: None for a whole run."""
        if self.complete:
            return None
        return {"run_status": self.status, "missing_arms": self.missing_arms,
                "failed_cells": [cell.to_json() for cell in self.failed],
                "cells_not_run": self.not_run, "cells": self.total}


def completeness(run: LoadedRun, layout: RunLayout | None = None) -> Completeness:
    layout = layout if layout is not None else layout_of(run)
    outcomes = cell_outcomes(run, layout)
    measurements = measurements_of(run)
    measured = {m.arm for m in measurements if m.ok}
    reasons: dict[CellKey, str] = {}
    for m in measurements:
        if m.status == "failed" and m.key not in reasons:
            reasons[m.key] = (m.failure_reason or m.error or "failed").splitlines()[0].strip()
    failed = [FailedCell(key.arm, key.scenario, key.concurrency, reasons.get(key, "failed"))
              for key, outcome in outcomes.items() if outcome == "failed"]
    return Completeness(
        status=run.manifest.status,
        arms=list(layout.arms),
        missing_arms=[arm for arm in layout.arms if arm not in measured],
        failed=failed,
        not_run=sum(1 for outcome in outcomes.values() if outcome == "not_run"),
        total=len(outcomes),
        ok=sum(1 for outcome in outcomes.values() if outcome == "ok"),
        counts=CellCounts.of(outcomes.values()),
    )


def is_simulated(manifest: RunManifest) -> bool:
    """True when the run's server was the simulator: its backend label or its server command
    names dspark_tui.sim. Such a run never tells anyone to deploy."""
    if SIMULATOR_MARK in (manifest.backend_label or ""):
        return True
    server = manifest.plan.get("server") if isinstance(manifest.plan, dict) else None
    command = server.get("command", []) if isinstance(server, dict) else []
    return any(SIMULATOR_MARK in str(part) for part in command)
