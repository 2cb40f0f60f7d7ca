"""Which K to run where: the best K per cell, where neighbouring K values break even, and
where speculation stops paying against K = 0. Every choice rests on the verdict analysis
(analysis/verdicts.py) — its ratios, intervals and tie band; nothing here computes an interval
of its own. The method is in docs/decision.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from dspark_tui.analysis.verdicts import SINGLE, RunVerdicts, Verdict
from dspark_tui.analysis.verdicts import family_alpha as family_alpha  # its home; named here too
from dspark_tui.model.statistics import TieBand
from dspark_tui.stats.paired import classify

if TYPE_CHECKING:  # analysis imports live.py, which imports this module
    from dspark_tui.analysis.analysis import RunAnalysis

T = TypeVar("T")


@dataclass(frozen=True)
class Ratio:
    """Total tok/s of one arm over another's in one cell, with the verdict analysis' interval."""

    value: float
    low: float | None
    high: float | None
    verdict: Verdict

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None and self.verdict != SINGLE

    @property
    def upper(self) -> float:
        """The interval's upper end; the point estimate for a single measurement."""
        return self.high if self.has_interval and self.high is not None else self.value

    @property
    def lower(self) -> float:
        return self.low if self.has_interval and self.low is not None else self.value


def ratio_between(verdicts: RunVerdicts, scenario: str, concurrency: int, x: str, y: str,
                  alpha: float | None = None) -> Ratio | None:
    """x / y in one cell, read from the all-pairs analysis in whichever order it holds them;
    with `alpha`, its interval at that two-sided level instead of the look's (a family)."""
    if x == y:
        return Ratio(1.0, 1.0, 1.0, Verdict.TIE)
    pair = verdicts.pair(scenario, concurrency, x, y)
    if pair is None:
        return None
    ci_low, ci_high = pair.ci_low, pair.ci_high
    verdict = pair.verdict
    if alpha is not None and (family := pair.interval_at(alpha)) is not None:
        # The verdict is the family interval's, against the same tie band: a choice among K
        # arms that rests on a "tie" or "wins" must rest on it at the family's level.
        ci_low, ci_high = family
        verdict, _ = classify(math.log(ci_low), math.log(ci_high), verdicts.settings.band.log_edge)
    if pair.b == x:
        return Ratio(pair.ratio, ci_low, ci_high, verdict)
    low = None if ci_high is None else 1.0 / ci_high
    high = None if ci_low is None else 1.0 / ci_low
    return Ratio(1.0 / pair.ratio, low, high, verdict)


def family_ratio(verdicts: RunVerdicts, scenario: str, concurrency: int, x: str, y: str,
                 arms: int) -> Ratio | None:
    """x / y in one cell as a comparison behind a best picked among `arms` arms: its interval
    and verdict at `family_alpha(look_alpha, arms)` (the one level of every such comparison: the
    K decision's per-cell choice, the best fixed K, the choice under an SLO)."""
    return ratio_between(verdicts, scenario, concurrency, x, y,
                         family_alpha(verdicts.settings.look_alpha, arms))


def smallest_within_band(options: Sequence[T], vs_top: Mapping[T, Ratio], top: T, floor: float) -> T:
    """The per-cell choice's rule, its one home (the K decision and the choice under an SLO):
    of `options` in the order of their cost (the smallest K first), the first whose ratio
    against the `top` has its lower end at or above the band's `floor` — shown within the tie
    band of the top; a single measurement's point estimate stands in for it — else the top.
    An option without a ratio in `vs_top` is never taken. The ratios are the caller's, at the
    family level (`family_ratio`)."""
    for option in options:
        ratio = vs_top.get(option)
        if option == top or (ratio is not None and ratio.lower >= floor):
            return option
    return top


