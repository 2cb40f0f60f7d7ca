"""What the report's charts show, as plain data: one function a chart, each reading the run's
one analysis (the same frames and verdicts the tables use), so a chart can never tell another
story than the report beside it. Drawing them is chart_drawing.py's job (matplotlib, loaded only
there); a chart with nothing to show is None and is left out.

Chart text is English in both reports: one set of files serves report.md and report.en.md, and
an SVG must not depend on the reader having a CJK font.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.layout import manifest_k_values
from dspark_tui.analysis.measurements import aggregate_cells, measurements_of

CHARTS_DIR = "charts"
KINDS = ("throughput", "margin", "latency", "acceptance")


@dataclass(frozen=True)
class Series:
    """One arm's line: (x, y) points, with an interval band (low, high per point) when known."""

    arm: str
    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    low: tuple[float, ...] | None = None
    high: tuple[float, ...] | None = None
    # A margin series over another arm than the chart's reference: a K sweep's cells without a
    # chosen K, drawn over the fallback arm (said in its label); None: the chart's reference.
    over: str | None = None
    # Its interval's level where it is not the chart's (an adaptive arm's, at the run's level
    # as the report's adaptive section reads it); None: the chart's.
    level: float | None = None


@dataclass(frozen=True)
class Panel:
    title: str
    y_label: str
    series: tuple[Series, ...]


@dataclass(frozen=True)
class ChartData:
    kind: str
    title: str
    x_label: str
    panels: tuple[Panel, ...]
    arms: tuple[str, ...]  # every arm of the run, in plan order: its colour is its place here
    log2_x: bool = True
    tie_band: float | None = None  # shaded ±band around 0 (the margin chart), as a fraction
    columns: int = 3
    notes: tuple[str, ...] = field(default_factory=tuple)
    # The margin chart's reference, for a screen that words it in its own language: an arm's
    # name, "" for each cell's chosen K (a K sweep), None for other charts; and the interval's
    # level (None: one measurement a cell).
    reference: str | None = None
    level: float | None = None
    # A K sweep's chart: the arm its cells without a chosen K are drawn over, when any is
    # (said in the title and in those series' labels); None: every drawn cell has its choice.
    fallback: str | None = None

    @property
    def file_name(self) -> str:
        return f"{self.kind}.svg"


def existing_charts(run_dir: Path) -> list[tuple[str, str]]:
    """(kind, relative path) of the charts already written beside the run's report."""
    return [(kind, f"{CHARTS_DIR}/{kind}.svg") for kind in KINDS
            if (run_dir / CHARTS_DIR / f"{kind}.svg").is_file()]


def chart_data(analysis: RunAnalysis) -> list[ChartData]:
    """Every chart the run has data for, in the order the report lists them."""
    charts = [throughput_chart(analysis), margin_chart(analysis), latency_chart(analysis),
              acceptance_chart(analysis)]
    return [c for c in charts if c is not None]


def _ok_cells(analysis: RunAnalysis) -> pd.DataFrame:
    cells = analysis.cells
    return cells[cells["status"] == "ok"]


def _metric_panels(analysis: RunAnalysis, column: str, what: str, y_label: str) -> list[Panel]:
    ok = _ok_cells(analysis)
    panels = []
    for scenario in analysis.layout.scenario_names():
        rows = ok[(ok["scenario"] == scenario) & ok[column].notna()]
        series = []
        for arm in analysis.arms:
            mine = rows[rows["arm"] == arm].sort_values("concurrency")
            if mine.empty:
                continue
            series.append(Series(arm, arm, tuple(float(c) for c in mine["concurrency"]),
                                 tuple(float(v) for v in mine[column])))
        if series:
            panels.append(Panel(f"{scenario}{what}", y_label, tuple(series)))
    return panels


def throughput_chart(analysis: RunAnalysis) -> ChartData | None:
    """Total tok/s against concurrency, one panel a scenario, one line an arm (the mean of the
    cell's ok measurements, as the core table shows it)."""
    panels = _metric_panels(analysis, "total_throughput", "", "Total tok/s (tokens/s)")
    if not panels:
        return None
    return ChartData("throughput", "Total tok/s vs concurrency", "Concurrency (log2 scale)",
                     tuple(panels), tuple(analysis.arms))


