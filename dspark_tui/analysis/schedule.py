"""The deployable answer of a K sweep: vLLM's `num_speculative_tokens_per_batch_size`
schedule keyed on the running batch the server measured, the `--speculative-config` JSON and
serve command, and for servers without the field the best single K for the plan's traffic and
the two-instance routing alternative. docs/decision.md says how each number is made."""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.decision import CellChoice, KDecision, Ratio, decide_k
from dspark_tui.analysis.layout import plan_snapshot
from dspark_tui.analysis.positions import SpecCounters, spec_counters
from dspark_tui.model import Plan
from dspark_tui.model.kinds import DEFAULT_KIND, ServerKind, server_kind
from dspark_tui.model.plan import SPECULATIVE_ARG
from dspark_tui.model.traffic import TrafficMix

SCHEDULE_SCHEMA_VERSION = 2  # 2: status, deploy, incomplete (docs/results-format.md)
DEFAULT_METHOD = "mtp"

CellId = tuple[str, int]
T = TypeVar("T")


plan_of = plan_snapshot


def run_plan(analysis: RunAnalysis) -> Plan | None:
    """The run's plan from its run.json snapshot, validated once per analysis."""
    return analysis.computed("run_plan", lambda: plan_of(analysis.run.manifest.plan or {}))


@dataclass(frozen=True)
class PlacedCells:
    """A decision's chosen cells placed for a schedule: each one's (mean, low, high) running
    batch (`batch_points`), what they are keyed on, and their share of the plan's traffic."""

    points: dict[CellId, tuple[float, float, float]]
    keyed_on: str
    weights: dict[CellId, float]
    traffic: TrafficMix | None

    @property
    def traffic_source(self) -> str:
        return "plan" if self.traffic is not None else "equal"


def place_cells(decision: KDecision, counters: dict[tuple[str, int, int], SpecCounters],
                plan: Plan | None) -> PlacedCells:
    """The set-up every schedule of a decision shares (the throughput one and the SLO one)."""
    points, keyed_on = batch_points(decision, counters)
    traffic = plan.traffic if plan is not None else None
    weights = cell_weights(decision, traffic, {key: p[0] for key, p in points.items()})
    return PlacedCells(points, keyed_on, weights, traffic)


def run_placed(analysis: RunAnalysis) -> PlacedCells | None:
    """The K decision's cells placed (`place_cells` over `decide_k` and its /metrics counters
    under the run's plan), once per analysis; None unless the run has a K decision with choices.
    The deploy answer's set-up and the home of `run_weights`."""
    decision = decide_k(analysis)
    if decision is None or not decision.choices:
        return None
    return analysis.computed("run_placed", lambda: place_cells(decision, spec_counters(decision),
                                                               run_plan(analysis)))


@dataclass(frozen=True)
class CellWeights:
    """`run_weights`' answer: each cell's share of the plan's traffic, and what the traffic's
    load histogram was laid on (`running_batch`: every cell's measured batch under its K
    choice; `client_concurrency`: the client's, by the plan's `concurrency` histogram or
    standing in for a batch no K choice measured; `equal`: the plan has no load histogram)."""

    weights: dict[CellId, float]
    keyed_on: str


def run_weights(analysis: RunAnalysis, cells: Sequence[CellId]) -> CellWeights:
    """The one home of the weights of a run's cells under its traffic: `traffic_weights` over
    `cells` with the plan's `[traffic]` and the running batch each cell was placed at for the
    best fixed K (`run_placed`: the batch the server held under the cell's K choice, or every
    cell's client concurrency when some cell lacks readings). Over the K decision's own cells it
    is exactly the deploy answer's `weights` (the same call, the cells in the decision's order).
    A cell the decision has no choice for (fewer than two K arms measured there), or a run
    without a K decision, has no chosen arm whose batch places it: its concurrency stands in,
    and `keyed_on` says `client_concurrency` unless every cell was placed on a measured batch."""
    placed = run_placed(analysis)
    plan = run_plan(analysis)
    traffic = plan.traffic if plan is not None else None
    points = placed.points if placed is not None else {}
    wanted = set(cells)
    ordered = [key for key in points if key in wanted] + [key for key in cells if key not in points]
    weights = traffic_weights(ordered, traffic, {key: p[0] for key, p in points.items()})
    if traffic is None or not (traffic.concurrency or traffic.running_batch):
        return CellWeights(weights, "equal")
    measured = (not traffic.concurrency and placed is not None and placed.keyed_on == "running_batch"
                and wanted <= set(points))
    return CellWeights(weights, "running_batch" if measured else "client_concurrency")


