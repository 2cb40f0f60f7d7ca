"""One finished run opened from History: its summary first (what to deploy, how sure), its A/B
table, every cell, and the way to its report."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import (
    DataTable,
    Label,
    Markdown,
    Sparkline,
    Static,
    TabbedContent,
    TabPane,
)

from dspark_tui.config import locale_language
from dspark_tui.model import CellKey, CellResult
from dspark_tui.model.outcome import CellOutcome
from dspark_tui.report.words import Texts
from dspark_tui.results import RunStore, load_run
from dspark_tui.results.store import LoadedRun
from dspark_tui.tui import format as fmt
from dspark_tui.tui import safe
from dspark_tui.tui.keys import DETAIL_KEYS
from dspark_tui.tui.screens.dialog import Dialog
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.ab_table import ABTable
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.words import SaidBindings, lang_of, status_said

# The Cells tab: its figures are each cell's mean over its ok measurements (n of them).
CELL_COLUMNS = ("arm", "scenario", "c", "status", "n", "total", "out", "p99_ttft", "mean_tpot",
                "al", "kv_peak")
OUTCOMES = ("ok", "skipped", "failed", "not_run")  # model/outcome.py


@dataclass
class ReadRun:
    run: LoadedRun
    outcomes: dict[CellKey, CellOutcome]  # the title's counts and the Cells tab's Status
    headline: str

    @property
    def cells_ok(self) -> int:
        return list(self.outcomes.values()).count("ok")

    @property
    def skipped(self) -> int:
        return list(self.outcomes.values()).count("skipped")


def read_run(run_dir: Path, lang: str) -> ReadRun:
    from dspark_tui.analysis.counting import cell_outcomes

    run = load_run(run_dir)
    return ReadRun(run, cell_outcomes(run), run_headline(run, lang))


def run_headline(run: LoadedRun, lang: str) -> str:
    """The summary that opens the report (what to deploy for which load, how sure)."""
    from dspark_tui.report.headline import headline_markdown

    if not run.cells:
        return Texts(lang, "screens")("detail.no_cells", path=run.path)
    return headline_markdown(run, lang)


def _started(started_at: str | None) -> str:
    """`2026-12-01 06:40` from an ISO time."""
    return (started_at or "")[:16].replace("T", " ")


class CellsTable(DataTable[Text | str]):
    """Every cell of the run, one a row (the mean of its ok measurements, as the report's
    tables count it; n says of how many): j/k/g/G as in History."""

    BINDINGS: ClassVar[list[BindingType]] = [*DETAIL_KEYS]


class RunDetailScreen(LoadingScreen):
    DEFAULT_CSS = """
    RunDetailScreen TabbedContent { height: 1fr; }  /* the title stays on screen */
    RunDetailScreen TabPane { height: 1fr; padding: 0; }
    RunDetailScreen DataTable { height: 1fr; }
    RunDetailScreen #detail-summary { height: 1fr; }
    RunDetailScreen #detail-summary Markdown { margin: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "report", "Report", id="detail.report"),
        Binding("s", "show_tab('summary')", "Summary", id="detail.summary",
                tooltip="what to deploy for which load, and how sure"),
        Binding("w", "show_tab('ab')", "A/B", id="detail.ab"),
        Binding("e", "show_tab('cells')", "Cells", id="detail.cells"),
        Binding("c", "charts", "Charts", id="detail.charts",
                tooltip="Total tok/s, TPOT and TTFT against concurrency, per arm"),
        # Off the footer (80 columns would lose Help): in `?` and the palette, as on the run screen.
        Binding("d", "decision", "Decision", id="detail.decision", show=False,
                tooltip="a K sweep's answer: schedule, serve command, best K per cell"),
        Binding("escape", "back", "History", id="detail.back"),
    ]
    ERROR_LINE = "#detail-title"

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.run: LoadedRun | None = None
        self.shown_cells: dict[str, CellResult] = {}  # the Cells tab's rows by key id

    def compose(self) -> ComposeResult:
        t = Texts(lang_of(self.app), "screens")
        yield Label(safe.text(t("detail.loading", path=self.run_dir)), id="detail-title",
                    classes="title-line")
        with TabbedContent(initial="summary"):
            with TabPane(t("detail.tab.summary"), id="summary"), VerticalScroll(id="detail-summary"):
                yield Markdown(t("loading"), id="detail-headline")
            with TabPane(t("detail.tab.ab"), id="ab"):
                yield ABTable(id="detail-ab")
            with TabPane(t("detail.tab.cells"), id="cells"):
                cells = CellsTable(cursor_type="row", id="detail-cells",
                                   fixed_columns=3)  # arm, scenario, c
                yield cells
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        lang = getattr(self.app, "lang", "") or locale_language()
        t = Texts(lang_of(self.app), "screens")
        self.load(partial(read_run, self.run_dir, lang), self._show_run,
                  t("detail.reading", path=self.run_dir.name))

    async def _show_run(self, read: ReadRun) -> None:
        from dspark_tui.analysis.layout import baseline_arm
        from dspark_tui.analysis.live import comparison_rows

        run = self.run = read.run
        arms = run.manifest.arm_names()
        manifest = run.manifest
        total = manifest.total_cells or len(run.cells)
        lang = lang_of(self.app)
        t = Texts(lang, "screens")
        status = status_said(lang, manifest.status, skipped=read.skipped)
        title = t("detail.heading", name=manifest.name, started=_started(manifest.started_at),
                  status=status, ok=read.cells_ok, total=total,
                  model=Path(manifest.model).name or manifest.model)
        label = self.query_one("#detail-title", Label)
        label.update(Content(safe.plain(title)))  # plain: "[completed]" is no tag
        label.tooltip = str(run.path)
        await self.query_one("#detail-headline", Markdown).update(read.headline)
        for problem in run.problems:
            self.notify(f"{problem}", severity="warning", timeout=6)
        from dspark_tui.analysis.measurements import aggregate_cells, measurements_of
        from dspark_tui.analysis.verdicts import Settings

        self.query_one(ABTable).show(
            comparison_rows(measurements_of(run), arms, run.manifest.scenarios,
                            settings=Settings.of_manifest(run.manifest),
                            baseline=baseline_arm(run.manifest)),
            arms)
        table = self.query_one("#detail-cells", DataTable)
        for heading in CELL_COLUMNS:
            table.add_column(t(f"detail.column.{heading}"))
        order = {name: i for i, name in enumerate(run.manifest.scenarios)}
        measurements = measurements_of(run)
        counts = Counter(m.key for m in measurements if m.ok)
        self.shown_cells = {key.id: cell for key, cell in aggregate_cells(measurements).items()}
        for result in sorted(self.shown_cells.values(),
                             key=lambda r: (arms.index(r.arm) if r.arm in arms else 99,
                                            order.get(r.scenario, 99), r.concurrency)):
            server = result.server
            outcome = read.outcomes.get(result.key, result.status.value)
            table.add_row(
                result.arm, result.scenario, str(result.concurrency),
                t(f"outcome.{outcome}") if outcome in OUTCOMES else outcome.replace("_", " "),
                str(counts.get(result.key, 0)),
                fmt.number(result.metrics.total_throughput), fmt.number(result.metrics.output_throughput),
                fmt.number(result.metrics.p99_ttft_ms), fmt.number(result.metrics.mean_tpot_ms),
                fmt.number(server.mean_acceptance_length if server else result.metrics.accept_length),
                fmt.percent(server.kv_usage_peak if server else None),
                key=result.key.id,
            )
        self.query_one("#detail-summary").focus()

    @on(DataTable.RowSelected, "#detail-cells")
    def _cell_selected(self, event: DataTable.RowSelected) -> None:
        if self.run is None:
            return
        key_id = event.row_key.value
        result = self.shown_cells.get(str(key_id))
        if result is not None:
            self.app.push_screen(CellDetailScreen(self.run_dir, result))

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.query_one(f"#detail-{tab}").focus()

    def action_report(self) -> None:
        from dspark_tui.tui.screens.report import ReportScreen

        self.app.push_screen(ReportScreen(self.run_dir))

    def action_charts(self) -> None:
        from dspark_tui.tui.screens.charts import ChartScreen

        self.app.push_screen(ChartScreen(self.run if self.run is not None else self.run_dir))

    def action_decision(self) -> None:
        if self.run is None:
            self.notify(Texts(lang_of(self.app), "screens")("detail.still_loading"), severity="warning")
            return
        from dspark_tui.tui.screens.decision import open_decision

        open_decision(self, self.run_dir, self.run.manifest)

    def action_back(self) -> None:
        self.app.pop_screen()