@dataclass(frozen=True)
class CellChoice:
    """The K to run in one cell: the smallest K SHOWN to be within the tie band of the cell's top
    arm (its ratio's lower bound against the top is >= 1 - tie_band), else the top itself.

    Not "not shown worse" (the upper bound): with two rounds of an eight-arm sweep that let K=1
    through at c=64 on an interval of -19.9 % .. +9.4 %, and the verification rerun measured it
    17 % slower than K=3. Only a K whose whole interval sits within the band of the top is cheaper
    at no shown cost; otherwise the top arm is the safe choice (docs/decision.md)."""

    scenario: str
    concurrency: int
    k: int
    top_k: int
    throughput: dict[int, float]  # mean Total tok/s per K measured in the cell
    vs_top: dict[int, Ratio]  # each K against the top
    vs_baseline: Ratio | None  # the choice against K = 0
    top_vs_runner_up: Ratio | None
    runner_up_k: int | None
    verified: bool  # every comparison the choice rests on has an interval

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario, self.concurrency)

    @property
    def status(self) -> str:
        """`decided` when the comparison the choice rests on is a win, a tie or in band;
        `unsure` when it is not; `single` without intervals (schedule.json, every screen)."""
        if not self.verified:
            return "single"
        return "decided" if self.verdict in (Verdict.WINS, Verdict.TIE, "in band") else "unsure"

    @property
    def verdict(self) -> str:
        """What the choice rests on: the top's verdict over the runner-up when the top is
        chosen, else the chosen K's against the top (`in band` where the top is shown faster,
        but by less than the tie band); `unverified` without intervals."""
        if not self.verified:
            return "unverified"
        if self.k == self.top_k:
            return self.top_vs_runner_up.verdict if self.top_vs_runner_up is not None else "unverified"
        ratio = self.vs_top.get(self.k)
        if ratio is None:
            return "unverified"
        return "in band" if ratio.verdict == Verdict.WINS else ratio.verdict


@dataclass(frozen=True)
class Crossing:
    """Where a ratio curve crosses 1 in one scenario, interpolated in log2 concurrency.

    `at` None: no crossing inside the grid. `low`/`high` come from where the interval's ends
    cross; None on a side means beyond the grid on that side (or no interval at all when
    `has_interval` is False)."""

    at: float | None
    low: float | None
    high: float | None
    has_interval: bool
    sign_first: int  # +1: the first curve's side (higher K, or speculation) leads at low c
    sign_last: int
    crossings: int


@dataclass(frozen=True)
class BreakEven:
    scenario: str
    low_k: int
    high_k: int
    crossing: Crossing


@dataclass(frozen=True)
class SpeculationStop:
    """Against K = 0: the best K > 0 at each concurrency, and where it stops paying."""

    scenario: str
    crossing: Crossing
    first_zero_choice: int | None  # the lowest concurrency whose choice is K = 0


@dataclass
class KDecision:
    analysis: RunAnalysis
    k_of: dict[str, int]
    band: TieBand  # the run's (model/statistics.py)
    choices: list[CellChoice] = field(default_factory=list)
    break_evens: list[BreakEven] = field(default_factory=list)
    stops: list[SpeculationStop] = field(default_factory=list)
    # Adaptive-verification arms beside the fixed K ones (layout.ks.adaptive): not choices,
    # compared against the choice per cell (analysis/adaptive.py).
    adaptive: list[str] = field(default_factory=list)
    # Every comparison at one look's level instead of the family's: only for the reference
    # rates in bench/noise_processes.py (what the family level buys), never for an answer.
    per_comparison: bool = False

    @property
    def arm_of(self) -> dict[int, str]:
        return {k: arm for arm, k in self.k_of.items()}

    @property
    def ks(self) -> list[int]:
        return sorted(self.k_of.values())

    @property
    def max_k(self) -> int:
        return max(self.k_of.values())

    @property
    def verified(self) -> bool:
        """Every comparison a choice rests on has an interval (rounds >= 2)."""
        return bool(self.choices) and all(c.verified for c in self.choices)

    @property
    def unsure_choices(self) -> list[CellChoice]:
        """Choices whose deciding comparison has an interval too wide to say (issue 21: 2
        rounds, intervals -99.9 … +238,000 %, every one unsure)."""
        return [c for c in self.choices if c.verdict == "unsure"]

    @property
    def settled(self) -> bool:
        """Verified and decided: what schedule.json's `verified` says (an interval that decides
        nothing verifies nothing)."""
        return self.verified and not self.unsure_choices

    def choice(self, scenario: str, concurrency: int) -> CellChoice | None:
        for c in self.choices:
            if c.key == (scenario, concurrency):
                return c
        return None

    def ratio(self, scenario: str, concurrency: int, kx: int, ky: int,
              family: bool = False) -> Ratio | None:
        """K = kx over K = ky in one cell; `family`: its interval at `family_alpha` (the level
        of the comparisons behind a best fixed K, a schedule's gain or routing)."""
        verdicts = self.analysis.verdicts
        arms = self.arm_of
        if verdicts is None or kx not in arms or ky not in arms:
            return None
        if family and not self.per_comparison:
            return family_ratio(verdicts, scenario, concurrency, arms[kx], arms[ky], len(self.k_of))
        return ratio_between(verdicts, scenario, concurrency, arms[kx], arms[ky])


