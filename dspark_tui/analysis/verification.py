"""What a verification run (`run PLAN --verify SWEEP_DIR`) found: per cell the schedule arm
against the best fixed K arm, with the verdict analysis' ratio, interval and verdict, and the
realised gain on the plan's traffic (docs/decision.md, "Verifying")."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.decision import Ratio, ratio_between
from dspark_tui.analysis.schedule import (
    SCHEDULE_SCHEMA_VERSION,
    CellId,
    Gain,
    combine_ratios,
    plan_of,
    traffic_weights,
)
from dspark_tui.model.statistics import TieBand
from dspark_tui.results.manifest import Verification
from dspark_tui.stats.paired import SINGLE, TIE, WINS, Verdict, classify


@dataclass(frozen=True)
class VerifiedCell:
    scenario: str
    concurrency: int
    batch: float | None  # mean running batch under the schedule (vllm:num_requests_running)
    schedule_k: int | None  # the schedule's K at that batch
    ratio: Ratio | None  # schedule / fixed K
    weight: float

    @property
    def key(self) -> CellId:
        return (self.scenario, self.concurrency)

    @property
    def fixed_wins(self) -> bool:
        return self.ratio is not None and self.ratio.verdict == WINS and self.ratio.value < 1.0

    @property
    def schedule_wins(self) -> bool:
        return self.ratio is not None and self.ratio.verdict == WINS and self.ratio.value > 1.0


@dataclass(frozen=True)
class VerificationResult:
    record: Verification
    cells: list[VerifiedCell]
    gain: Gain | None  # the schedule over the fixed K, weighted by the traffic
    gain_verdict: Verdict  # against the run's tie band
    traffic_source: str  # "plan" | "equal"
    band: TieBand  # the run's (model/statistics.py)
    level: float

    @property
    def fixed_wins(self) -> list[VerifiedCell]:
        return [cell for cell in self.cells if cell.fixed_wins]

    @property
    def outcome(self) -> str:
        """Whether the rerun confirmed the schedule: `confirmed` (its traffic-weighted gain over
        the fixed K is shown, and the fixed K beats it in no cell), `no_gain` (a tie: the fixed
        K serves as well), `refuted` (the fixed K is shown faster), `unsure`, or `single`
        (no interval). The verification run's schedule.json `status`."""
        gain = self.gain
        if gain is None or gain.low is None or gain.high is None:
            return "single"
        if self.gain_verdict == WINS:
            if gain.ratio < 1.0:
                return "refuted"
            return "confirmed" if not self.fixed_wins else "unsure"
        if self.gain_verdict == TIE:
            return "no_gain"
        return "unsure"


def schedule_k_at(ranges: list[list[int]], batch: float) -> int | None:
    """K of a `num_speculative_tokens_per_batch_size` list at a batch size, as vLLM looks it
    up: the range holding it, a gap the previous range's K, beyond the last the last K."""
    b = max(1, round(batch))
    found = None
    for lo, _, k in sorted(ranges):
        if lo <= b:
            found = k
    return found


def verification_of(analysis: RunAnalysis) -> VerificationResult | None:
    """None unless run.json says the run verifies a sweep and the verdicts were computed."""
    record = analysis.run.manifest.verification
    verdicts = analysis.verdicts
    if record is None or verdicts is None:
        return None
    plan = plan_of(analysis.run.manifest.plan or {})
    traffic = plan.traffic if plan is not None else None
    cells = sorted({(s.scenario, s.concurrency) for s in verdicts.cells if s.arm == record.schedule_arm},
                   key=_order(analysis))
    batches = _running_batches(analysis, record.schedule_arm)
    weights = traffic_weights(cells, traffic, {k: v for k, v in batches.items() if v is not None})
    rows = []
    for scenario, concurrency in cells:
        batch = batches.get((scenario, concurrency))
        key = batch if batch is not None and record.keyed_on == "running_batch" else concurrency
        rows.append(VerifiedCell(
            scenario, concurrency, batch, schedule_k_at(record.schedule, key),
            ratio_between(verdicts, scenario, concurrency, record.schedule_arm, record.fixed_arm),
            weights.get((scenario, concurrency), 0.0)))
    gain = combine_ratios([(row.weight, row.ratio) for row in rows if row.ratio is not None])
    verdict = SINGLE
    if gain is not None and gain.low is not None and gain.high is not None:
        verdict, _ = classify(math.log(gain.low), math.log(gain.high),
                              verdicts.settings.band.log_edge)
    return VerificationResult(record, rows, gain, verdict,
                              "plan" if traffic is not None else "equal",
                              verdicts.settings.band, verdicts.settings.level)


def _order(analysis: RunAnalysis) -> Callable[[CellId], tuple[int, int]]:
    names = analysis.layout.scenario_names()
    return lambda key: (names.index(key[0]) if key[0] in names else len(names), key[1])


def _running_batches(analysis: RunAnalysis, arm: str) -> dict[CellId, float | None]:
    """Mean `vllm:num_requests_running` of the arm's ok measurements per cell (None without
    /metrics)."""
    seen: dict[CellId, list[float]] = {}
    for m in analysis.run.measurements:
        if m.arm != arm or not m.ok:
            continue
        values = seen.setdefault((m.scenario, m.concurrency), [])
        if m.server is not None and m.server.running_mean is not None:
            values.append(m.server.running_mean)
    return {key: (sum(v) / len(v) if v else None) for key, v in seen.items()}


def verification_json(result: VerificationResult, simulated: bool,
                      incomplete: dict[str, Any] | None) -> dict[str, Any]:
    """A verification run's schedule.json: the schedule it reran, and whether it was confirmed
    (`status`, `deploy`), for a consumer that deploys only what a rerun confirmed."""
    record = result.record
    gain = result.gain
    reasons = [] if result.outcome == "confirmed" else [result.outcome]
    if incomplete is not None:
        reasons.append("incomplete")
    if simulated:
        reasons.append("simulated")
    return {
        "schema_version": SCHEDULE_SCHEMA_VERSION,
        "status": result.outcome,
        "deploy": not reasons,
        "not_deployable_because": reasons,
        "incomplete": incomplete,
        "verifies": record.sweep,
        "sweep_name": record.sweep_name,
        "keyed_on": record.keyed_on,
        "num_speculative_tokens_per_batch_size": record.schedule,
        "fixed_k": record.fixed_k,
        "tie_band": result.band.fraction,
        "traffic": result.traffic_source,
        "gain_over_fixed_k": None if gain is None else {
            "ratio": round(gain.ratio, 6), "low": None if gain.low is None else round(gain.low, 6),
            "high": None if gain.high is None else round(gain.high, 6), "cells": gain.cells},
        "gain_verdict": str(result.gain_verdict),
        "fixed_k_wins_at": [{"scenario": c.scenario, "concurrency": c.concurrency}
                            for c in result.fixed_wins],
    }
