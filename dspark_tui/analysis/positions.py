"""What /metrics says about each K: per-position acceptance, drafted and accepted tokens/s, the
running batch; the marginal value of each draft position; and where acceptance and throughput
disagree. Acceptance explains a choice, it never makes one (docs/decision.md)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dspark_tui.analysis.decision import KDecision, Ratio
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.model import CellResult

# Acceptance lengths closer than this are "the same per step" (counter noise, not a claim).
ACCEPT_LENGTH_EPSILON = 0.02


@dataclass(frozen=True)
class SpecCounters:
    """One arm in one cell, from the server's spec-decode counters over the cell's window."""

    scenario: str
    concurrency: int
    k: int
    accept_length: float | None
    cumulative: list[float]  # P(position i accepted) = accepted_per_pos[i] / drafts
    conditional: list[float]  # P(position i accepted | position i-1 accepted)
    drafted_per_s: float | None
    accepted_per_s: float | None
    running_mean: float | None
    running_peak: float | None
    # Readings of the running batch behind running_mean: all of the cell's measurements
    # together, and the fewest of any one (None: a measurement from before they were counted).
    running_samples: int | None = None
    running_samples_min: int | None = None
    running_steady: float | None = None  # the median reading (engine/scraper.steady_running)

    @property
    def wasted_per_s(self) -> float | None:
        if self.drafted_per_s is None or self.accepted_per_s is None:
            return None
        return self.drafted_per_s - self.accepted_per_s


def spec_counters(decision: KDecision) -> dict[tuple[str, int, int], SpecCounters]:
    """(scenario, concurrency, K) -> counters over the cell's ok measurements (means; the
    running peak is the highest), for the cells with server metrics. Reads only the fields it
    needs: aggregate_cells would dump every field of every measurement. They depend on the arms'
    K values only, not on the choices, so a decision under an SLO shares them: computed once
    per analysis and K values (the caller must not change the dict)."""
    key = ("spec_counters", tuple(sorted(decision.k_of.items())))
    return decision.analysis.computed(key, lambda: _spec_counters(decision))


def _spec_counters(decision: KDecision) -> dict[tuple[str, int, int], SpecCounters]:
    groups: dict[tuple[str, int, int], list[CellResult]] = {}
    for m in measurements_of(decision.analysis.run):
        if m.ok and m.arm in decision.k_of and _counted(m):
            groups.setdefault((m.scenario, m.concurrency, decision.k_of[m.arm]), []).append(m)
    return {key: _cell_counters(*key, group) for key, group in groups.items()}


def _counted(m: CellResult) -> bool:
    return m.server is not None or bool(m.metrics.accept_length)


def _cell_counters(scenario: str, concurrency: int, k: int, group: list[CellResult]) -> SpecCounters:
    """One cell's counters over its measurements `group` (one arm, or arms of one K)."""
    servers = [m.server for m in group if m.server is not None]
    accept = _mean([s.mean_acceptance_length for s in servers if s.mean_acceptance_length])
    if accept is None:
        accept = _mean([m.metrics.accept_length for m in group if m.metrics.accept_length])
    if k == 0 and servers:
        accept = 1.0  # without drafts every step emits one token
    width = min((len(s.per_position_acceptance) for s in servers), default=0)
    cumulative = [sum(s.per_position_acceptance[i] for s in servers) / len(servers)
                  for i in range(min(width, k))]
    peaks = [s.running_peak for s in servers if s.running_peak is not None]
    readings = [s.running_samples for s in servers if s.running_mean is not None]
    counted = [n for n in readings if n is not None]
    known = bool(readings) and len(counted) == len(readings)
    return SpecCounters(
        scenario=scenario,
        concurrency=concurrency,
        k=k,
        accept_length=accept,
        cumulative=cumulative,
        conditional=conditional_rates(cumulative),
        drafted_per_s=_mean([r for m in group if (r := _rate_of(m, "draft_tokens")) is not None]),
        accepted_per_s=_mean([r for m in group if (r := _rate_of(m, "accepted_tokens")) is not None]),
        running_mean=_mean([s.running_mean for s in servers if s.running_mean is not None]),
        running_peak=max(peaks) if peaks else None,
        running_samples=sum(counted) if known else None,
        running_steady=_mean([s.running_steady for s in servers if s.running_steady is not None]),
        running_samples_min=min(counted) if known else None,
    )


@dataclass(frozen=True)
class ArmAcceptance:
    """One K over every cell it was measured in: the means of its cells' counters."""

    k: int
    cells: int
    accept_length: float | None
    cumulative: list[float]
    conditional: list[float]


def acceptance_by_k(counters: dict[tuple[str, int, int], SpecCounters]) -> list[ArmAcceptance]:
    """Per-position acceptance per arm (K ascending), averaged over the cells with counters."""
    by_k: dict[int, list[SpecCounters]] = {}
    for counter in counters.values():
        by_k.setdefault(counter.k, []).append(counter)
    return [_over_cells(k, group) for k, group in sorted(by_k.items())]