class CellDetailScreen(SaidBindings, Dialog[None]):
    """One cell: what the client measured, what the server said, and its time series."""

    DEFAULT_CSS = """
    CellDetailScreen > Vertical {
        width: 90%; height: 90%; border: round $primary; padding: 0 1;
    }
    CellDetailScreen Sparkline { height: 1; margin-bottom: 1; }
    CellDetailScreen .series-label { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close", id="cell.close")]

    def __init__(self, run_dir: Path, result: CellResult) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.result = result

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(safe.text(self.result.key.id, style="bold"))
            with VerticalScroll():
                yield Static(Text(safe.lines(_describe(self.result))), id="cell-facts")
                for name, values in read_series(RunStore(self.run_dir), self.result):
                    yield Label(safe.text(f"{name}  min {min(values):.3g}  max {max(values):.3g}"),
                                classes="series-label")
                    yield Sparkline(values)

    def action_close(self) -> None:
        self.dismiss(None)


def _describe(result: CellResult) -> str:
    lines = [f"status {result.status.value}" + (f": {result.error}" if result.error else "")]
    metrics = result.metrics.model_dump(exclude_none=True)
    if metrics:
        lines.append("client: " + "  ".join(f"{k}={_short(v)}" for k, v in metrics.items()))
    if result.server is not None:
        server = result.server.model_dump(exclude_none=True)
        lines.append("server: " + "  ".join(f"{k}={_short(v)}" for k, v in server.items()))
    else:
        lines.append("server: no /metrics summary for this cell")
    prov = result.provenance
    lines.append(f"driver {prov.driver}" + (f"  raw {prov.raw_output}" if prov.raw_output else ""))
    return "\n".join(lines)


def _short(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return str(value)


def read_series(store: RunStore, result: CellResult) -> list[tuple[str, list[float]]]:
    """Every numeric column of the series CSV of the measurement shown (its round and repeat,
    beside its own numbers), whatever columns the scraper wrote."""
    path = store.find_series(result.key, result.round, result.repeat)
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError:
        return []
    columns: dict[str, list[float]] = {}
    for row in rows:
        for name, raw in row.items():
            if name is None or name in ("t", "time", "timestamp", "elapsed_s", "gap"):
                continue
            try:
                columns.setdefault(name, []).append(float(raw))
            except (TypeError, ValueError):
                continue
    return [(name, values) for name, values in columns.items() if values]