def latency_chart(analysis: RunAnalysis) -> ChartData | None:
    """Mean TPOT and mean TTFT against concurrency: two panels a scenario."""
    tpot = _metric_panels(analysis, "mean_tpot_ms", " — mean TPOT", "Mean TPOT (ms)")
    ttft = _metric_panels(analysis, "mean_ttft_ms", " — mean TTFT", "Mean TTFT (ms)")
    by_scenario: dict[str, list[Panel]] = {}
    for panel in [*tpot, *ttft]:
        by_scenario.setdefault(panel.title.split(" — ")[0], []).append(panel)
    panels = [p for scenario in analysis.layout.scenario_names() for p in by_scenario.get(scenario, [])]
    if not panels:
        return None
    return ChartData("latency", "TPOT and TTFT vs concurrency", "Concurrency (log2 scale)",
                     tuple(panels), tuple(analysis.arms), columns=2)


def reference_arm(analysis: RunAnalysis) -> str:
    """What the margins are measured against without a sweep's choice: the K = 0 arm of a
    sweep, else the first arm."""
    k_of = manifest_k_values(analysis.run.manifest)
    if k_of:
        zero = [arm for arm, k in k_of.items() if k == 0 and arm in analysis.arms]
        if zero:
            return zero[0]
    return analysis.arms[0]


def chosen_arms(analysis: RunAnalysis) -> tuple[dict[tuple[str, int], str], float | None]:
    """A K sweep's chosen K per cell, as the decision chose it (analysis/decision.py: the
    smallest K shown within the tie band of the cell's top), by arm name, and the two-sided
    level (alpha) its comparisons were made at: the family's (`family_alpha` over the fixed-K
    arms, KDecision.ratio). Empty and None when the run is no sweep or chose nothing."""
    from dspark_tui.analysis.decision import decide_k, family_alpha

    decision = decide_k(analysis)
    if decision is None or analysis.verdicts is None:
        return {}, None
    arm_of = decision.arm_of
    chosen = {choice.key: arm_of[choice.k] for choice in decision.choices if choice.k in arm_of}
    if not chosen:
        return {}, None
    return chosen, family_alpha(analysis.verdicts.settings.look_alpha, len(decision.k_of))


def margin_chart(analysis: RunAnalysis) -> ChartData | None:
    """Each arm's margin over the reference in percent, with the interval of the paired
    analysis the verdicts rest on (analysis/verdicts.py) as a band and the tie band shaded.
    A K sweep that chose a K per cell is drawn against the cell's chosen K (the K the report
    deploys there: each other K's margin is what choosing it instead would give or cost; the
    chosen K's own point is 0), each fixed K's band at the level the choice was made at (the
    family's, not one comparison's: a band that clears the tie band at the run's level may not
    at the choice's), an adaptive arm's at the run's level (its verdicts in the report's
    adaptive section), said in its label; a cell of the sweep without a choice (fewer than two
    K measured) over the fallback arm, as a series of its own whose label says so, and the
    title too. Any other run against one arm (B over A with two arms, K = 0 of a sweep without
    choices), at the run's level. Cells measured once have a point and no band."""
    verdicts = analysis.verdicts
    if verdicts is None or len(analysis.arms) < 2:
        return None
    settings = verdicts.settings
    chosen, alpha = chosen_arms(analysis)
    fixed = reference_arm(analysis)
    ks = analysis.layout.ks
    family = set(ks.fixed) if ks is not None and chosen else set()  # the K choice's arms
    level = 1.0 - alpha if alpha is not None else settings.level  # the chart's
    # another level, said in a series' label: the run's, where the chart's is the family's
    own_level = settings.level if not math.isclose(settings.level, level) else None
    said = "the chosen K" if chosen else fixed
    panels = []
    fallback_used = False
    for shape in analysis.layout.scenarios:
        series = []
        for arm in analysis.arms:
            # the arm's own level: the choice's family for a fixed K of a sweep, else the run's
            at = alpha if chosen and arm in family else None
            points: list[tuple[int, float, float | None, float | None]] = []
            fallen: list[tuple[int, float, float | None, float | None]] = []
            for concurrency in sorted(shape.concurrencies):
                key = (shape.name, concurrency)
                reference = chosen.get(key, fixed) if chosen else fixed
                into = fallen if chosen and key not in chosen else points
                if arm == reference:
                    if into is points and chosen:
                        points.append((concurrency, 0.0, 0.0, 0.0))  # the reference itself
                    continue
                pair = verdicts.pair(shape.name, concurrency, reference, arm)
                if pair is None:
                    continue
                low, high = pair.ci_low, pair.ci_high
                if at is not None and into is points:
                    low, high = pair.interval_at(at) or (None, None)
                into.append((concurrency, *_margin_of(pair.a, pair.ratio, low, high, arm)))
            if points and not all(p[1:] == (0.0, 0.0, 0.0) for p in points):
                # (the reference in every cell it has: a line at 0 says nothing)
                series.append(_series(arm, f"{arm} over {said}", points,
                                      level=None if at is not None else own_level))
            if fallen:
                fallback_used = True
                series.append(_series(arm, f"{arm} over {fixed} where no K is chosen", fallen,
                                      over=fixed, level=own_level))
        if series:
            panels.append(Panel(shape.name, f"Total tok/s margin over {said} (%)", tuple(series)))
    if not panels:
        return None
    banded = any(s.low is not None for p in panels for s in p.series)
    over = "each cell's chosen K" if chosen else fixed
    if fallback_used:
        over += f" ({fixed} where a cell has none)"
    title = f"Margin over {over}, with its {level * 100:.1f}% interval" if banded else \
        f"Margin over {over} (one measurement a cell: no interval)"
    return ChartData("margin", title,
                     "Concurrency (log2 scale)", tuple(panels), tuple(analysis.arms),
                     tie_band=settings.tie_band, reference="" if chosen else fixed,
                     level=level if banded else None,
                     fallback=fixed if fallback_used else None)


