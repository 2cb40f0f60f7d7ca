"""The live run: the same screen for a run this app started, one attached to, and a replay.

It follows the run's events.jsonl on a timer (read and parsed off the UI thread), folds the
events into a RunState and redraws at most a few times a second; when a measurement lands, the
A/B table's verdict rows (numpy, scipy) are computed in a worker thread too, so the UI thread
folds and draws only (tests/tui/test_table_off_ui.py). It never runs a benchmark itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Tree

from dspark_tui.model import CellKey, CellResult, Plan, UserError
from dspark_tui.model.events import CellFailed, Event, Notice, RunControl, RunFinished
from dspark_tui.model.run_state import RunState
from dspark_tui.report.words import Texts
from dspark_tui.results import RunManifest, RunStore
from dspark_tui.results.follow import EventFollower
from dspark_tui.tui.run_link import RunLink
from dspark_tui.tui.screens.confirm import ConfirmScreen
from dspark_tui.tui.widgets.ab_table import ABTable
from dspark_tui.tui.widgets.cell_panel import CellPanel
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.widgets.log_pane import LogPane
from dspark_tui.tui.widgets.plan_tree import PlanTree
from dspark_tui.tui.widgets.run_header import RunHeader
from dspark_tui.tui.widgets.run_summary import RunSummary
from dspark_tui.tui.words import (
    SaidBindings,
    event_said,
    lang_of,
    notice_said,
    status_said,
    verdict_said,
)

if TYPE_CHECKING:
    from dspark_tui.analysis.live import ComparisonRow
    from dspark_tui.analysis.verdicts import Settings

REFRESH_S = 0.5  # at most two redraws a second: enough for people, cheap for the box

Table = tuple[list["ComparisonRow"], list[str]]


def table_rows(measurements: list[CellResult], arms: list[str], scenarios: list[str],
               settings: Settings, baseline: str | None) -> Table:
    """The A/B table's rows with their verdicts (numpy, scipy): run in a worker thread."""
    from dspark_tui.analysis.live import comparison_rows

    rows = comparison_rows(measurements, arms, scenarios, settings=settings, baseline=baseline)
    return rows, arms

log = logging.getLogger("dspark_tui.tui")


# Below this many rows the server log takes the place of the running cell's numbers and
# sparklines (its title and bar stay), so that at 80x24 the A/B table keeps its rows.
SHORT_ROWS = 28


