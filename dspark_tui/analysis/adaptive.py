"""Adaptive verification against the K decision (issue 24): a K sweep that carries arms with
vLLM's `enable_adaptive_verification` keeps its decision and schedule over the fixed-K arms;
each adaptive arm is then compared, cell by cell, with the K chosen there (the run's paired
verdict and tie band), and the hybrid — adaptive where it is shown faster, the schedule
elsewhere — gets its expected gain over the schedule alone on the plan's traffic, with an
interval at the family level the schedule's own gain uses. Where the sweep also has the fixed
arm of the adaptive arm's own K, each cell compares the two as well (one planned comparison at
the run's level): where adaptive verification starts to pay against verifying every draft — the
crossover. docs/decision.md says how.

How the hybrid is served: vLLM's `enable_adaptive_verification` is one boolean for the whole
server (vllm/config/speculative.py, SpeculativeConfig, at commit 002e77c1f0ef): no per-batch
form. Its validators do not reject it beside `num_speculative_tokens_per_batch_size`, but such
a server would verify adaptively at every batch size on the schedule's K, which no arm
measured; and that commit accepts it only with `method = "dspark"`. So one config expresses the
hybrid only where adaptive wins in every cell the traffic weighs (the adaptive arm's own
config); otherwise the answer is routing by load between two servers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dspark_tui.analysis.decision import KDecision, Ratio, family_alpha, ratio_between
from dspark_tui.analysis.layout import ADAPTIVE_VAR, K_VAR
from dspark_tui.analysis.positions import ArmAcceptance, arm_acceptance
from dspark_tui.analysis.schedule import CellId, Gain, Schedule, combine_ratios
from dspark_tui.stats.paired import Verdict

WINS, LOSES, TIE, UNSURE, SINGLE, MISSING = "wins", "loses", "tie", "unsure", "single", "missing"
ONE_CONFIG, ROUTING, SCHEDULE_ONLY = "one_config", "routing", "schedule"
VLLM_SOURCE = "vllm-project/vllm vllm/config/speculative.py @ 002e77c1f0ef"


@dataclass(frozen=True)
class AdaptiveCell:
    scenario: str
    concurrency: int
    k: int  # the fixed K chosen in the cell
    schedule_k: int  # the K the schedule runs at the cell's batch
    vs_chosen: Ratio | None  # adaptive over the chosen K, at the run's level
    outcome: str  # wins | loses | tie | unsure | single | missing
    # adaptive over the fixed arm of its own K (every draft verified), at the run's level: one
    # planned comparison, not a choice among arms; None when the sweep has no such arm
    vs_own: Ratio | None = None
    own_outcome: str = MISSING

    @property
    def key(self) -> CellId:
        return (self.scenario, self.concurrency)


@dataclass(frozen=True)
class RouteRule:
    """One scenario's routing: the concurrencies the adaptive server takes; `from_concurrency`
    when they are exactly the scenario's top concurrencies (a load threshold)."""

    scenario: str
    adaptive_at: list[int]
    from_concurrency: int | None


