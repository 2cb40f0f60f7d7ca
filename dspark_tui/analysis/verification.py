"""What a verification run (`run PLAN --verify SWEEP_DIR`) found: per cell the schedule arm
against the best fixed K arm, with the verdict analysis' ratio, interval and verdict, and the
realised gain on the plan's traffic (docs/decision.md, "Verifying")."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.bands import BandAnswer, band_answers
from dspark_tui.analysis.decision import Ratio, ratio_between
from dspark_tui.analysis.schedule import (
    MIN_RUNNING_SAMPLES,
    SCHEDULE_SCHEMA_VERSION,
    CellId,
    Gain,
    combine_ratios,
    run_plan,
    traffic_weights,
)
from dspark_tui.model.statistics import TieBand
from dspark_tui.results.manifest import Verification
from dspark_tui.stats.paired import SINGLE, TIE, WINS, Verdict, classify


@dataclass(frozen=True)
class VerifiedCell:
    scenario: str
    concurrency: int
    batch: float | None  # the batch the schedule arm held (_held_batches; None: no reading)
    schedule_k: int | None  # the schedule's K at that batch
    ratio: Ratio | None  # schedule / fixed K
    weight: float
    # The schedule runs the fixed arm's K at every batch the cell can hold (1 to its
    # concurrency): schedule / fixed K compares one K with itself, an A-vs-A check of the K; a
    # difference there is the schedule's own cost (vLLM #49548: dynamic K can drop its CUDA
    # graphs to PIECEWISE) or noise, never a choice of K.
    same_k: bool = False

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
class BoundaryCell:
    """One cell of the boundary check (docs/decision.md, "At the schedule's boundaries"): the
    schedule against the fixed K on each side of the boundary nearest the cell."""

    scenario: str
    concurrency: int
    probe: bool  # added by the rerun (not a cell of the sweep's grid)
    batch: float | None  # the running batch the schedule arm held (median of its readings)
    schedule_k: int | None  # the schedule's K at that batch (the concurrency without /metrics)
    boundary: int  # the last batch of the lower range: the boundary lies between it and +1
    k_low: int  # the K of the range ending at the boundary
    k_high: int  # the K of the range starting after it
    vs_low: Ratio | None  # schedule / K = k_low
    vs_high: Ratio | None  # schedule / K = k_high
    high_vs_low: Ratio | None  # K = k_high / K = k_low: which side's K is faster here
    drafted_k: float | None  # the schedule arm's drafted tokens per draft (/metrics counters)
    band: float  # the run's tie band (a fraction)
    prefill: bool = False  # a cell of the prefill probe (long prompts, short outputs)

    @property
    def side(self) -> str:
        """Which range the cell's batch falls in: "low" (K = k_low) or "high"."""
        key = self.batch if self.batch is not None else self.concurrency
        return "low" if max(1, round(key)) <= self.boundary else "high"

    @property
    def collapse(self) -> bool:
        """The schedule below BOTH fixed K by more than the tie band: the verdict analysis' own
        rule (its interval beyond the band; the point estimate for single measurements)."""
        return all(r is not None and _beaten(r, self.band) for r in (self.vs_low, self.vs_high))

    @property
    def single(self) -> bool:
        return any(r is not None and not r.has_interval for r in (self.vs_low, self.vs_high))

    @property
    def high_share(self) -> float | None:
        """The share of drafts at k_high implied by the drafted tokens per draft, were every
        step at k_low or k_high: how mixed the schedule's K was in the cell."""
        if self.drafted_k is None or self.k_high == self.k_low:
            return None
        share = (self.drafted_k - self.k_low) / (self.k_high - self.k_low)
        return min(1.0, max(0.0, share))

    @property
    def move(self) -> str | None:
        """Which way to move the boundary: "down" (the cell's batch should run k_high), "up"
        (it should run k_low), or None. A collapse moves the boundary off the cell toward the
        side whose fixed K is faster there (by the point estimate); otherwise a move is asked
        only where the other side's K is shown faster than the K the schedule runs.

        Never from a prefill probe's cell: it is short and mostly prefill, so its running-batch
        readings are a ramp (live: 1.0-3.5 at c = 8 and 9), not the batch the side is read
        from, and which K is faster under prefills is not which is faster at the boundary's
        steady decode. It keeps its collapse verdict (docs/decision.md, "Where the batch
        includes prefills")."""
        if self.prefill:
            return None
        between = self.high_vs_low
        if self.collapse:
            if between is None:
                return None
            return "down" if between.value > 1.0 else "up"
        if between is None or between.verdict != WINS:
            return None
        if self.side == "low" and between.value > 1.0:
            return "down"
        if self.side == "high" and between.value < 1.0:
            return "up"
        return None