class RunScreen(SaidBindings, Screen[None]):
    DEFAULT_CSS = """
    RunScreen.-short LogPane { height: 8; }
    RunScreen.-short.-log CellPanel #cell-numbers, RunScreen.-short.-log CellPanel #sparks {
        display: none;
    }
    RunScreen.-short.-log RunSummary { max-height: 5; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pause", "Pause", id="run.pause", tooltip="pause after this cell / resume"),
        Binding("s", "skip", "Skip", id="run.skip", tooltip="skip the current cell"),
        Binding("a", "abort", "Abort", id="run.abort", tooltip="stop the run, keep results"),
        Binding("t", "retry", "Retry", id="run.retry",
                tooltip="run the failed and skipped cells again (once the run has ended: resume)"),
        Binding("c", "charts", "Charts", id="run.charts",
                tooltip="tok/s, TPOT and TTFT against concurrency per arm, one scenario at a time"),
        Binding("l", "toggle_log", "Log", id="run.log", tooltip="show/hide the server log"),
        # Off the footer (80 columns): Enter on a failed cell in the tree says the same.
        Binding("f", "reason", "Why", id="run.reason", show=False,
                tooltip="why the selected cell failed (or Enter on it)"),
        Binding("r", "report", "Report", id="run.report"),
        # Off the footer (80 columns would lose Back and Quit); in `?`, the palette and the
        # notice a finished K sweep gives.
        Binding("d", "decision", "Decision", id="run.decision", show=False,
                tooltip="when the run has ended: a K sweep's schedule and serve command"),
        Binding("escape", "back", "Back", id="run.back", show=False,  # 80 columns: `? Help` fits
                tooltip="back to History"),
    ]

    def __init__(self, run_dir: Path, link: RunLink | None = None, *,
                 clock: Callable[[], float] | None = None) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.link = link
        self.clock = clock or time.time
        self.state = RunState()
        self.follower = EventFollower(self.run_dir)
        self._scenarios: list[str] = []
        self._manifest: RunManifest | None = None
        self._baseline: str | None = None  # the K = 0 arm of a K sweep
        self._drawn_version = -1
        self._drawn_results = -1
        self._polling = False
        self._runner_gone_told = False
        self._caught_up = False  # the first poll replays history: no notifications for it
        self._errors_told: set[str] = set()
        self._bindings_for: tuple[bool, bool, int, int] | None = None  # what the footer was drawn for
        self._summary_of: float | None = None  # the end (finished_t) the summary was read for

    @property
    def mode(self) -> str:
        if self.link is None:
            return "replay"
        if self.link.read_only:
            return "read-only"
        return "attached" if not self.link.owned else "live"

    def compose(self) -> ComposeResult:
        yield RunHeader(id="run-header")
        yield RunSummary(id="run-summary")  # the whole width: the answer, once the run has ended
        with Horizontal(id="run-body"):
            yield PlanTree(id="plan-tree")
            with Vertical(id="run-main"):
                yield CellPanel(id="cell-panel")
                yield ABTable(id="ab-table")
        yield LogPane(id="log-pane")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        self.set_class(self.app.size.height < SHORT_ROWS, "-short")
        try:
            self._seed_from_disk()
        except Exception as exc:  # the events still tell the run; a bad file must not end the app
            self._tell_error("reading the saved cells", exc)
        self.set_interval(REFRESH_S, self._tick)
        self.call_after_refresh(self._tick)

    def _seed_from_disk(self) -> None:
        """The plan's cells (pending) and cell files already saved, before any event arrives."""
        store = RunStore(self.run_dir)
        try:
            manifest = store.read_manifest()
        except UserError:
            return
        self.state.name = manifest.name
        self._scenarios = list(manifest.scenarios)
        self._manifest = manifest
        from dspark_tui.analysis.layout import baseline_arm

        self._baseline = baseline_arm(manifest)
        try:
            plan = Plan.model_validate(manifest.plan)
            self.state.expect_cells(cell.key for cell in plan.cells())
        except ValueError:
            pass
        cells, _ = store.load_cells()
        for result in cells.values():
            self.state.add_saved(result)

    async def _tick(self) -> None:
        if self._polling:
            return
        self._polling = True
        try:
            await self._poll()
        finally:
            self._polling = False

    async def _poll(self) -> None:
        """Read and parse in a worker thread, fold on the UI thread, then (when a measurement
        landed) compute the table's verdict rows in a worker thread: the UI thread only draws."""
        try:
            events = await asyncio.to_thread(self._read_new)
        except Exception as exc:  # an unreadable event log costs the view its updates, not the app
            self._tell_error("reading the run's events", exc)
            return
        try:
            for event in events:
                self.state.apply(event)
                if self._caught_up:
                    self._announce(event)
            self._caught_up = True
            self._check_runner()
            table = None
            if self.state.measured != self._drawn_results:  # a measurement ended: new figures
                self._drawn_results = self.state.measured
                table = await asyncio.to_thread(table_rows, *self._table_inputs())
            self.redraw(table)
        except Exception as exc:  # a drawing bug must not take the watch (and the runner) down
            self._tell_error("display", exc)

    def _read_new(self) -> list[Event]:
        """The events since the last poll; the first poll (a run's whole history) without those
        later ones replace, which need not be parsed nor folded (lane_board.py)."""
        return self.follower.poll(catch_up=not self._caught_up)

    def _tell_error(self, what: str, exc: Exception) -> None:
        """Logged and told once per kind of failure: every later tick would only repeat it."""
        if what not in self._errors_told:
            self._errors_told.add(what)
            log.error("run screen: %s failed", what, exc_info=exc)
            self.notify(f"{what} failed (see the log): {type(exc).__name__}: {exc}", severity="error",
                        timeout=15)

    def _t(self, key: str, **values: object) -> str:
        return Texts(lang_of(self.app), "screens")(key, **values)

    def _announce(self, event: Event) -> None:
        """Toasts in the app's language by event kind (the catalogue's `screens.event.*`); what
        the engine says in its own words (a failure's reason, a field of a notice) stays as it came."""
        lang = lang_of(self.app)
        t = Texts(lang, "screens")
        if isinstance(event, CellFailed):
            self.notify(t("event.cell_failed", cell=event.key.id, reason=event.reason),
                        severity="error", timeout=8)
        elif isinstance(event, Notice) and event.level != "info":
            self.notify(notice_said(lang, event.message), severity=event.level, timeout=6)
        elif isinstance(event, RunControl) and event.message:
            self.notify(event_said(lang, "control", event.action, event.message), timeout=4)
        elif isinstance(event, RunFinished):
            severity: SeverityLevel = "information" if event.status == "completed" else "warning"
            status = (t("header.paused") if self.state.paused and not self.state.finished
                      else status_said(lang, self.state.status,
                                       skipped=self.state.skipped_cells if self.state.skipped else 0))
            self.notify(t("event.finished_sweep" if self._is_sweep() else "event.finished",
                          status=status, done=event.done, failed=event.failed, total=event.total),
                        severity=severity, timeout=10)

    def _check_runner(self) -> None:
        link = self.link
        if link is None or self.state.finished or self._runner_gone_told:
            return
        if link.alive():
            return
        # Gone since the poll: its last events (RunFinished) may have landed in between.
        for event in self.follower.poll():
            self.state.apply(event)
            self._announce(event)
        if not self.state.finished and self.state.runner_gone(self.clock()):
            self._runner_gone_told = True
            self.notify(self._t("toast.runner_gone"), severity="error", timeout=10)

    def redraw(self, table: Table | None = None) -> None:
        """Draw the state; `table` (rows and arms, computed off the UI thread) when a measurement
        landed since the last one."""
        now = self.clock()
        self.query_one(RunHeader).show(self.state, now, self.mode)
        if self.state.version == self._drawn_version and table is None:
            return
        self._drawn_version = self.state.version
        drawn_for = (self.state.finished, self.state.paused, self.state.failed, self.state.skipped)
        if self._bindings_for != drawn_for:
            self._bindings_for = drawn_for
            self.refresh_bindings()
        with self.app.batch_update():
            self.query_one(PlanTree).show(self.state)
            self.query_one(CellPanel).show(self.state)
            self.query_one(LogPane).show(self.state)
            if table is not None:
                self.query_one(ABTable).show(*table)
            self._show_end()

    def _show_end(self) -> None:
        """Once the run has ended its summary heads the screen (the cell panel keeps only its
        end line); a resume that starts the run again hides it."""
        state = self.state
        ended = state.finished and bool(state.results())
        summary = self.query_one(RunSummary)
        if not ended:
            summary.hide()
            self._summary_of = None
        elif self._summary_of != state.finished_t:
            self._summary_of = state.finished_t
            summary.load(self.run_dir, getattr(self.app, "lang", "en"))

    def _table_inputs(self) -> tuple[list[CellResult], list[str], list[str], Settings, str | None]:
        """What the table's rows are computed from, taken on the UI thread (the fold's own
        lists go on changing while the worker computes)."""
        from dspark_tui.analysis.verdicts import Settings

        return (self.state.table_measurements(), list(self.state.arms), list(self._scenarios),
                Settings.of(self.state.settings), self._baseline)

    # -- actions ---------------------------------------------------------------------------

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        """While the run is paused, `p` says Resume: the header says paused, and the key bar
        says how to go on (the runner's "paused; resume to go on" is an info notice, no toast)."""
        active = super().active_bindings
        if not (self.state.paused and not self.state.finished):
            return active
        t = Texts(lang_of(self.app), "screens")
        for key, (node, binding, enabled, tooltip) in active.items():
            if binding.id == "run.pause":
                resume = dataclasses.replace(binding, description=t("key.run.resume"),
                                             tooltip=t("tip.run.resume"))
                active[key] = ActiveBinding(node, resume, enabled, resume.tooltip if tooltip else tooltip)
        return active

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer offers what applies now (80 columns hold no more): no pause, skip or
        abort once the run has ended, no retry while nothing failed or was skipped."""
        state = self.state
        if action in ("pause", "skip", "abort") and state.finished:
            return False
        return action != "retry" or bool(state.failed_cells or state.skipped_cells)

    def _control(self, action: str) -> None:
        if self.link is None or self.state.finished:
            self.notify(self._t("toast.not_running"), severity="warning")
            return
        if self.link.read_only:
            self.notify(self._t("toast.read_only"), severity="warning")
            return
        try:
            self.link.control(action)
        except (UserError, OSError) as exc:
            self.notify(f"{action}: {exc}", severity="error")
            return
        self.notify(self._t("toast.requested", action=self._t(f"toast.action.{action}")))

    def action_pause(self) -> None:
        self._control("resume" if self.state.paused else "pause")

    def action_skip(self) -> None:
        self._control("skip")

    def action_retry(self) -> None:
        """Failed cells go again at once; skipped ones were the user's choice, so ask first.
        Once the run has ended only a resume can measure them: offer that."""
        state = self.state
        failed, skipped = len(state.failed_cells), state.skipped_cells
        if not failed and not skipped:
            self.notify(self._t("toast.nothing_to_retry"))
            return
        if state.finished:
            resume = getattr(self.app, "resume_run", None)
            if resume is not None:
                resume(self.run_dir)  # asks before it starts
            return
        if not skipped:
            self._control("retry")
            return
        t = Texts(lang_of(self.app), "screens")
        what = (t("confirm.both", failed=failed, skipped=skipped) if failed and skipped
                else t("confirm.failed", n=failed) if failed else t("confirm.skipped", n=skipped))

        def answered(yes: bool | None) -> None:
            if yes:
                self._control("retry")

        self.app.push_screen(ConfirmScreen(t("confirm.retry", what=what), t("confirm.retry_yes")),
                             answered)

    def action_charts(self) -> None:
        from dspark_tui.tui.screens.charts import ChartScreen

        self.app.push_screen(ChartScreen(self.state, scenarios=self._scenarios))

    def action_abort(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        if self.link is None or self.state.finished or self.link.read_only:
            self._control("abort")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._control("abort")

        self.app.push_screen(
            ConfirmScreen(t("confirm.abort"), t("confirm.abort_yes")),
            answered,
        )

    def action_toggle_log(self) -> None:
        self.query_one(LogPane).toggle_class("-visible")
        self.set_class(self.query_one(LogPane).has_class("-visible"), "-log")

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.height < SHORT_ROWS, "-short")

    def action_reason(self) -> None:
        tree = self.query_one(PlanTree)
        key = tree.cursor_node.data if tree.cursor_node is not None else None
        cell = self.state.cells.get(key) if isinstance(key, CellKey) else None
        if cell is None or cell.phase not in ("failed", "skipped"):
            failed = self.state.failed_cells
            cell = failed[-1] if failed else None
        if cell is None:
            self.notify(self._t("toast.no_failed_cell"))
            return
        self.notify(f"{cell.key.id}: {cell.reason}",
                    title=self._t("toast.cell_title", phase=verdict_said(lang_of(self.app), cell.phase)),
                    severity="error", timeout=15)

    @on(Tree.NodeSelected)
    def _node_selected(self, event: Tree.NodeSelected) -> None:
        key = event.node.data
        if isinstance(key, CellKey):
            cell = self.state.cells.get(key)
            if cell is not None and cell.phase in ("failed", "skipped"):
                self.action_reason()

    def action_report(self) -> None:
        from dspark_tui.tui.screens.report import ReportScreen

        if not self.state.results():
            self.notify(self._t("toast.no_cells_yet"), severity="warning")
            return
        self.app.push_screen(ReportScreen(self.run_dir))

    def _is_sweep(self) -> bool:
        from dspark_tui.analysis.layout import manifest_is_sweep

        return self._manifest is not None and manifest_is_sweep(self._manifest)

    def action_decision(self) -> None:
        from dspark_tui.tui.screens.decision import open_decision

        if not self.state.finished:
            self.notify(self._t("toast.decision_after_end"), severity="warning")
            return
        if self._manifest is None:
            self.notify(f"{self.run_dir}: run.json is unreadable", severity="error", markup=False)
            return
        open_decision(self, self.run_dir, self._manifest)

    def action_back(self) -> None:
        self.app.pop_screen()