def schedule_of(decision: KDecision, counters: dict[tuple[str, int, int], SpecCounters],
                placed: PlacedCells, plan: Plan | None) -> Schedule | None:
    """`build_schedule` over placed cells, bounded by the plan's batch limit; ValueError when
    cells sharing an anchor have no K in common (an SLO choice can leave none)."""
    max_seqs, max_source = max_num_seqs_of(plan)
    return build_schedule(decision, placed.points, placed.keyed_on, placed.weights, max_seqs,
                          max_source, samples=cell_samples(decision, counters),
                          thin=thin_cells(decision, counters))


def schedule_config(schedule: Schedule, method: str, plan: Plan | None) -> dict[str, Any] | None:
    """The speculative config that deploys a schedule with the plan's method and keys."""
    return speculative_config(schedule, method, existing_speculative_config(plan), kind_of(plan))


# -- traffic ------------------------------------------------------------------------------------

def cell_weights(decision: KDecision, traffic: TrafficMix | None,
                 batch_of: dict[CellId, float]) -> dict[CellId, float]:
    """Each cell's share of the traffic: scenario weight x its load's weight within the scenario
    (a concurrency or batch size off the grid goes to the nearest cell on a log2 scale).
    Without `[traffic]`: every scenario alike, every concurrency alike within it."""
    return traffic_weights([choice.key for choice in decision.choices], traffic, batch_of)


def traffic_weights(cell_ids: list[CellId], traffic: TrafficMix | None,
                    batch_of: dict[CellId, float]) -> dict[CellId, float]:
    """`cell_weights` for any list of (scenario, concurrency) cells (a verification run's)."""
    by_scenario: dict[str, list[CellId]] = {}
    for key in cell_ids:
        by_scenario.setdefault(key[0], []).append(key)
    weights: dict[CellId, float] = {}
    for scenario, cells in by_scenario.items():
        share = 1.0 if traffic is None or not traffic.scenarios else traffic.scenarios.get(scenario, 0.0)
        load = _load_weights(cells, traffic, batch_of)
        for cell in cells:
            weights[cell] = share * load.get(cell, 0.0)
    total = sum(weights.values())
    if total <= 0:  # the traffic names nothing measured: fall back to equal weights
        return {cell: 1.0 / len(weights) for cell in weights} if weights else {}
    return {cell: w / total for cell, w in weights.items()}


def _load_weights(cells: list[CellId], traffic: TrafficMix | None,
                  batch_of: dict[CellId, float]) -> dict[CellId, float]:
    if traffic is None or not (traffic.concurrency or traffic.running_batch):
        return {cell: 1.0 / len(cells) for cell in cells}
    if traffic.concurrency:
        histogram, position = traffic.concurrency, {cell: float(cell[1]) for cell in cells}
    else:
        histogram, position = traffic.running_batch, {cell: batch_of.get(cell, cell[1]) for cell in cells}
    out = dict.fromkeys(cells, 0.0)
    for value, weight in histogram.items():
        nearest = min(cells, key=lambda cell: abs(math.log2(max(position[cell], 1e-9)) - math.log2(value)))
        out[nearest] += weight
    total = sum(out.values())
    return {cell: w / total for cell, w in out.items()} if total > 0 else out


# -- expected gains over the traffic ------------------------------------------------------------

@dataclass(frozen=True)
class Gain:
    """Traffic-weighted geometric mean of per-cell ratios, with the weighted mean of the cells'
    interval ends (exact when the cells' errors move together, as the session term makes them;
    conservative otherwise)."""

    ratio: float
    low: float | None
    high: float | None
    cells: int


def weighted_gain(decision: KDecision, weights: dict[CellId, float],
                  k_for: dict[CellId, int], k_against: dict[CellId, int],
                  family: bool = True) -> Gain | None:
    """The traffic-weighted gain of one choice of K per cell over another. Its cells' intervals
    are at the family level (decision.family_alpha) unless `family` is False: every gain the
    answer reports sets a K chosen among the sweep's arms against the others."""
    weighted: list[tuple[float, Ratio]] = []
    for cell, weight in weights.items():
        kx, ky = k_for.get(cell), k_against.get(cell)
        if weight <= 0 or kx is None or ky is None:
            continue
        ratio = decision.ratio(cell[0], cell[1], kx, ky, family=family)
        if ratio is not None:
            weighted.append((weight, ratio))
    return combine_ratios(weighted)