def _beaten(ratio: Ratio, band: float) -> bool:
    if ratio.has_interval:
        return ratio.verdict == WINS and ratio.value < 1.0
    return ratio.value < 1.0 / (1.0 + band)


@dataclass(frozen=True)
class BoundaryAdvice:
    """What the check says about one boundary: the cells it rests on and the way to move it."""

    boundary: int
    k_low: int
    k_high: int
    move: str | None  # "down", "up", "conflict" or None (keep it)
    collapses: list[BoundaryCell]
    cells: list[BoundaryCell]

    @property
    def target(self) -> int | None:
        """Where to move the boundary's last batch so every cell asking for a move gets its way:
        below the lowest cell asking "down", at the highest asking "up"."""
        if self.move == "down":
            return min(c.concurrency for c in self.cells if c.move == "down") - 1
        if self.move == "up":
            return max(c.concurrency for c in self.cells if c.move == "up")
        return None


@dataclass(frozen=True)
class VerificationResult:
    record: Verification
    cells: list[VerifiedCell]
    gain: Gain | None  # the schedule over the fixed K, weighted by the traffic
    gain_verdict: Verdict  # against the run's tie band
    traffic_source: str  # "plan" | "equal"
    band: TieBand  # the run's (model/statistics.py)
    level: float
    boundary_cells: list[BoundaryCell] = field(default_factory=list)

    @property
    def collapses(self) -> list[BoundaryCell]:
        return [cell for cell in self.boundary_cells if cell.collapse]

    @property
    def boundaries(self) -> list[BoundaryAdvice]:
        """Per boundary of the schedule, its cells and the way to move it."""
        out = []
        for lo, hi in itertools.pairwise(sorted(self.record.schedule)):
            cells = [c for c in self.boundary_cells if c.boundary == lo[1]]
            moves = {c.move for c in cells if c.move is not None}
            move = None if not moves else moves.pop() if len(moves) == 1 else "conflict"
            out.append(BoundaryAdvice(lo[1], lo[2], hi[2], move,
                                      [c for c in cells if c.collapse], cells))
        return out

    @property
    def fixed_wins(self) -> list[VerifiedCell]:
        return [cell for cell in self.cells if cell.fixed_wins]

    @property
    def same_k(self) -> list[VerifiedCell]:
        """The cells where the schedule runs the fixed K throughout: A-vs-A checks."""
        return [cell for cell in self.cells if cell.same_k]

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


def runs_only(ranges: list[list[int]], k: int, concurrency: int) -> bool:
    """Whether the schedule runs K = k at every batch from 1 to `concurrency`: a closed loop of
    that many clients never holds more, and while it ramps up and drains it holds every smaller
    batch, so a K other than k anywhere below would run in the cell."""
    return all(schedule_k_at(ranges, b) == k for b in range(1, max(1, concurrency) + 1))


