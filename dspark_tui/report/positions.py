"""What /metrics says about each K: per-position acceptance, drafted and accepted tokens/s, the
running batch; the marginal value of each draft position; and where acceptance and throughput
disagree. Acceptance explains a choice, it never makes one (docs/decision.md)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dspark_tui.model import CellKey, CellResult
from dspark_tui.report.decision import KDecision, Ratio
from dspark_tui.report.measurements import aggregate_cells, measurements_of

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

    @property
    def wasted_per_s(self) -> float | None:
        if self.drafted_per_s is None or self.accepted_per_s is None:
            return None
        return self.drafted_per_s - self.accepted_per_s


def spec_counters(decision: KDecision) -> dict[tuple[str, int, int], SpecCounters]:
    """(scenario, concurrency, K) -> counters, for the cells with server metrics."""
    cells: dict[CellKey, CellResult] = aggregate_cells(measurements_of(decision.analysis.run))
    out: dict[tuple[str, int, int], SpecCounters] = {}
    for key, cell in cells.items():
        if not cell.ok or cell.arm not in decision.k_of:
            continue
        k = decision.k_of[cell.arm]
        server = cell.server
        accept = (server.mean_acceptance_length if server is not None else None) or cell.metrics.accept_length
        if k == 0 and server is not None:
            accept = 1.0  # without drafts every step emits one token
        if server is None and accept is None:
            continue
        duration = cell.metrics.duration
        cumulative = list(server.per_position_acceptance[:k]) if server is not None else []
        out[(key.scenario, key.concurrency, k)] = SpecCounters(
            scenario=key.scenario,
            concurrency=key.concurrency,
            k=k,
            accept_length=accept,
            cumulative=cumulative,
            conditional=conditional_rates(cumulative),
            drafted_per_s=_per_second(server.draft_tokens if server else None, duration),
            accepted_per_s=_per_second(server.accepted_tokens if server else None, duration),
            running_mean=server.running_mean if server else None,
            running_peak=server.running_peak if server else None,
        )
    return out


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
    floor = 1.0 - decision.tie_band
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