def combine_ratios(weighted: list[tuple[float, Ratio]]) -> Gain | None:
    """The weighted geometric mean of per-cell ratios; its interval the weighted mean of the
    cells' interval ends on the log scale (none unless every cell has one)."""
    total = mid = low = high = 0.0
    intervals = True
    count = 0
    for weight, ratio in weighted:
        if weight <= 0:
            continue
        total += weight
        count += 1
        mid += weight * math.log(ratio.value)
        if ratio.has_interval and ratio.low and ratio.high:
            low += weight * math.log(ratio.low)
            high += weight * math.log(ratio.high)
        else:
            intervals = False
    if total <= 0:
        return None
    if not intervals:
        return Gain(math.exp(mid / total), None, None, count)
    return Gain(math.exp(mid / total), math.exp(low / total), math.exp(high / total), count)


# What an answer rests on (schedule.json's `status`, every screen's word for it): every
# comparison it needs decided, some still unsure, or single measurements (no interval at all).
DECIDED = "decided"
UNSURE_ANSWER = "unsure"
SINGLE_ANSWER = "single"


@dataclass(frozen=True)
class BestFixed(Generic[T]):
    """What `best_fixed` answers: the `option` to run everywhere, the `leader` (the highest
    scoring option on the traffic), the option's expected gain over each other option, and
    `status` (DECIDED, UNSURE_ANSWER or SINGLE_ANSWER, as SingleK says)."""

    option: T
    leader: T
    gains: dict[T, Gain]
    status: str


def best_fixed(options: Sequence[T], score: Callable[[T], float],
               gain_of: Callable[[T, T], Gain | None], floor: float,
               by_cost: bool = True) -> BestFixed[T] | None:
    """The best fixed setting's rule, its one home (the best fixed K of a sweep, the best fixed
    arm under an SLO; docs/decision.md, "Best single K"). `options` in the order of their cost
    (the smallest K first); the leader is the highest `score` (a tie to the cheaper). With
    `by_cost`, the answer is the first option whose expected gain over the leader has its lower
    end at or above the tie band's `floor` (shown within the band; a point estimate stands in
    without an interval), else the leader; without it (options with no cost order, arms that
    are no K values) the leader. The answer is DECIDED when its gain over every other option has
    a lower end at or above the floor, SINGLE_ANSWER when some gain has no interval (or is
    missing: an option it was never compared with is not shown behind it), else UNSURE_ANSWER —
    and then a cheaper option gives way to the leader, which is named as such. `gain_of(x, y)`
    is x over y on the traffic at the family level of the caller's comparisons."""
    if not options:
        return None
    order = {option: i for i, option in enumerate(options)}
    top = max(options, key=lambda o: (score(o), -order[o]))
    chosen = top
    if by_cost:
        for option in options:
            if option == top:
                break
            lower = _lower(gain_of(option, top))  # single measurements: the point estimate
            if lower is not None and lower >= floor:
                chosen = option
                break

    def judged(option: T) -> tuple[dict[T, Gain], str]:
        gains = {other: g for other in options if other != option
                 if (g := gain_of(option, other)) is not None}
        if len(gains) < len(options) - 1 or any(g.low is None or g.high is None for g in gains.values()):
            return gains, SINGLE_ANSWER
        if all((_lower(g) or 0.0) >= floor for g in gains.values()):
            return gains, DECIDED
        return gains, UNSURE_ANSWER

    gains, status = judged(chosen)
    if status == UNSURE_ANSWER and chosen != top:  # the cheaper option is not shown best: the leader
        chosen = top
        gains, status = judged(top)
    return BestFixed(chosen, top, gains, status)