@dataclass
class AdaptiveArm:
    arm: str
    k: int  # drafted per step
    cells: list[AdaptiveCell]
    gain: Gain | None  # the hybrid over the schedule alone on the traffic (None: no win)
    form: str  # one_config | routing | schedule
    config: dict[str, Any] | None  # the one config, for `one_config`
    routing: list[RouteRule] = field(default_factory=list)
    method_ok: bool = True  # vLLM (at the commit checked) accepts it only with method = dspark
    own_arm: str | None = None  # the fixed arm with the same K, when the sweep has one
    # Its /metrics acceptance over its cells (analysis/positions.arm_acceptance), as the fixed
    # K have theirs; None without counters or without a K in its config. Not in the JSON files.
    acceptance: ArmAcceptance | None = None

    @property
    def wins(self) -> list[AdaptiveCell]:
        return [c for c in self.cells if c.outcome == WINS]

    def to_json(self) -> dict[str, Any]:
        def ratio(r: Ratio | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {"ratio": round(r.value, 6), "low": None if r.low is None else round(r.low, 6),
                    "high": None if r.high is None else round(r.high, 6), "verdict": str(r.verdict)}

        return {
            "arm": self.arm,
            "k": self.k,
            "cells": [{"scenario": c.scenario, "concurrency": c.concurrency, "chosen_k": c.k,
                       "schedule_k": c.schedule_k, "outcome": c.outcome,
                       "vs_chosen": ratio(c.vs_chosen),
                       **({"vs_own_k": ratio(c.vs_own), "own_outcome": c.own_outcome}
                          if self.own_arm is not None else {})} for c in self.cells],
            **({"own_k_arm": self.own_arm} if self.own_arm is not None else {}),
            "hybrid": {
                "adaptive_cells": [{"scenario": c.scenario, "concurrency": c.concurrency}
                                   for c in self.wins],
                "form": self.form,
                "speculative_config": self.config,
                "routing": [{"scenario": r.scenario, "adaptive_at": r.adaptive_at,
                             "from_concurrency": r.from_concurrency} for r in self.routing],
                "gain_over_schedule": None if self.gain is None else {
                    "ratio": round(self.gain.ratio, 6),
                    "low": None if self.gain.low is None else round(self.gain.low, 6),
                    "high": None if self.gain.high is None else round(self.gain.high, 6),
                    "cells": self.gain.cells},
                "why": _why(self),
                "vllm_checked": VLLM_SOURCE,
                "method_accepted": self.method_ok,
            },
        }


def _why(arm: AdaptiveArm) -> str:
    if arm.form == SCHEDULE_ONLY:
        return "adaptive verification is not shown faster than the chosen K in any cell"
    if arm.form == ONE_CONFIG:
        return "adaptive verification is shown faster in every weighted cell: its own config serves all"
    return ("enable_adaptive_verification is one boolean per server (no per-batch-size form); "
            "beside num_speculative_tokens_per_batch_size it would verify adaptively at every "
            "batch size on the schedule's K, which was not measured: route by load")


def adaptive_arms(decision: KDecision, schedule: Schedule | None,
                  points: dict[CellId, tuple[float, float, float]], weights: dict[CellId, float],
                  configs: dict[str, dict[str, Any]], method: str) -> list[AdaptiveArm]:
    """Each adaptive arm against the decision's per-cell choice, with its hybrid."""
    verdicts = decision.analysis.verdicts
    if verdicts is None or not decision.adaptive:
        return []
    arm_of = decision.arm_of
    # The hybrid's gain sets a choice among the fixed arms and the adaptive ones: its family.
    alpha = family_alpha(verdicts.settings.look_alpha, len(decision.k_of) + len(decision.adaptive))
    out = []
    for arm in decision.adaptive:
        config = configs.get(arm)
        k = int(config.get(K_VAR, 0)) if config else 0
        # its own K only when the arm's config says it: an unreadable plan snapshot gives no
        # config, and a default of 0 would pass the K=0 baseline off as "its own K" (review)
        own = arm_of.get(k) if config is not None and K_VAR in config else None
        cells: list[AdaptiveCell] = []
        for choice in decision.choices:
            schedule_k = schedule.k_at(points[choice.key][0]) if schedule is not None else choice.k
            ratio = ratio_between(verdicts, choice.scenario, choice.concurrency, arm, arm_of[choice.k])
            vs_own = (ratio_between(verdicts, choice.scenario, choice.concurrency, arm, own)
                      if own is not None else None)
            cells.append(AdaptiveCell(choice.scenario, choice.concurrency, choice.k, schedule_k,
                                      ratio, _outcome(ratio), vs_own, _outcome(vs_own)))
        won = [c for c in cells if c.outcome == WINS]
        weighted: list[tuple[float, Ratio]] = []
        for cell in cells:
            weight = weights.get(cell.key, 0.0)
            if weight <= 0:
                continue
            if cell.outcome == WINS:
                r = ratio_between(verdicts, cell.scenario, cell.concurrency, arm,
                                  arm_of[cell.schedule_k], alpha)
                if r is not None:
                    weighted.append((weight, r))
            else:
                weighted.append((weight, Ratio(1.0, 1.0, 1.0, Verdict.TIE)))
        gain = combine_ratios(weighted) if won else None
        weighed = [c for c in cells if weights.get(c.key, 0.0) > 0]
        if not won:
            form = SCHEDULE_ONLY
        elif all(c.outcome == WINS for c in weighed):
            form = ONE_CONFIG
        else:
            form = ROUTING
        out.append(AdaptiveArm(
            arm=arm, k=k, cells=cells, gain=gain, form=form,
            config=config if form == ONE_CONFIG else None,
            routing=_routes(cells) if form == ROUTING else [],
            method_ok=(config or {}).get("method", method) == "dspark", own_arm=own,
            acceptance=(arm_acceptance(decision, arm, k)
                        if config is not None and K_VAR in config else None)))
    return out


def _outcome(ratio: Ratio | None) -> str:
    if ratio is None:
        return MISSING
    if ratio.verdict == Verdict.WINS:
        return WINS if ratio.value > 1.0 else LOSES
    if ratio.verdict == Verdict.TIE:
        return TIE
    if ratio.verdict == Verdict.UNSURE:
        return UNSURE
    return SINGLE


def _routes(cells: list[AdaptiveCell]) -> list[RouteRule]:
    rules = []
    for scenario in dict.fromkeys(c.scenario for c in cells):
        mine = sorted(cells, key=lambda c: c.concurrency)
        mine = [c for c in mine if c.scenario == scenario]
        at = [c.concurrency for c in mine if c.outcome == WINS]
        if not at:
            continue
        top = [c.concurrency for c in mine[len(mine) - len(at):]]
        rules.append(RouteRule(scenario, at, min(at) if top == at else None))
    return rules


def arm_configs(plan_arms: list[Any]) -> dict[str, dict[str, Any]]:
    """Each adaptive arm's speculative table as the plan gives it (its --speculative-config)."""
    out = {}
    for arm in plan_arms:
        spec = getattr(arm, "speculative", None)
        if spec is not None:
            config = spec.config()
            if config.get(ADAPTIVE_VAR.split(".", 1)[1]) is True:
                out[arm.name] = config
    return out
