"""The live A/B table: recomputed whenever a cell finishes, so plain Python and no pandas."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

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

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario, self.concurrency)


def acceptance_length(cell: CellResult) -> float | None:
    """Measured on the server when scraped, else what the client read from it, else unknown."""
    if cell.server is not None and cell.server.mean_acceptance_length is not None:
        return cell.server.mean_acceptance_length
    return cell.metrics.accept_length


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
) -> list[ComparisonRow]:
    """One row per (scenario, concurrency): scenarios in the given (plan) order, else in the
    order cells arrive (a run writes them in plan order), concurrencies ascending."""
    by_key: dict[tuple[str, int], ComparisonRow] = {}
    scenario_order: dict[str, int] = {name: i for i, name in enumerate(scenarios or ())}
    for cell in cells:
        key = (cell.scenario, cell.concurrency)
        row = by_key.get(key)
        if row is None:
            row = by_key[key] = ComparisonRow(cell.scenario, cell.concurrency)
            scenario_order.setdefault(cell.scenario, len(scenario_order))
        row.arms[cell.arm] = figures_of(cell)
    rows = sorted(by_key.values(), key=lambda r: (scenario_order[r.scenario], r.concurrency))
    for row in rows:
        row.arms = {arm: row.arms.get(arm, ArmFigures()) for arm in [*arms, *row.arms] if arm}
        _decide(row, arms)
    return rows


def _decide(row: ComparisonRow, arms: list[str]) -> None:
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
    (best, winner), (second, runner_up) = ranked[0], ranked[1]
    row.winner, row.runner_up, row.margin = winner, runner_up, best / second - 1.0
