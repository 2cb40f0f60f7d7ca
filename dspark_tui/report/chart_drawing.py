"""Drawing the report's charts (report/charts.py) as SVG with matplotlib, and writing them to
`charts/` in the run directory.

matplotlib is imported here, inside the functions, and nowhere else: importing the report (the
TUI does at start) must not pay for it. Figures are made with `matplotlib.figure.Figure`, not
pyplot, so no GUI backend is chosen and no global figure state is kept; rendering is Agg's
(non-interactive). The SVG keeps its text as text (searchable, sharp at any zoom) and is
byte-stable for the same data: no date, a fixed id salt.
"""

from __future__ import annotations

import io
import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dspark_tui.report.charts import CHARTS_DIR, ChartData, Panel
from dspark_tui.results import atomic_write_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PANEL_WIDTH_IN = 4.6
PANEL_HEIGHT_IN = 3.3
# The figure title (12 pt bold) takes about this much width a character: a longer title wraps
# to the figure's width (a one-panel margin chart's title ran off both edges).
TITLE_CHAR_IN = 0.105
TITLE_LINE_IN = 0.25
_RC: Any = {  # matplotlib types the keys as a Literal of every rcParam
    "svg.fonttype": "none",
    "svg.hashsalt": "dspark-tui",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


def arm_colours(arms: tuple[str, ...]) -> dict[str, Any]:
    """One colour an arm, by its place in the run's arm list: the same in every chart."""
    from matplotlib import colormaps

    palette = colormaps["tab10" if len(arms) <= 10 else "tab20"]
    return {arm: palette(i % palette.N) for i, arm in enumerate(arms)}


def chart_svg(chart: ChartData) -> str:
    """The chart as an SVG document."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        columns = max(1, min(chart.columns, len(chart.panels)))
        rows = math.ceil(len(chart.panels) / columns)
        title = textwrap.wrap(chart.title, width=int(PANEL_WIDTH_IN * columns / TITLE_CHAR_IN))
        figure = Figure(figsize=(PANEL_WIDTH_IN * columns,
                                 PANEL_HEIGHT_IN * rows + 0.9 + TITLE_LINE_IN * (len(title) - 1)),
                        layout="constrained")
        figure.suptitle("\n".join(title), fontsize=12, fontweight="bold")
        axes = figure.subplots(rows, columns, squeeze=False)
        colours = arm_colours(chart.arms)
        for i, panel in enumerate(chart.panels):
            _draw_panel(axes[i // columns][i % columns], panel, chart, colours)
        for j in range(len(chart.panels), rows * columns):
            axes[j // columns][j % columns].set_visible(False)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _draw_panel(ax: Axes, panel: Panel, chart: ChartData, colours: dict[str, Any]) -> None:
    if chart.tie_band is not None:
        band = chart.tie_band * 100
        ax.axhspan(-band, band, color="0.6", alpha=0.25, linewidth=0,
                   label=f"tie band ±{band:g}%")
        ax.axhline(0, color="0.4", linewidth=0.8)
    for series in panel.series:
        colour = colours.get(series.arm, "0.3")
        ax.plot(series.x, series.y, marker="o", markersize=4, linewidth=1.6, color=colour,
                label=series.label)
        if series.low is not None and series.high is not None:
            ax.fill_between(series.x, series.low, series.high, color=colour, alpha=0.18, linewidth=0)
        if chart.tie_band is not None and series.low is not None and series.high is not None:
            # Intervals get bars too: a scenario measured at one concurrency has no band to fill.
            below = [max(0.0, y - low) for y, low in zip(series.y, series.low, strict=True)]
            above = [max(0.0, high - y) for y, high in zip(series.y, series.high, strict=True)]
            ax.errorbar(series.x, series.y, yerr=[below, above], fmt="none", ecolor=colour,
                        elinewidth=1, capsize=3)
    if chart.log2_x:
        ax.set_xscale("log", base=2)
        ticks = sorted({x for s in panel.series for x in s.x})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    else:
        ticks = sorted({x for s in panel.series for x in s.x})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_title(panel.title)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(panel.y_label)
    ax.legend(fontsize=7, loc="best")


def chart_link(chart: ChartData) -> tuple[str, str]:
    """(kind, path relative to the run directory): how the report links the chart."""
    return chart.kind, f"{CHARTS_DIR}/{chart.file_name}"


def write_charts(charts: list[ChartData], run_dir: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """Draw and write each chart to charts/{kind}.svg. Returns the links of those written and
    one line for each that was not (it is left out; the report links only what exists)."""
    written: list[tuple[str, str]] = []
    problems: list[str] = []
    folder = run_dir / CHARTS_DIR
    if not charts:
        return written, problems
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:  # not worth drawing what cannot be saved
        return written, [f"{folder}: charts not written ({exc.strerror or exc})"]
    if folder.is_symlink() or not folder.resolve().is_relative_to(run_dir.resolve()):
        # a crafted or shared run directory: report writes only inside it
        return written, [f"{folder}: charts not written (a symlink leading out of the run "
                         "directory)"]
    for chart in charts:
        try:
            svg = chart_svg(chart)
            atomic_write_text(folder / chart.file_name, svg)
        except OSError as exc:
            problems.append(f"{folder / chart.file_name}: not written ({exc.strerror or exc})")
            continue
        except Exception as exc:  # a drawing bug costs that chart, never the report
            problems.append(f"chart {chart.kind!r} not drawn: {type(exc).__name__}: {exc}")
            continue
        written.append(chart_link(chart))
    return written, problems