def _series(arm: str, label: str, points: list[tuple[int, float, float | None, float | None]],
            *, over: str | None = None, level: float | None = None) -> Series:
    """One arm's margins; `level`: its interval's, where it is not the chart's (then said)."""
    banded = all(low is not None and high is not None for _, _, low, high in points)
    level = level if banded else None
    if level is not None:
        label += f" ({level * 100:.1f}% interval)"
    return Series(
        arm, label, tuple(float(p[0]) for p in points), tuple(p[1] for p in points),
        tuple(float(p[2]) for p in points) if banded else None,  # type: ignore[arg-type]
        tuple(float(p[3]) for p in points) if banded else None,  # type: ignore[arg-type]
        over=over, level=level)


def _margin_of(a: str, ratio: float, low: float | None, high: float | None,
               arm: str) -> tuple[float, float | None, float | None]:
    """`arm` over the other arm of a pair whose ratio is b / a, in percent."""
    if a == arm:  # the pair holds reference / arm: invert, and the bounds swap
        ratio, low, high = 1 / ratio, (1 / high if high else None), (1 / low if low else None)
    return ((ratio - 1) * 100, None if low is None else (low - 1) * 100,
            None if high is None else (high - 1) * 100)


def acceptance_chart(analysis: RunAnalysis) -> ChartData | None:
    """Per-position acceptance rate per arm (accepted at position i / drafts, from /metrics),
    the mean over the arm's cells that carry it; one line a concurrency would crowd the panel,
    so each arm's spread over cells is its band (lowest to highest cell)."""
    by_arm: dict[str, list[list[float]]] = {}
    for cell in aggregate_cells(measurements_of(analysis.run)).values():
        if cell.ok and cell.server is not None and cell.server.per_position_acceptance:
            by_arm.setdefault(cell.arm, []).append(list(cell.server.per_position_acceptance))
    series = []
    for arm in analysis.arms:
        lists = by_arm.get(arm)
        if not lists:
            continue
        width = max(len(values) for values in lists)
        columns = [[values[i] * 100 for values in lists if len(values) > i] for i in range(width)]
        series.append(Series(
            arm, arm, tuple(float(i + 1) for i in range(width)),
            tuple(sum(c) / len(c) for c in columns),
            tuple(min(c) for c in columns), tuple(max(c) for c in columns)))
    if not series:
        return None
    panel = Panel("Mean over cells (band: lowest to highest)",
                  "Accepted at this position (% of drafts)", tuple(series))
    return ChartData("acceptance", "Acceptance by draft position", "Draft position",
                     (panel,), tuple(analysis.arms), log2_x=False, columns=1)