def arm_acceptance(decision: KDecision, arm: str, k: int) -> ArmAcceptance | None:
    """One arm's acceptance over its cells with counters, as `acceptance_by_k` gives a fixed
    K's: for an adaptive-verification arm, which no K of the decision stands for (`k` its
    drafts per step). Its positions are accepted at i / drafts as for any arm, so a position
    it chose not to verify counts as not accepted (docs/decision.md). None without counters."""
    groups: dict[tuple[str, int], list[CellResult]] = {}
    for m in measurements_of(decision.analysis.run):
        if m.ok and m.arm == arm and _counted(m):
            groups.setdefault((m.scenario, m.concurrency), []).append(m)
    cells = [_cell_counters(scenario, c, k, group) for (scenario, c), group in groups.items()]
    return _over_cells(k, cells) if cells else None


def _over_cells(k: int, group: list[SpecCounters]) -> ArmAcceptance:
    width = min(len(c.cumulative) for c in group)
    cumulative = [sum(c.cumulative[i] for c in group) / len(group) for i in range(width)]
    return ArmAcceptance(k, len(group),
                         _mean([c.accept_length for c in group if c.accept_length is not None]),
                         cumulative, conditional_rates(cumulative))


def _rate_of(m: CellResult, name: str) -> float | None:
    count = getattr(m.server, name, None) if m.server is not None else None
    return _per_second(count, m.metrics.duration)


def conditional_rates(cumulative: list[float]) -> list[float]:
    """P(i | i-1) from P(i): position i can only be accepted when every earlier one was."""
    out = []
    previous = 1.0
    for rate in cumulative:
        out.append(rate / previous if previous > 0 else 0.0)
        previous = rate
    return out


def _per_second(count: float | None, duration: float | None) -> float | None:
    if count is None or not duration:
        return None
    return count / duration


@dataclass(frozen=True)
class PositionGain:
    scenario: str
    concurrency: int
    gain: float  # Total tok/s of K = j minus K = j - 1
    low: float | None
    high: float | None


@dataclass(frozen=True)
class PositionValue:
    """Draft position j: how often it is accepted, and what adding it (K = j-1 -> j) changes."""

    position: int
    cumulative: float | None  # mean over the cells of arms with K >= j
    conditional: float | None
    gains: list[PositionGain]


def position_values(decision: KDecision,
                    counters: dict[tuple[str, int, int], SpecCounters]) -> list[PositionValue]:
    """For each position j whose arms K = j-1 and K = j were both measured: the measured
    difference of their Total tok/s per cell, with the interval of the ratio scaled by K = j-1's
    throughput. Its acceptance is averaged over every arm that drafts it."""
    out = []
    ks = set(decision.ks)
    for j in range(1, decision.max_k + 1):
        cumulative = [c.cumulative[j - 1] for c in counters.values() if len(c.cumulative) >= j]
        conditional = [c.conditional[j - 1] for c in counters.values() if len(c.conditional) >= j]
        gains = []
        if {j - 1, j} <= ks:
            for choice in decision.choices:
                ratio = decision.ratio(choice.scenario, choice.concurrency, j, j - 1)
                base = choice.throughput.get(j - 1)
                if ratio is None or base is None:
                    continue
                gains.append(_gain(choice.scenario, choice.concurrency, base, ratio))
        out.append(PositionValue(j, _mean(cumulative), _mean(conditional), gains))
    return out


def _gain(scenario: str, concurrency: int, base: float, ratio: Ratio) -> PositionGain:
    low = base * (ratio.low - 1.0) if ratio.has_interval and ratio.low is not None else None
    high = base * (ratio.high - 1.0) if ratio.has_interval and ratio.high is not None else None
    return PositionGain(scenario, concurrency, base * (ratio.value - 1.0), low, high)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Disagreement:
    """More accepted per step, less served: verification cost dominates at this batch."""

    scenario: str
    concurrency: int
    low_k: int
    high_k: int
    low_accept: float
    high_accept: float
    ratio: Ratio  # Total tok/s of high_k / low_k
    running_mean: float | None


def disagreements(decision: KDecision,
                  counters: dict[tuple[str, int, int], SpecCounters]) -> list[Disagreement]:
    """Neighbouring K in a cell where the larger K accepts more tokens per step yet serves fewer
    tokens per second, by more than the tie band (shown by the interval; by the point estimate
    for single measurements)."""
    out = []
    floor = decision.band.floor
    for choice in decision.choices:
        ks = sorted(choice.throughput)
        for low_k, high_k in itertools.pairwise(ks):
            low = counters.get((choice.scenario, choice.concurrency, low_k))
            high = counters.get((choice.scenario, choice.concurrency, high_k))
            if low is None or high is None or low.accept_length is None or high.accept_length is None:
                continue
            if high.accept_length <= low.accept_length + ACCEPT_LENGTH_EPSILON:
                continue
            ratio = decision.ratio(choice.scenario, choice.concurrency, high_k, low_k)
            if ratio is None or not ratio.upper < floor:
                continue
            out.append(Disagreement(choice.scenario, choice.concurrency, low_k, high_k,
                                    low.accept_length, high.accept_length, ratio, high.running_mean))
    return out
