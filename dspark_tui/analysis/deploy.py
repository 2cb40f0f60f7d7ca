"""Everything the K decision says about a run, computed once: the per-cell choices, the
/metrics explanation, the schedule and its command line, the fixed-K and routing fallbacks;
and `schedule.json`, written next to report.md."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dspark_tui.analysis.adaptive import AdaptiveArm, adaptive_arms, arm_configs
from dspark_tui.analysis.analysis import RunAnalysis, analyse
from dspark_tui.analysis.completeness import Completeness, is_simulated
from dspark_tui.analysis.decision import KDecision, decide_k
from dspark_tui.analysis.positions import (
    Disagreement,
    PositionValue,
    SpecCounters,
    disagreements,
    position_values,
    spec_counters,
)
from dspark_tui.analysis.schedule import (
    DECIDED,
    MERGE_CONCURRENCY_SPAN,
    MIN_RUNNING_SAMPLES,
    SCHEDULE_SCHEMA_VERSION,
    SINGLE_ANSWER,
    UNSURE_ANSWER,
    CellId,
    Gain,
    Routing,
    Schedule,
    SingleK,
    best_routing,
    best_single_k,
    method_for,
    run_placed,
    run_plan,
    schedule_config,
    schedule_of,
    serve_command,
    weighted_gain,
)
from dspark_tui.analysis.slo import slo_answer, slo_of
from dspark_tui.analysis.verification import verification_json, verification_of
from dspark_tui.results import atomic_write_text
from dspark_tui.results.store import LoadedRun

SCHEDULE_FILE = "schedule.json"


@dataclass
class DeployAnswer:
    decision: KDecision
    counters: dict[tuple[str, int, int], SpecCounters]
    positions: list[PositionValue]
    warnings: list[Disagreement]
    weights: dict[CellId, float]
    traffic_source: str  # "plan" | "equal"
    points: dict[CellId, tuple[float, float, float]]
    schedule: Schedule | None
    method: str
    method_source: str
    config: dict[str, Any] | None
    command: list[str] | None
    single: SingleK | None
    schedule_gain: Gain | None  # the schedule over the best single K, on the traffic
    routing: Routing | None
    run: Completeness | None = None  # whether the sweep measured every arm and cell
    simulated: bool = False
    withheld: bool = False  # arms are missing: no schedule, no fixed K (unless asked)
    notes: list[str] = field(default_factory=list)
    # Adaptive-verification arms against the per-cell choice, with their hybrids (empty
    # without such arms: analysis/adaptive.py).
    adaptive: list[AdaptiveArm] = field(default_factory=list)

    @property
    def status(self) -> str:
        """What the schedule rests on: `single` (some choice has no interval), `unsure` (some
        choice is not decided), `decided` (every cell's choice is). A --verify rerun that
        confirms it says `confirmed` in its own schedule.json (analysis/verification.py)."""
        if not self.decision.verified:
            return SINGLE_ANSWER
        if any(choice.status != DECIDED for choice in self.decision.choices):
            return UNSURE_ANSWER
        return DECIDED

    @property
    def run_path(self) -> Path:
        return self.decision.analysis.run.path

    @property
    def complete(self) -> bool:
        return self.run is None or self.run.complete

    @property
    def deploy(self) -> bool:
        """Whether a consumer may deploy the schedule as it stands: decided, from a whole run on
        the real server. (A --verify rerun that confirms it is the stronger word.)"""
        return (self.schedule is not None and self.status == DECIDED and self.complete
                and not self.simulated and not self.withheld)

    def why_not(self) -> list[str]:
        """The reasons `deploy` is false, as schedule.json names them."""
        reasons = []
        if self.schedule is None:
            reasons.append("no_schedule")
        if self.withheld or (self.run is not None and self.run.missing_arms):
            reasons.append("missing_arms")
        if self.run is not None and self.run.failed:
            reasons.append("failed_cells")
        if self.run is not None and (self.run.stopped or self.run.status == "running"
                                     or self.run.not_run):
            reasons.append(f"run_{self.run.status}" if self.run.status != "completed" else "cells_not_run")
        if self.status != DECIDED:
            reasons.append(self.status)
        if self.simulated:
            reasons.append("simulated")
        return reasons


def deploy_answer(analysis: RunAnalysis, partial: bool = False) -> DeployAnswer | None:
    """None unless the run's arms are a K sweep (analysis/layout.ArmKs.is_sweep). A sweep that
    lacks arms (aborted, a crashed arm) gets no schedule and no fixed K — their choices would
    come from the arms that happened to run — unless `partial` asks for one, which then says so
    (`withheld` False, `run` naming what is missing). Computed once per analysis (`partial`
    matters only when arms are missing)."""
    partial = partial and bool(analysis.completeness.missing_arms)
    return analysis.computed(("deploy_answer", partial), lambda: _deploy_answer(analysis, partial))


def _deploy_answer(analysis: RunAnalysis, partial: bool) -> DeployAnswer | None:
    decision = decide_k(analysis)
    ks = analysis.layout.ks
    if decision is None or not decision.choices or ks is None:
        return None
    run = analysis.completeness
    simulated = is_simulated(analysis.run.manifest)
    plan = run_plan(analysis)
    counters = spec_counters(decision)
    placed = run_placed(analysis)
    assert placed is not None  # a decision with choices
    points, weights = placed.points, placed.weights
    if run.missing_arms and not partial:
        return DeployAnswer(
            decision=decision, counters=counters, positions=position_values(decision, counters),
            warnings=disagreements(decision, counters), weights=weights,
            traffic_source=placed.traffic_source, points=points,
            schedule=None, method="", method_source="", config=None, command=None, single=None,
            schedule_gain=None, routing=None, run=run, simulated=simulated, withheld=True)
    schedule = schedule_of(decision, counters, placed, plan)
    method, method_source = method_for(plan)
    config = None
    command = None
    if schedule is not None:
        config = schedule_config(schedule, method, plan)
        if plan is not None:
            command = serve_command(plan, ks.var, config)
    single = best_single_k(decision, weights)
    schedule_gain = None
    routing = None
    if single is not None:
        if schedule is not None:
            k_for = {key: schedule.k_at(points[key][0]) for key in weights}
            schedule_gain = weighted_gain(decision, weights, k_for, dict.fromkeys(weights, single.k))
        routing = best_routing(decision, weights, single)
    adaptive = (adaptive_arms(decision, schedule, points, weights,
                              arm_configs(plan.arms if plan is not None else []), method)
                if decision.adaptive else [])
    return DeployAnswer(
        decision=decision,
        counters=counters,
        positions=position_values(decision, counters),
        warnings=disagreements(decision, counters),
        weights=weights,
        traffic_source=placed.traffic_source,
        points=points,
        schedule=schedule,
        method=method,
        method_source=method_source,
        config=config,
        command=command,
        single=single,
        schedule_gain=schedule_gain,
        routing=routing,
        run=run,
        simulated=simulated,
        adaptive=adaptive,
    )


def schedule_json(answer: DeployAnswer) -> dict[str, Any]:
    schedule = answer.schedule
    decision = answer.decision

    def gain(g: Gain | None) -> dict[str, Any] | None:
        return None if g is None else {k: (round(v, 6) if isinstance(v, float) else v)
                                       for k, v in asdict(g).items()}

    out: dict[str, Any] = {
        "schema_version": SCHEDULE_SCHEMA_VERSION,
        "status": answer.status,
        "deploy": answer.deploy,
        "not_deployable_because": answer.why_not(),
        "incomplete": answer.run.to_json() if answer.run is not None else None,
        "has_intervals": decision.verified,
        "unsure_cells": [{"scenario": c.scenario, "concurrency": c.concurrency}
                         for c in decision.unsure_choices],
        "tie_band": decision.band.fraction,
        "traffic": answer.traffic_source,
    }
    if schedule is not None:
        out.update({
            "keyed_on": schedule.keyed_on,
            "num_speculative_tokens_per_batch_size": schedule.ranges,
            "max_num_seqs": schedule.max_num_seqs,
            "max_num_seqs_source": schedule.max_num_seqs_source,
            "largest_measured_batch": schedule.largest_measured_batch,
            "beyond_measured": {"from": schedule.largest_measured_batch + 1,
                                "to": schedule.max_num_seqs, "k": schedule.k_at(schedule.max_num_seqs)}
            if schedule.largest_measured_batch < schedule.max_num_seqs else None,
            "speculative_config": answer.config,
            "method_source": answer.method_source,
            "serve_command": answer.command,
            "key_rule": {"min_running_samples": MIN_RUNNING_SAMPLES,
                         "merge_concurrency_span": MERGE_CONCURRENCY_SPAN},
            "thin_cells": [asdict(c) for c in schedule.thin],
            "anchors": [
                {"batch": round(a.batch, 3), "low": round(a.low, 3), "high": round(a.high, 3), "k": a.k,
                 "samples": a.samples, "concurrency_span": round(a.concurrency_span, 3),
                 "wide": a.wide, "covered": a in schedule.covered,
                 "cells": [{"scenario": c.scenario, "concurrency": c.concurrency, "k": c.k,
                            "status": c.status} for c in a.cells]}
                for a in schedule.anchors
            ],
        })
    if answer.single is not None:
        out["single_best_k"] = {
            "k": answer.single.k,
            "status": answer.single.status,
            "leader": answer.single.leader,
            "gain_over": {str(k): gain(g) for k, g in answer.single.gains.items()},
        }
    out["schedule_gain_over_single_k"] = gain(answer.schedule_gain)
    if answer.routing is not None:
        out["routing"] = {"low_k": answer.routing.low_k, "high_k": answer.routing.high_k,
                          "threshold_concurrency": answer.routing.threshold,
                          "gain_over_single_k": gain(answer.routing.gain)}
    out["cells"] = [
        {"scenario": c.scenario, "concurrency": c.concurrency, "k": c.k, "top_k": c.top_k,
         "status": c.status, "has_interval": c.verified,
         "running_batch": round(answer.points[c.key][0], 3),
         "weight": round(answer.weights.get(c.key, 0.0), 6)}
        for c in decision.choices
    ]
    if answer.adaptive:
        out["adaptive"] = [arm.to_json() for arm in answer.adaptive]
    return out


def write_schedule(run: LoadedRun, analysis: RunAnalysis | None = None,
                   partial: bool = False) -> Path | None:
    """Write `schedule.json` next to report.md when the run is a K sweep with every arm
    measured (or `partial` asks for one anyway: it says what is missing); OSError to the
    caller."""
    analysis = analysis if analysis is not None else analyse(run)
    answer = deploy_answer(analysis, partial)
    document: dict[str, Any] | None = None
    if answer is not None and not answer.withheld:
        document = schedule_json(answer)
        if slo_of(run) is not None and (slo := slo_answer(analysis)) is not None:
            # The schedule under the plan's [slo] beside the throughput one (docs/decision.md).
            document["under_slo"] = {"schedule": None if slo.schedule is None else slo.schedule.to_json(),
                                     "best_fixed": None if slo.single is None else slo.single.arm,
                                     # decided / unsure (the arm is the leader only) / single
                                     "best_fixed_status": None if slo.single is None else slo.single.status}
    elif answer is None and (verified := verification_of(analysis)) is not None:
        # A --verify rerun: the schedule it reran and whether it confirmed it.
        document = verification_json(verified, is_simulated(run.manifest),
                                     analysis.completeness.to_json())
    if document is None:
        return None
    path = run.path / SCHEDULE_FILE
    atomic_write_text(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return path