def decide_k(analysis: RunAnalysis, require_sweep: bool = True) -> KDecision | None:
    """The K decision of a run, or None when its arms are not a K sweep (or, with
    `require_sweep` False, not K values at all); computed once per analysis."""
    return analysis.computed(("decide_k", require_sweep), lambda: _decide_k(analysis, require_sweep))


def _decide_k(analysis: RunAnalysis, require_sweep: bool) -> KDecision | None:
    ks = analysis.layout.ks
    if ks is None or (require_sweep and not ks.is_sweep) or analysis.verdicts is None:
        return None
    # The decision is made over the fixed-K arms; adaptive ones are compared against it.
    k_of = dict(ks.fixed)
    decision = KDecision(analysis, k_of, analysis.verdicts.settings.band, adaptive=list(ks.adaptive))
    means: dict[tuple[str, int], dict[int, float]] = {}
    for stats in analysis.verdicts.cells:
        if stats.arm in k_of:
            means.setdefault((stats.scenario, stats.concurrency), {})[k_of[stats.arm]] = stats.mean
    for scenario in analysis.layout.scenario_names():
        for concurrency in _concurrencies(means, scenario):
            choice = _choose(decision, scenario, concurrency, means[(scenario, concurrency)])
            if choice is not None:
                decision.choices.append(choice)
    for scenario in analysis.layout.scenario_names():
        decision.break_evens.extend(_break_evens(decision, scenario))
        stop = _speculation_stop(decision, scenario)
        if stop is not None:
            decision.stops.append(stop)
    return decision


def _concurrencies(means: dict[tuple[str, int], dict[int, float]], scenario: str) -> list[int]:
    return sorted(c for s, c in means if s == scenario)


def _choose(decision: KDecision, scenario: str, concurrency: int,
            throughput: dict[int, float]) -> CellChoice | None:
    if len(throughput) < 2:
        return None
    top_k = max(throughput, key=lambda k: (throughput[k], -k))
    # Every comparison the choice rests on is at the family level (issue 22): the top was picked
    # for being on top of the cell's K arms, and the cheaper K for being within its band.
    vs_top: dict[int, Ratio] = {}
    for k in sorted(throughput):
        ratio = decision.ratio(scenario, concurrency, k, top_k, family=True)
        if ratio is not None:
            vs_top[k] = ratio
    chosen = smallest_within_band(sorted(vs_top), vs_top, top_k, decision.band.floor)
    others = [k for k in throughput if k != top_k]
    runner_up = max(others, key=lambda k: throughput[k]) if others else None
    # The choice rests on the top's comparisons with every K up to the choice and the runner-up.
    needed = [r for k, r in vs_top.items() if k != top_k and (k <= chosen or k == runner_up)]
    verified = bool(needed) and all(r.has_interval for r in needed)
    return CellChoice(
        scenario=scenario,
        concurrency=concurrency,
        k=chosen,
        top_k=top_k,
        throughput=dict(sorted(throughput.items())),
        vs_top=vs_top,
        vs_baseline=(decision.ratio(scenario, concurrency, chosen, 0, family=True)
                     if chosen != 0 else None),
        top_vs_runner_up=(decision.ratio(scenario, concurrency, top_k, runner_up, family=True)
                          if runner_up is not None else None),
        runner_up_k=runner_up,
        verified=verified,
    )


