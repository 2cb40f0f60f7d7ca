"""The live A/B table: recomputed whenever a measurement finishes (no pandas). Its winner,
margin and verdict come from analysis/verdicts.py, the same analysis as the report's; with more
than two arms each row also names the leading arm and its margin over the K = 0 arm."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dspark_tui.analysis.decision import ratio_between
from dspark_tui.analysis.measurements import acceptance_length, aggregate_cells
from dspark_tui.analysis.verdicts import RunVerdicts, Settings, Verdict, analyse_measurements
from dspark_tui.model import CellResult


@dataclass(frozen=True)
class ArmFigures:
    """One arm's numbers in one (scenario, concurrency) row; all None while the cell is pending."""

    status: str | None = None
    total_tok_s: float | None = None
    output_tok_s: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    accept_length: float | None = None
    error: str | None = None


@dataclass
class ComparisonRow:
    scenario: str
    concurrency: int
    arms: dict[str, ArmFigures] = field(default_factory=dict)
    winner: str | None = None
    runner_up: str | None = None
    margin: float | None = None
    verdict: Verdict | None = None  # analysis/verdicts.py
    margin_low: float | None = None
    margin_high: float | None = None
    rounds: int = 0
    leader: str | None = None  # the faster arm so far, named or not by the verdict
    # The leader against the K = 0 arm (N-arm tables), from the same verdict analysis.
    baseline: str | None = None
    baseline_margin: float | None = None
    baseline_low: float | None = None
    baseline_high: float | None = None
    baseline_verdict: Verdict | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario, self.concurrency)


def figures_of(cell: CellResult) -> ArmFigures:
    if not cell.ok:
        return ArmFigures(status=cell.status.value, error=cell.error)
    metrics = cell.metrics
    return ArmFigures(
        status=cell.status.value,
        total_tok_s=metrics.total_throughput,
        output_tok_s=metrics.output_throughput,
        p99_ttft_ms=metrics.p99_ttft_ms,
        mean_tpot_ms=metrics.mean_tpot_ms,
        accept_length=acceptance_length(cell),
    )


def comparison_rows(
    cells: Iterable[CellResult],
    arms: list[str],
    scenarios: Sequence[str] | None = None,
    settings: Settings | None = None,
    baseline: str | None = None,
) -> list[ComparisonRow]:
    """One row per (scenario, concurrency): scenarios in the given (plan) order, else in the
    order cells arrive (a run writes them in plan order), concurrencies ascending. `cells` may
    hold several measurements per cell; each arm shows their mean, and the winner is the
    verdict's. `baseline` (the K = 0 arm, see `baseline_arm`) adds the leader's margin over it."""
    measurements = list(cells)
    by_key: dict[tuple[str, int], ComparisonRow] = {}
    scenario_order: dict[str, int] = {name: i for i, name in enumerate(scenarios or ())}
    for cell in aggregate_cells(measurements).values():
        key = (cell.scenario, cell.concurrency)
        row = by_key.get(key)
        if row is None:
            row = by_key[key] = ComparisonRow(cell.scenario, cell.concurrency)
        row.arms[cell.arm] = figures_of(cell)
    for cell in measurements:  # arrival order decides the order of unknown scenarios
        scenario_order.setdefault(cell.scenario, len(scenario_order))
    rows = sorted(by_key.values(), key=lambda r: (scenario_order[r.scenario], r.concurrency))
    verdicts = analyse_measurements(measurements, arms, settings or Settings())
    for row in rows:
        row.arms = {arm: row.arms.get(arm, ArmFigures()) for arm in [*arms, *row.arms] if arm}
        _decide(row, arms, verdicts)
        if baseline in arms:
            _against_baseline(row, baseline, verdicts)
    return rows


def _decide(row: ComparisonRow, arms: list[str], verdicts: RunVerdicts) -> None:
    ranked = sorted(
        (
            (figures.total_tok_s, arm)
            for arm, figures in row.arms.items()
            if arm in arms and figures.total_tok_s is not None and figures.total_tok_s > 0
        ),
        key=lambda pair: -pair[0],
    )
    if len(ranked) < 2:
        return
    (best, first), (second, runner_up) = ranked[0], ranked[1]
    pair = verdicts.pair(row.scenario, row.concurrency, first, runner_up)
    if pair is None:
        row.winner, row.runner_up, row.margin = first, runner_up, best / second - 1.0
        row.leader = first
        return
    row.verdict, row.rounds, row.leader = pair.verdict, pair.n, pair.leader
    row.margin = pair.margin
    row.runner_up = pair.a if pair.leader == pair.b else pair.b
    # Named only when the verdict (or, for single measurements, the tie band) says so.
    row.winner = pair.winner
    interval = pair.margin_interval()
    if interval is not None:
        row.margin_low, row.margin_high = interval


def _against_baseline(row: ComparisonRow, baseline: str, verdicts: RunVerdicts) -> None:
    """The leader over K = 0: nothing to say when K = 0 leads or is not measured yet."""
    row.baseline = baseline
    if row.leader is None or row.leader == baseline:
        return
    ratio = ratio_between(verdicts, row.scenario, row.concurrency, row.leader, baseline)
    if ratio is None:
        return
    row.baseline_margin = ratio.value - 1.0
    row.baseline_verdict = ratio.verdict
    if ratio.has_interval and ratio.low is not None and ratio.high is not None:
        row.baseline_low, row.baseline_high = ratio.low - 1.0, ratio.high - 1.0


def interval_text(row: ComparisonRow) -> str:
    """The leader's margin interval, `+3.9…+27.0%`; empty without one (single measurements)."""
    if row.margin_low is None or row.margin_high is None:
        return ""
    return f"{row.margin_low * 100:+.1f}…{row.margin_high * 100:+.1f}%"


def verdict_text(row: ComparisonRow) -> str:
    """`wins` / `tie` / `unsure` / `single` (analysis/verdicts.py); empty while a side is missing."""
    return row.verdict or ""


def baseline_text(row: ComparisonRow) -> str:
    """The leader's margin over K = 0, `+35.2%`; empty when K = 0 leads or is missing."""
    if row.baseline_margin is None:
        return ""
    return f"{row.baseline_margin * 100:+.1f}%"