@dataclass(frozen=True)
class SingleK:
    """The best fixed K for the traffic, by the per-cell choice's rule (decision.CellChoice):
    the smallest K SHOWN to be within the tie band of the highest scoring K (the lower end of its
    traffic-weighted ratio to the leader >= 1 - tie band), else the leader itself.

    `status` "decided" when the K is shown within the band of, or above, every other K;
    "unsure" when some K may still beat it by more than the band — then no fixed K is shown best
    and `k` is the leader (the answer names it as such, and `--verify` measures against it, so
    the realised gain is not inflated by a weaker K); "single" without intervals (point
    estimates, as the per-cell choice). The rule is `best_fixed`'s, which the best fixed arm
    under an SLO (analysis/slo.py) follows too."""

    k: int
    gains: dict[int, Gain]  # over each other K
    leader: int = -1  # the highest scoring K on the traffic
    status: str = DECIDED

    @property
    def shown_best(self) -> bool:
        return self.status == DECIDED


def _lower(gain: Gain | None) -> float | None:
    if gain is None:
        return None
    return gain.low if gain.low is not None else gain.ratio


def best_single_k(decision: KDecision, weights: dict[CellId, float]) -> SingleK | None:
    cells = [cell for cell, w in weights.items() if w > 0]
    complete = [k for k in decision.ks
                if all(k in choice.throughput for choice in decision.choices if choice.key in cells)]

    def score(k: int) -> float:
        return sum(weights[choice.key] * math.log(choice.throughput[k])
                   for choice in decision.choices if choice.key in cells)

    def gain_of(k: int, other: int) -> Gain | None:
        return weighted_gain(decision, weights, dict.fromkeys(cells, k), dict.fromkeys(cells, other))

    best = best_fixed(complete, score, gain_of, decision.band.floor)
    return None if best is None else SingleK(best.option, best.gains, best.leader, best.status)


@dataclass(frozen=True)
class Routing:
    """Two instances with fixed K, traffic at client concurrency <= `threshold` on the first."""

    low_k: int
    high_k: int
    threshold: int
    gain: Gain | None  # over the best single K


def best_routing(decision: KDecision, weights: dict[CellId, float], single: SingleK) -> Routing | None:
    cells = [choice for choice in decision.choices if weights.get(choice.key, 0.0) > 0]
    thresholds = sorted({choice.concurrency for choice in cells})[:-1]
    if not thresholds:
        return None
    best: tuple[float, int, int, int] | None = None
    for threshold in thresholds:
        for low_k in decision.ks:
            for high_k in decision.ks:
                if low_k == high_k:
                    continue
                score = 0.0
                for choice in cells:
                    k = low_k if choice.concurrency <= threshold else high_k
                    if k not in choice.throughput:
                        break
                    score += weights[choice.key] * math.log(choice.throughput[k])
                else:
                    if best is None or score > best[0]:
                        best = (score, low_k, high_k, threshold)
    if best is None:
        return None
    _, low_k, high_k, threshold = best
    k_for = {c.key: (low_k if c.concurrency <= threshold else high_k) for c in cells}
    gain = weighted_gain(decision, weights, k_for, {c.key: single.k for c in cells})
    return Routing(low_k, high_k, threshold, gain)


# -- the schedule -------------------------------------------------------------------------------

# The running batch of a cell is the mean of its window's readings of num_requests_running; a
# measurement with fewer readings than this cannot tell the ramp at the window's ends from its
# steady state (issue 21: 2 readings read a c=8 cell's batch as 1, its peak 7), and the
# schedule is then keyed on the client's concurrency instead, saying why.
MIN_RUNNING_SAMPLES = 4
# Cells join one anchor when their running batches overlap; an anchor whose cells' client
# concurrencies differ by more than this factor (neighbours on a doubling grid differ by 2) is
# named in the report and schedule.json: one K then serves loads the plan meant as different.
MERGE_CONCURRENCY_SPAN = 2.0


@dataclass(frozen=True)
class Anchor:
    """Cells whose running-batch spreads overlap, and the one K they get."""

    batch: float  # traffic-weighted mean running batch of the member cells
    low: float
    high: float
    k: int
    cells: list[CellChoice]
    samples: int | None = None  # readings of the running batch behind it (None: not counted)

    @property
    def concurrency_span(self) -> float:
        concurrencies = [c.concurrency for c in self.cells]
        return max(concurrencies) / min(concurrencies)

    @property
    def wide(self) -> bool:
        """Cells of concurrencies further apart than MERGE_CONCURRENCY_SPAN share this K."""
        return self.concurrency_span > MERGE_CONCURRENCY_SPAN


@dataclass(frozen=True)
class ThinCell:
    """A cell whose running batch rests on too few readings to key the schedule on."""

    scenario: str
    concurrency: int
    k: int
    samples: int  # the fewest readings of any of its measurements