def same_k_apart(analysis: RunAnalysis) -> tuple[list[BandAnswer], dict[str, list[VerifiedCell]]]:
    """The summary's band answers (analysis/bands.py) for a verification run with its A-vs-A
    cells (`VerifiedCell.same_k`) taken out, and those cells per band, to be counted apart: a
    cell that compares the fixed K with itself is no undecided choice. The run's own band
    answers, and nothing apart, for any other run."""
    return analysis.computed("same_k_apart", lambda: _same_k_apart(analysis))


def _same_k_apart(analysis: RunAnalysis) -> tuple[list[BandAnswer], dict[str, list[VerifiedCell]]]:
    same = same_k_cells(analysis)
    if not same:
        return analysis.band_answers, {}

    def without(frame: pd.DataFrame) -> pd.DataFrame:
        return without_same_k(analysis, frame)

    answers = band_answers(without(analysis.winners), without(analysis.decided),
                           without(analysis.unsure), analysis.arms, analysis.verdicts,
                           analysis.layout.plans)
    apart: dict[str, list[VerifiedCell]] = {}
    for cell in same:
        apart.setdefault(fr.band_of(cell.concurrency), []).append(cell)
    return answers, apart


def same_k_cells(analysis: RunAnalysis) -> list[VerifiedCell]:
    """A verification run's A-vs-A cells (`VerifiedCell.same_k`; analysis.json
    `verification.same_k_cells`); none for any other run."""
    result = verification_of(analysis)
    return [] if result is None else result.same_k


def without_same_k(analysis: RunAnalysis, frame: pd.DataFrame) -> pd.DataFrame:
    """A frame of cells (`scenario`, `concurrency` columns: the winners, the decided, the
    unsure) without the run's A-vs-A cells: what the report's counts of choices rest on. The
    frame itself for a run without such cells."""
    keys = {cell.key for cell in same_k_cells(analysis)}
    if not keys or frame.empty:
        return frame
    cells = zip(frame["scenario"], frame["concurrency"].astype(int), strict=True)
    return frame[[cell not in keys for cell in cells]]


def choice_verdicts(analysis: RunAnalysis) -> tuple[list[str], list[str]]:
    """The verdicts (wins, tie, unsure …) of the run's comparisons that are choices, its A-vs-A
    cells left out, and those of the A-vs-A cells apart: what the report's how-sure line counts
    and what its clause counts apart (report/certainty.py), and History's `--verify` cell
    (tui/run_facts.py). Every comparison and nothing apart for a run without A-vs-A cells."""
    winners = analysis.winners
    if winners.empty:
        return [], []
    kept = without_same_k(analysis, winners)
    apart = winners.loc[winners.index.difference(kept.index)]
    return kept["verdict"].tolist(), apart["verdict"].tolist()


def verification_of(analysis: RunAnalysis) -> VerificationResult | None:
    """None unless run.json says the run verifies a sweep and the verdicts were computed;
    computed once per analysis."""
    return analysis.computed("verification_of", lambda: _verification_of(analysis))


def _verification_of(analysis: RunAnalysis) -> VerificationResult | None:
    record = analysis.run.manifest.verification
    verdicts = analysis.verdicts
    if record is None or verdicts is None:
        return None
    plan = run_plan(analysis)
    traffic = plan.traffic if plan is not None else None
    probes = {(record.probe_scenario, c) for c in record.probes}
    probes |= {(record.prefill_scenario, c) for c in record.prefill_probes}
    cells = sorted({(s.scenario, s.concurrency) for s in verdicts.cells
                    if s.arm == record.schedule_arm and (s.scenario, s.concurrency) not in probes
                    and s.scenario != record.prefill_scenario},
                   key=_order(analysis))
    # The batch the schedule arm held, read as the schedule reads it (_held_batches: the steady
    # reading, thin cells by their concurrency), both for the K it ran there and the traffic.
    batches = _held_batches(analysis, record.schedule_arm)
    weights = traffic_weights(cells, traffic, batches)
    rows = []
    for scenario, concurrency in cells:
        batch = batches.get((scenario, concurrency))
        key = batch if batch is not None and record.keyed_on == "running_batch" else concurrency
        rows.append(VerifiedCell(
            scenario, concurrency, batch, schedule_k_at(record.schedule, key),
            ratio_between(verdicts, scenario, concurrency, record.schedule_arm, record.fixed_arm),
            weights.get((scenario, concurrency), 0.0),
            runs_only(record.schedule, record.fixed_k, concurrency)))
    gain = combine_ratios([(row.weight, row.ratio) for row in rows if row.ratio is not None])
    boundary_cells = _boundary_cells(analysis, record, verdicts, probes)
    verdict = SINGLE
    if gain is not None and gain.low is not None and gain.high is not None:
        verdict, _ = classify(math.log(gain.low), math.log(gain.high),
                              verdicts.settings.band.log_edge)
    return VerificationResult(record, rows, gain, verdict,
                              "plan" if traffic is not None else "equal",
                              verdicts.settings.band, verdicts.settings.level, boundary_cells)