def find_crossing(concurrencies: Sequence[int], ratios: Sequence[Ratio]) -> Crossing | None:
    """Where log(ratio) changes sign between neighbouring concurrencies (linear in log2 c);
    the interval from where the interval's two ends change sign."""
    if len(concurrencies) < 2:
        return None
    xs = [math.log2(c) for c in concurrencies]
    mid = [math.log(r.value) for r in ratios]
    at, count = _first_sign_change(xs, mid)
    has_interval = all(r.has_interval for r in ratios)
    low = high = None
    if has_interval:
        # The upper-bound curve crosses last (for a falling ratio), the lower-bound first.
        ends = []
        for curve in ([math.log(r.lower) for r in ratios], [math.log(r.upper) for r in ratios]):
            point, _ = _first_sign_change(xs, curve)
            ends.append(point)
        falling = mid[0] > mid[-1]
        low, high = (ends[0], ends[1]) if falling else (ends[1], ends[0])
        if at is not None:
            low = None if low is None else min(low, at)
            high = None if high is None else max(high, at)
    return Crossing(at=None if at is None else 2.0 ** at,
                    low=None if low is None else 2.0 ** low,
                    high=None if high is None else 2.0 ** high,
                    has_interval=has_interval,
                    sign_first=_sign(mid[0]), sign_last=_sign(mid[-1]), crossings=count)


def _first_sign_change(xs: list[float], ys: list[float]) -> tuple[float | None, int]:
    """The first x where y changes side of zero (zero counts as the negative side), and how
    many such changes there are (more than one: noise or a non-monotone curve)."""
    found: float | None = None
    count = 0
    for x0, x1, y0, y1 in zip(xs, xs[1:], ys, ys[1:], strict=False):
        if (y0 > 0) != (y1 > 0):
            count += 1
            if found is None:
                found = x0 + (x1 - x0) * y0 / (y0 - y1)
    return found, count


def _sign(value: float) -> int:
    return 1 if value > 0 else -1 if value < 0 else 0


def _break_evens(decision: KDecision, scenario: str) -> list[BreakEven]:
    out = []
    concurrencies = sorted(c.concurrency for c in decision.choices if c.scenario == scenario)
    for low_k, high_k in zip(decision.ks, decision.ks[1:], strict=False):
        points = [(c, decision.ratio(scenario, c, high_k, low_k)) for c in concurrencies]
        present = [(c, r) for c, r in points if r is not None]
        crossing = find_crossing([c for c, _ in present], [r for _, r in present])
        if crossing is not None:
            out.append(BreakEven(scenario, low_k, high_k, crossing))
    return out


def _speculation_stop(decision: KDecision, scenario: str) -> SpeculationStop | None:
    """The best K > 0 against K = 0 at each concurrency (by its point estimate)."""
    if 0 not in decision.arm_of:
        return None
    concurrencies, ratios = [], []
    for choice in (c for c in decision.choices if c.scenario == scenario):
        best: Ratio | None = None
        for k in choice.throughput:
            if k == 0:
                continue
            ratio = decision.ratio(scenario, choice.concurrency, k, 0)
            if ratio is not None and (best is None or ratio.value > best.value):
                best = ratio
        if best is not None:
            concurrencies.append(choice.concurrency)
            ratios.append(best)
    crossing = find_crossing(concurrencies, ratios)
    if crossing is None:
        return None
    zero = [c.concurrency for c in decision.choices if c.scenario == scenario and c.k == 0]
    return SpeculationStop(scenario, crossing, min(zero) if zero else None)