@dataclass
class Schedule:
    ranges: list[list[int]]  # [[lo, hi, K], ...], inclusive, contiguous from 1
    max_num_seqs: int
    max_num_seqs_source: str  # "plan" | "vllm-default"
    keyed_on: str  # "running_batch" | "client_concurrency"
    largest_measured_batch: int
    anchors: list[Anchor] = field(default_factory=list)
    # Why it is keyed on the client's concurrency: no /metrics, or too few readings (`thin`).
    thin: list[ThinCell] = field(default_factory=list)
    covered: list[Anchor] = field(default_factory=list)  # anchors within a batch of the previous

    @property
    def wide_anchors(self) -> list[Anchor]:
        return [a for a in self.anchors if a.wide]

    def sources(self, lo: int, hi: int) -> list[str]:
        """The cells whose measured batch falls in [lo, hi]: where a range's K comes from."""
        return [f"{c.scenario} c={c.concurrency}" for a in self.anchors
                if lo <= max(1, round(a.batch)) <= hi for c in a.cells]

    def k_at(self, batch: float) -> int:
        b = max(1, round(batch))
        for lo, hi, k in self.ranges:
            if lo <= b <= hi:
                return k
        return self.ranges[-1][2]

    @property
    def max_k(self) -> int:
        return max(k for _, _, k in self.ranges)


def batch_points(decision: KDecision, counters: dict[tuple[str, int, int], SpecCounters]
                 ) -> tuple[dict[CellId, tuple[float, float, float]], str]:
    """(mean, low, high) running batch of each cell under its chosen K: the batch the window
    held (the median reading without its ends, `running_steady`; the mean for files from before
    it) of `vllm:num_requests_running` and its [held, peak] spread. Without /metrics in every cell, or
    with a cell whose measurements read the batch fewer than MIN_RUNNING_SAMPLES times
    (`thin_cells`), the client's concurrency for all cells (and the key says so)."""
    points: dict[CellId, tuple[float, float, float]] = {}
    by_concurrency = ({ch.key: (float(ch.concurrency),) * 3 for ch in decision.choices},
                      "client_concurrency")
    if thin_cells(decision, counters):
        return by_concurrency
    for choice in decision.choices:
        counter = counters.get((choice.scenario, choice.concurrency, choice.k))
        if counter is None or counter.running_mean is None:
            return by_concurrency
        held = counter.running_steady if counter.running_steady is not None else counter.running_mean
        mean = max(1.0, held)
        peak = max(mean, counter.running_peak if counter.running_peak is not None else mean)
        points[choice.key] = (mean, mean, peak)
    return points, "running_batch"


def thin_cells(decision: KDecision, counters: dict[tuple[str, int, int], SpecCounters]) -> list[ThinCell]:
    """The chosen cells whose running batch some measurement read fewer than
    MIN_RUNNING_SAMPLES times (cells whose readings were not counted, older files, pass)."""
    out = []
    for choice in decision.choices:
        counter = counters.get((choice.scenario, choice.concurrency, choice.k))
        fewest = None if counter is None or counter.running_mean is None else counter.running_samples_min
        if fewest is not None and fewest < MIN_RUNNING_SAMPLES:
            out.append(ThinCell(choice.scenario, choice.concurrency, choice.k, fewest))
    return out


def cell_samples(decision: KDecision, counters: dict[tuple[str, int, int], SpecCounters]
                 ) -> dict[CellId, int | None]:
    """Readings of the running batch behind each chosen cell (None: not counted)."""
    out: dict[CellId, int | None] = {}
    for choice in decision.choices:
        counter = counters.get((choice.scenario, choice.concurrency, choice.k))
        out[choice.key] = None if counter is None else counter.running_samples
    return out