def nearest_boundary(ranges: list[list[int]], key: float) -> tuple[int, int, int] | None:
    """(boundary, K below, K above) of the boundary nearest a batch on a log2 scale (the
    boundary sits between its last batch b and b + 1, so at b + 0.5); None without one."""
    pairs = list(itertools.pairwise(sorted(ranges)))
    if not pairs:
        return None
    lo, hi = min(pairs, key=lambda pair: abs(math.log2(max(key, 1.0)) - math.log2(pair[0][1] + 0.5)))
    return lo[1], lo[2], hi[2]


def _boundary_cells(analysis: RunAnalysis, record: Verification, verdicts: Any,
                    probes: set[tuple[str | None, int]]) -> list[BoundaryCell]:
    """The schedule against the fixed K on each side of the nearest boundary, in every cell
    where the rerun planned both (the probes; verification runs from before the check ran no
    such arms, and those between it and the `cells` key ran them on every cell)."""
    arm_of = {k: name for name, k in record.fixed_arms.items()}
    if not arm_of:
        return []

    def planned(arm: str, scenario: str, concurrency: int) -> bool:
        return analysis.layout.plans(arm, (scenario, concurrency))

    held = _held_batches(analysis, record.schedule_arm)
    drafted = _drafted_k(analysis, record.schedule_arm)
    cells = sorted({(s.scenario, s.concurrency) for s in verdicts.cells
                    if s.arm == record.schedule_arm}, key=_order(analysis))
    out = []
    for scenario, concurrency in cells:
        batch = held.get((scenario, concurrency))
        key = batch if batch is not None and record.keyed_on == "running_batch" else concurrency
        found = nearest_boundary(record.schedule, float(concurrency))
        if found is None:
            continue
        boundary, k_low, k_high = found
        low_arm, high_arm = arm_of.get(k_low), arm_of.get(k_high)
        if low_arm is None or high_arm is None or not (
                planned(low_arm, scenario, concurrency) and planned(high_arm, scenario, concurrency)):
            continue  # a neighbouring K measures the probes only (engine/run/verify.py)

        def ratio(x: str, y: str, cell: CellId = (scenario, concurrency)) -> Ratio | None:
            return ratio_between(verdicts, cell[0], cell[1], x, y)

        out.append(BoundaryCell(
            scenario, concurrency, (scenario, concurrency) in probes,
            batch if record.keyed_on == "running_batch" else None,
            schedule_k_at(record.schedule, key), boundary, k_low, k_high,
            ratio(record.schedule_arm, low_arm), ratio(record.schedule_arm, high_arm),
            ratio(high_arm, low_arm), drafted.get((scenario, concurrency)),
            verdicts.settings.band.fraction, scenario == record.prefill_scenario))
    return out


