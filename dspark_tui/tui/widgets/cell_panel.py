"""The running cell: progress, live client numbers, and sparklines of the server over the cell."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.widgets import Label, ProgressBar, Sparkline, Static

from dspark_tui.model.client_health import live_client_line
from dspark_tui.model.run_state import SERIES_NAMES, RunState
from dspark_tui.report.words import Texts
from dspark_tui.tui import format as fmt
from dspark_tui.tui import safe
from dspark_tui.tui.words import lang_here, status_said

# The sparklines' labels: `screens.series.<name>` in the catalogue, a name of SERIES_NAMES.
_GPU = ("gpu_util", "gpu_memory_mib", "gpu_power_w")


class CellPanel(Vertical):
    DEFAULT_CSS = """
    CellPanel { height: auto; padding: 0 1; }
    CellPanel #cell-title { text-style: bold; }
    CellPanel ProgressBar { width: 1fr; }
    CellPanel Grid {
        grid-size: 4; grid-columns: 16 1fr 16 1fr; grid-gutter: 0 1; height: auto; grid-rows: 1;
    }
    CellPanel .spark-label { color: $text-muted; width: 1fr; }
    CellPanel Sparkline { height: 1; width: 1fr; }
    CellPanel .gpu { display: none; }
    CellPanel.-gpu .gpu { display: block; }
    CellPanel.-ended #cell-numbers, CellPanel.-ended #sparks, CellPanel.-ended ProgressBar {
        display: none;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._drawn: dict[str, list[float]] = {}
        self._text: tuple[str, str, int, int] | None = None

    def compose(self) -> ComposeResult:
        t = Texts(lang_here(self), "screens")
        yield Label(t("cell.none"), id="cell-title")
        yield ProgressBar(total=1, show_eta=False, id="cell-progress")
        yield Static("", id="cell-numbers")
        with Grid(id="sparks"):
            for name in SERIES_NAMES:
                classes = "gpu" if name in _GPU else ""
                yield Label(t(f"series.{name}"), id=f"label-{name}",
                            classes=f"spark-label {classes}".strip())
                yield Sparkline([], id=f"spark-{name}", classes=classes)

    def show(self, state: RunState) -> None:
        current = state.current
        lang = lang_here(self)
        t = Texts(lang, "screens")
        if current is None:
            title = t("cell.none")
            numbers, total, progress = "", 1, 0
            if state.finished:  # the bar now tells the run's cells, not an empty cell
                status = status_said(lang, state.status, skipped=state.skipped_cells if state.skipped else 0)
                title = t("cell.ended_runs" if state.repeated else "cell.ended_cells",
                          status=status, done=state.done, total=state.total)
                total, progress = max(1, state.total), state.done
        else:
            key = current.key
            which = f" {current.label}" if state.repeated else ""  # round and repeat: r2 p1
            # Rounds in parallel: the header lists every node's cell (a plan index says little).
            where = (t("cell.in_flight", n=state.in_flight - 1) if state.in_flight > 1
                     else t("cell.index", index=current.index, total=current.total))
            arm, scenario = safe.plain(key.arm), safe.plain(key.scenario)
            title = f"{arm} · {scenario} · c{key.concurrency}{which}   {where}"
            live = current.numbers
            failed = "  " + t("header.failed", n=live.failed) if live.failed else ""
            numbers = (
                t("cell.requests", done=current.completed, total=current.num_prompts) + f"{failed}   "
                + t("cell.out", tok_s=fmt.number(live.output_tok_s, 1)) + "\n"
                f"TTFT {fmt.number(live.ttft_p50_ms, 1)}/{fmt.number(live.ttft_p99_ms, 1)} ms  "
                f"TPOT {fmt.number(live.tpot_p50_ms, 2)}/{fmt.number(live.tpot_p99_ms, 2)} ms"
                "  (p50/p99)"
            )
            client, behind = live_client_line(live.client_lag_p99_ms,
                                              live.same_read_fraction, live.mean_itl_ms)
            if client:  # model/client_health.py's judgement, said in the app's language
                lag, same = live.client_lag_p99_ms, live.same_read_fraction
                said = [t("cell.lag", ms=f"{lag:.1f}") if lag is not None else "",
                        t("cell.same_read", share=f"{same:.0%}") if same is not None else ""]
                client = t("cell.client_behind" if behind else "cell.client",
                           facts=t.join(part for part in said if part))
                # The client's own health: a client that fell behind times itself, not the server.
                numbers += "\n" + (f"[$warning]{client}[/]" if behind else client)
            total, progress = max(1, current.num_prompts), current.completed
        shown = (title, numbers, total, progress)
        if shown != self._text:
            self._text = shown
            self.query_one("#cell-title", Label).update(Text(title))  # a Text: names are no markup
            self.query_one("#cell-progress", ProgressBar).update(total=total, progress=progress)
            self.query_one("#cell-numbers", Static).update(numbers)
        for name in SERIES_NAMES:
            data = list(state.series[name])
            if data != self._drawn.get(name):
                self._drawn[name] = data
                self.query_one(f"#spark-{name}", Sparkline).data = _from_zero(data)
                last = _latest(name, data[-1]) if data else ""
                label = t(f"series.{name}")
                self.query_one(f"#label-{name}", Label).update(f"{label} {last}")
        self.set_class(any(state.series[name] for name in _GPU), "-gpu")
        # Ended: the title and bar tell the run's end; the last cell's numbers are history.
        self.set_class(state.finished and state.current is None, "-ended")


def _from_zero(data: list[float]) -> list[float]:
    """Bars measured from zero, so a flat idle series reads as low, not as full."""
    if not data or max(data) <= 0:
        return []
    return [0.0, *data]


def _latest(name: str, value: float) -> str:
    if name == "kv_usage":
        return f"{value * 100:.0f}%"
    if name == "acceptance_length":
        return f"{value:.2f}"
    return f"{value:,.0f}"