def build_schedule(decision: KDecision, points: dict[CellId, tuple[float, float, float]],
                   keyed_on: str, weights: dict[CellId, float], max_num_seqs: int,
                   max_num_seqs_source: str, samples: dict[CellId, int | None] | None = None,
                   thin: list[ThinCell] | None = None) -> Schedule | None:
    """Anchors: cells grouped where their batch spreads overlap; one K per anchor (a single
    cell's own choice; for several, the K with the best traffic-weighted throughput relative to
    each cell's top, the smallest within the tie band). A batch between two anchors takes the
    nearer one on a log2 scale; below the first anchor the first K holds, beyond the last the
    last K holds up to max_num_seqs."""
    by_key = {c.key: c for c in decision.choices}
    order = sorted(points, key=lambda key: points[key][0])
    if not order:
        return None
    # A cell joins a group when its mean batch lies within the group's first cell's
    # [mean, peak]: their batch distributions overlap. (No chaining: a ramp of neighbouring
    # concurrencies must not melt into one group.)
    groups: list[list[CellId]] = []
    for key in order:
        mean = points[key][0]
        if groups and mean <= points[groups[-1][0]][2]:
            groups[-1].append(key)
        else:
            groups.append([key])
    anchors = [_anchor(decision, [by_key[k] for k in group], points, weights) for group in groups]
    if keyed_on == "running_batch" and samples is not None:
        anchors = [_with_samples(a, samples) for a in anchors]
    covered: list[Anchor] = []
    ranges: list[list[int]] = []
    end = 0
    for i, anchor in enumerate(anchors):
        if i + 1 < len(anchors):
            cut = math.floor(math.sqrt(anchor.batch * anchors[i + 1].batch))
        else:
            cut = max_num_seqs
        cut = min(cut, max_num_seqs)
        if cut <= end:
            covered.append(anchor)  # within one batch size of the previous: its range covers it
            continue
        ranges.append([end + 1, cut, anchor.k])
        end = cut
        if end >= max_num_seqs:
            break
    if end < max_num_seqs:
        ranges[-1][1] = max_num_seqs
    merged: list[list[int]] = []
    for lo, hi, k in ranges:
        if merged and merged[-1][2] == k:
            merged[-1][1] = hi
        else:
            merged.append([lo, hi, k])
    largest = max(math.ceil(points[key][2]) for key in order)
    return Schedule(merged, max_num_seqs, max_num_seqs_source, keyed_on, largest, anchors,
                    thin=list(thin or []), covered=covered)


def _with_samples(anchor: Anchor, samples: dict[CellId, int | None]) -> Anchor:
    counts = [samples.get(c.key) for c in anchor.cells]
    known = [n for n in counts if n is not None]
    total = sum(known) if counts and len(known) == len(counts) else None
    return Anchor(anchor.batch, anchor.low, anchor.high, anchor.k, anchor.cells, total)


def _anchor(decision: KDecision, cells: list[CellChoice], points: dict[CellId, tuple[float, float, float]],
            weights: dict[CellId, float]) -> Anchor:
    w = {c.key: weights.get(c.key, 0.0) for c in cells}
    if sum(w.values()) <= 0:
        w = {c.key: 1.0 for c in cells}
    total = sum(w.values())
    batch = sum(w[c.key] * points[c.key][0] for c in cells) / total
    low = min(points[c.key][1] for c in cells)
    high = max(points[c.key][2] for c in cells)
    if len(cells) == 1:
        return Anchor(batch, low, high, cells[0].k, cells)
    candidates = [k for k in decision.ks if all(k in c.throughput for c in cells)]

    def score(k: int) -> float:
        return sum(w[c.key] * math.log(c.throughput[k] / c.throughput[c.top_k]) for c in cells) / total

    best = max(score(k) for k in candidates)
    floor = best + decision.band.log_floor
    k = min(k for k in candidates if score(k) >= floor)
    return Anchor(batch, low, high, k, cells)


# -- the command line ---------------------------------------------------------------------------

def flag_value(command: list[str], flag: str) -> str | None:
    """The value of `--flag VALUE` or `--flag=VALUE` in an argv list, None when absent."""
    for i, part in enumerate(command):
        if part == flag and i + 1 < len(command):
            return command[i + 1]
        if part.startswith(flag + "="):
            return part.split("=", 1)[1]
    return None


def kind_of(plan: Plan | None) -> ServerKind:
    """The plan's server kind; the default kind for a run whose plan snapshot is gone."""
    return plan.kind if plan is not None else server_kind(DEFAULT_KIND)


def max_num_seqs_of(plan: Plan | None) -> tuple[int, str]:
    """The batch limit (--max-num-seqs) from the plan's server command, else the kind's
    default (vLLM's: 256 where the device is not known; the schedule's last range says "and
    beyond" in any case)."""
    kind = kind_of(plan)
    if plan is not None:
        value = flag_value(plan.server_argv(plan.arms[0]), kind.batch_limit_flag)
        if value is not None and value.isdigit() and int(value) > 0:
            return int(value), "plan"
    return kind.default_batch_limit, f"{kind.name}-default"