def _held_batches(analysis: RunAnalysis, arm: str) -> dict[CellId, float]:
    """The running batch the arm held per cell: the mean over its ok measurements of each one's
    steady reading (the median of its inner /metrics readings), else of its mean; at least 1, as
    `schedule.batch_points` reads it. A measurement read fewer than MIN_RUNNING_SAMPLES times
    tells a ramp from nothing (the schedule's own rule, docs/decision.md "Readings"): a cell
    with such a one is placed by its concurrency."""
    seen: dict[CellId, list[float]] = {}
    thin: set[CellId] = set()
    for m in analysis.run.measurements:
        if m.arm != arm or not m.ok or m.server is None:
            continue
        if m.server.running_samples is not None and m.server.running_samples < MIN_RUNNING_SAMPLES:
            thin.add((m.scenario, m.concurrency))
            continue
        value = m.server.running_steady if m.server.running_steady is not None else m.server.running_mean
        if value is not None:
            seen.setdefault((m.scenario, m.concurrency), []).append(value)
    # At least one, as the schedule reads a held batch (schedule.batch_points)
    return {key: max(1.0, sum(v) / len(v)) for key, v in seen.items() if key not in thin}


def _drafted_k(analysis: RunAnalysis, arm: str) -> dict[CellId, float]:
    """Drafted tokens per draft of the arm per cell (vllm:spec_decode_num_draft_tokens over
    vllm:spec_decode_num_drafts, summed over its ok measurements): the mean K it drafted."""
    tokens: dict[CellId, float] = {}
    drafts: dict[CellId, float] = {}
    for m in analysis.run.measurements:
        if m.arm != arm or not m.ok or m.server is None:
            continue
        if m.server.drafts and m.server.draft_tokens is not None:
            key = (m.scenario, m.concurrency)
            tokens[key] = tokens.get(key, 0.0) + m.server.draft_tokens
            drafts[key] = drafts.get(key, 0.0) + m.server.drafts
    return {key: tokens[key] / drafts[key] for key in tokens if drafts[key] > 0}


def _order(analysis: RunAnalysis) -> Callable[[CellId], tuple[int, int]]:
    names = analysis.layout.scenario_names()
    return lambda key: (names.index(key[0]) if key[0] in names else len(names), key[1])


def verification_json(result: VerificationResult, simulated: bool,
                      incomplete: dict[str, Any] | None) -> dict[str, Any]:
    """A verification run's schedule.json: the schedule it reran, and whether it was confirmed
    (`status`, `deploy`), for a consumer that deploys only what a rerun confirmed."""
    record = result.record
    gain = result.gain
    reasons = [] if result.outcome == "confirmed" else [result.outcome]
    if result.collapses:
        reasons.append("collapse_at_boundary")
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
        # The cells where the schedule runs the fixed K throughout (A-vs-A checks; absent from
        # the files of runs before it, empty when none).
        "same_k_as_fixed_at": [{"scenario": c.scenario, "concurrency": c.concurrency}
                               for c in result.same_k],
        "boundary_check": None if not result.record.fixed_arms else {
            "rule": "collapse: the schedule's Total tok/s below the fixed K on both sides of the "
                    "nearest boundary, each by the verdict analysis (interval beyond the tie band)",
            "probes": [{"scenario": result.record.probe_scenario, "concurrency": c}
                       for c in result.record.probes],
            **({} if record.prefill_scenario is None else {"prefill_probe": {
                "scenario": record.prefill_scenario, "concurrencies": record.prefill_probes,
                "input_len": record.prefill_input_len, "output_len": record.prefill_output_len,
                "collapses_at": [c.concurrency for c in result.collapses if c.prefill]}}),
            "collapses_at": [{"scenario": c.scenario, "concurrency": c.concurrency,
                              "boundary": c.boundary} for c in result.collapses],
            "move_from": "plain_probes",  # the prefill probe's cells decide collapses only
            "boundaries": [{"between": [b.boundary, b.boundary + 1], "k": [b.k_low, b.k_high],
                            "move": b.move,
                            "collapses_at": [c.concurrency for c in b.collapses]}
                           for b in result.boundaries],
        },
    }