def speculative_config(schedule: Schedule, method: str, base: dict[str, Any] | None = None,
                       kind: ServerKind | None = None) -> dict[str, Any] | None:
    """The kind's speculative config for the schedule (vLLM's --speculative-config:
    num_speculative_tokens is the schedule's largest K). None when it never speculates."""
    return (kind or kind_of(None)).schedule_config(schedule.ranges, method, base)


def existing_speculative_config(plan: Plan | None) -> dict[str, Any]:
    """The method and its keys the plan's arms speculate with: the first speculating arm's
    `[arms.speculative]` table without K, else the command's own speculative-config JSON."""
    if plan is None:
        return {}
    kind = plan.kind
    if plan.uses_speculative_tables():
        for arm in plan.arms:
            if arm.speculative is not None and arm.speculative.k > 0:
                return {key: value for key, value in arm.speculative.config().items()
                        if key not in kind.k_keys}
        return {}
    text = flag_value(plan.server.command, kind.spec_config_flag)
    if text is None:
        return {}
    try:
        found = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def method_for(plan: Plan | None) -> tuple[str, str]:
    """The speculative method: the plan's own --speculative-config method, else `dspark` for a
    DSpark model, else `mtp` (said in the report: check it against the drafter you serve)."""
    found = existing_speculative_config(plan).get("method")
    if isinstance(found, str) and found:
        return found, "plan"
    if plan is not None and "dspark" in f"{plan.model} {plan.backend_label}".lower():
        return "dspark", "model name"
    return DEFAULT_METHOD, "default"


def without_k_flags(command: list[str], compared_var: str,
                    kind: ServerKind | None = None) -> list[str]:
    """The command without the flag carrying `{compared_var}` (`--spec-tokens {spec_tokens}`,
    `--k={spec_tokens}`), without any `--speculative-config` and without `"{speculative}"`:
    where a schedule's goes."""
    flag = (kind or kind_of(None)).spec_config_flag
    out: list[str] = []
    skip = False
    placeholder = f"{{{compared_var}}}"
    for i, part in enumerate(command):
        if skip:
            skip = False
            continue
        following = command[i + 1] if i + 1 < len(command) else ""
        if part.startswith("-") and (placeholder in following or part == flag):
            skip = True
            continue
        if placeholder in part or part.startswith(flag + "=") or part == SPECULATIVE_ARG:
            continue
        out.append(part)
    return out


def serve_command(plan: Plan, compared_var: str, config: dict[str, Any] | None) -> list[str]:
    """The plan's server command with the compared K flag (and any --speculative-config)
    replaced by the schedule's --speculative-config; placeholders filled from the plan. A plan
    that says `"{speculative}"` gets the schedule's config there, as an arm's table would."""
    kind = plan.kind
    if plan.server.port_picked:  # a port the run picked means nothing to the user: left out
        plan = plan.model_copy(update={"server": plan.server.model_copy(
            update={"command": without_port_flag(plan.server.command)})})
    values = {k: v for k, v in plan.template_vars(plan.arms[0]).items() if k != compared_var}
    values["python"] = "python"

    def fill(part: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), part)

    if plan.uses_speculative_tables():
        filled: list[str] = []
        for part in plan.server.command:
            filled += kind.speculative_args(config) if part == SPECULATIVE_ARG else [fill(part)]
        return filled
    filled = [fill(part) for part in without_k_flags(plan.server.command, compared_var, kind)]
    if config is not None:
        filled += kind.speculative_args(config)
    return filled


def without_port_flag(command: list[str]) -> list[str]:
    """The command without the flag that gives the server `{port}` (`--port {port}` or
    `--port={port}`); a port written out in the command is the user's and stays."""
    out: list[str] = []
    skip = False
    for index, part in enumerate(command):
        if skip:
            skip = False
            continue
        if part.startswith("-") and "=" in part and "{port}" in part.split("=", 1)[1]:
            continue
        following = command[index + 1] if index + 1 < len(command) else ""
        if part.startswith("-") and "=" not in part and "{port}" in following:
            skip = True
            continue
        out.append(part)
    return out


def shell_line(argv: list[str]) -> str:
    return shlex.join(argv)
