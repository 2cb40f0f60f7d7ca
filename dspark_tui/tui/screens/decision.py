"""What to deploy, for a finished K sweep: the schedule, its `--speculative-config` and serve
command (copyable), the best K per cell, break-even points and per-position acceptance.

Everything comes from `report.deploy.deploy_answer`, the same answer the report and
`schedule.json` give; this screen only lays it out. One scrolling column, so 80 columns wrap
instead of clipping.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Label, Markdown, Static

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.decision import is_k_sweep
from dspark_tui.analysis.deploy import DeployAnswer, deploy_answer
from dspark_tui.analysis.layout import manifest_k_values
from dspark_tui.analysis.positions import acceptance_by_k
from dspark_tui.analysis.schedule import (
    DECIDED,
    MERGE_CONCURRENCY_SPAN,
    MIN_RUNNING_SAMPLES,
    SINGLE_ANSWER,
    UNSURE_ANSWER,
    Gain,
    shell_line,
)
from dspark_tui.report.decision_section import break_even_items
from dspark_tui.report.headline import incomplete_lines, schedule_status_line
from dspark_tui.report.words import Texts
from dspark_tui.results import load_run
from dspark_tui.results.manifest import RunManifest
from dspark_tui.tui import safe
from dspark_tui.tui.screens.loading import LoadingScreen

NOT_A_SWEEP = ("not a K sweep: the decision view needs arms that differ only in K, with a K = 0 "
               "arm or at least three K values")


@dataclass
class DecisionData:
    manifest: RunManifest
    answer: DeployAnswer | None


def read_decision(run_dir: Path) -> DecisionData:
    """Load the run and compute its K decision (pandas: seconds on a big sweep, so in a worker)."""
    run = load_run(run_dir)
    return DecisionData(run.manifest, deploy_answer(analyse(run)))


def open_decision(screen: Screen[Any], run_dir: Path, manifest: RunManifest) -> None:
    """The decision view over `screen`, or one notification saying why there is none; told from
    run.json alone, before any cell is read."""
    if not is_k_sweep(manifest_k_values(manifest)):
        screen.notify(NOT_A_SWEEP, severity="warning")
        return
    screen.app.push_screen(DecisionScreen(run_dir))


class DecisionScreen(LoadingScreen):
    DEFAULT_CSS = """
    DecisionScreen #decision-title {
        background: $panel; padding: 0 1; width: 1fr; height: auto;
    }
    DecisionScreen #decision-body { height: 1fr; padding: 0 1; }
    DecisionScreen .heading { color: $accent; text-style: bold; margin-top: 1; width: 1fr; }
    DecisionScreen .note { color: $text-muted; }
    DecisionScreen .warning { color: $warning; display: none; }
    DecisionScreen #decision-command, DecisionScreen #decision-config {
        background: $boost; padding: 0 1;
    }
    DecisionScreen Markdown { margin: 0; padding: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_command", "Copy command", id="decision.copy",
                tooltip="copy the serve command to the clipboard"),
        Binding("j", "copy_config", "Copy JSON", id="decision.copy_json",
                tooltip="copy the --speculative-config JSON to the clipboard"),
        Binding("escape", "back", "Back", id="decision.back"),
    ]
    ERROR_LINE = "#decision-title"

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = Path(run_dir)
        self.answer: DeployAnswer | None = None

    def compose(self) -> ComposeResult:
        yield Label(safe.text(f"loading the K sweep of {self.run_dir.name} …"), id="decision-title")
        with VerticalScroll(id="decision-body"):
            yield Static(id="decision-warnings", classes="warning")
            yield Label("Schedule: running batch → K", classes="heading")
            yield Static(id="decision-schedule")
            yield Static(id="decision-notes", classes="note")
            yield Label("--speculative-config   (j copies)", classes="heading")
            yield Static(id="decision-config")
            yield Label("Serve command   (c copies)", classes="heading")
            yield Static(id="decision-command")
            yield Label("Best K per cell", classes="heading")
            yield Static(id="decision-map")
            yield Label("Break-even", classes="heading")
            yield Markdown(id="decision-break")
            yield Label("Acceptance per draft position, per arm", classes="heading")
            yield Static(id="decision-acceptance")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.load(partial(read_decision, self.run_dir), self._show,
                  f"reading the K sweep of {self.run_dir.name}")

    async def _show(self, data: DecisionData) -> None:
        title = self.query_one("#decision-title", Label)
        answer = self.answer = data.answer
        if answer is None:
            title.update(Content(f"{safe.plain(data.manifest.name)}: {NOT_A_SWEEP}"))
            self.notify(NOT_A_SWEEP, severity="warning")
            return
        decision = answer.decision
        title.update(Content(f"{safe.plain(data.manifest.name)}  [{data.manifest.status}]  K = "
                             f"{', '.join(str(k) for k in decision.ks)}  {certainty(answer)}"))
        warnings = self.query_one("#decision-warnings", Static)
        lines = warning_lines(answer)
        warnings.update(Content(safe.lines("\n".join(lines))))
        warnings.display = bool(lines)
        self.query_one("#decision-schedule", Static).update(schedule_table(answer))
        self.query_one("#decision-notes", Static).update(Content("\n".join(schedule_notes(answer))))
        self.query_one("#decision-config", Static).update(Content(config_text(answer)))
        self.query_one("#decision-command", Static).update(Content(command_text(answer)))
        self.query_one("#decision-map", Static).update(best_k_map(answer))
        items = break_even_items(answer)
        await self.query_one("#decision-break", Markdown).update(
            "\n".join(items) if items else "No neighbouring K pair crosses in the measured grid.")
        self.query_one("#decision-acceptance", Static).update(acceptance_table(answer))
        self.query_one("#decision-body", VerticalScroll).focus()

    def action_copy_command(self) -> None:
        if self.answer is None or self.answer.command is None:
            self.notify("no serve command to copy (the plan is not in run.json)", severity="warning")
            return
        self.app.copy_to_clipboard(command_text(self.answer))
        self.notify("serve command copied to the clipboard")

    def action_copy_config(self) -> None:
        if self.answer is None or self.answer.config is None:
            self.notify("no --speculative-config to copy", severity="warning")
            return
        self.app.copy_to_clipboard(config_text(self.answer))
        self.notify("--speculative-config JSON copied to the clipboard")

    def action_back(self) -> None:
        self.app.pop_screen()


# -- what each part shows: plain functions of the answer ---------------------------------------

def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    return table


def certainty(answer: DeployAnswer) -> str:
    """The title's word for what the answer rests on (schedule.json's `status`)."""
    status = answer.status
    if status == SINGLE_ANSWER:
        text = "UNVERIFIED: single measurements, point estimates only"
    elif status == UNSURE_ANSWER:
        unsure = sum(1 for c in answer.decision.choices if c.status != DECIDED)
        text = f"NOT DECIDED: {unsure} of {len(answer.decision.choices)} cells unsure"
    else:
        text = "decided (not yet confirmed by --verify)"
    if not answer.complete:
        text = "INCOMPLETE RUN; " + text
    return text


def warning_lines(answer: DeployAnswer) -> list[str]:
    """What the report's summary says first about an incomplete sweep and a withheld schedule,
    the same sentences (report/headline.py), without Markdown."""
    t = Texts("en")
    lines = incomplete_lines(answer.run, t) if answer.run is not None else []
    if answer.withheld and answer.run is not None:
        lines.append(t("summary_k_withheld", arms=t.join(f"`{a}`" for a in answer.run.missing_arms),
                       path=answer.run_path))
    elif answer.schedule is not None and answer.status != DECIDED:
        lines.append(schedule_status_line(answer, t))
    return [line.replace("**", "") for line in lines]


def schedule_table(answer: DeployAnswer) -> Table | Text:
    schedule = answer.schedule
    if schedule is None:
        if answer.withheld:
            return Text("no schedule: the sweep lacks arms (see above)")
        return Text("no schedule: no cell has a choice")
    key = "batch" if schedule.keyed_on == "running_batch" else "client c"
    table = _table(f"running {key}", "K", "from the cells")
    for lo, hi, k in schedule.ranges:
        sources = schedule.sources(lo, hi)
        table.add_row(f"{lo}–{hi}", str(k), ", ".join(sources) or "—")
    return table


def schedule_notes(answer: DeployAnswer) -> list[str]:
    schedule = answer.schedule
    notes: list[str] = []
    if schedule is None:
        return notes
    if schedule.thin:
        cells = ", ".join(f"{c.scenario} c={c.concurrency} ({c.samples})" for c in schedule.thin)
        notes.append(f"Keyed on the client's concurrency: the running batch of {cells} was read "
                     f"fewer than {MIN_RUNNING_SAMPLES} times.")
    elif schedule.keyed_on == "client_concurrency":
        notes.append("Keyed on the client's concurrency: some cells have no /metrics running batch.")
    for anchor in schedule.wide_anchors:
        cells = ", ".join(f"{c.scenario} c={c.concurrency}" for c in anchor.cells)
        notes.append(f"K = {anchor.k} at batch {anchor.batch:.1f} joins {cells}: concurrencies more "
                     f"than {MERGE_CONCURRENCY_SPAN:g}x apart whose running batches overlapped.")
    if schedule.largest_measured_batch < schedule.max_num_seqs:
        source = "the plan's --max-num-seqs" if schedule.max_num_seqs_source == "plan" else "vLLM's default"
        notes.append(f"Beyond the largest measured batch ({schedule.largest_measured_batch}) the last "
                     f"choice, K = {schedule.k_at(schedule.max_num_seqs)}, holds up to "
                     f"{schedule.max_num_seqs} ({source}).")
    if answer.method_source != "plan":
        notes.append(f"method {answer.method!r} was not in the plan: check it for your model.")
    single = answer.single
    if single is not None:
        line = f"Without the dynamic field: fixed K = {single.k}"
        if single.status == UNSURE_ANSWER:
            line = (f"Without the dynamic field: no fixed K is shown best; the leader is K = "
                    f"{single.k}")
        elif single.status == SINGLE_ANSWER:
            line += " (a point estimate)"
        if answer.schedule_gain is not None:
            line += f"; the schedule's expected gain over it {_gain(answer.schedule_gain)}"
        traffic = "the plan's [traffic]" if answer.traffic_source == "plan" else "equal weights"
        notes.append(f"{line} ({traffic}). Needs vLLM ≥ 0.25.0 (docs/decision.md).")
    return notes


def _gain(gain: Gain) -> str:
    text = f"{(gain.ratio - 1) * 100:+.1f}%"
    if gain.low is not None and gain.high is not None:
        text += f" ({(gain.low - 1) * 100:+.1f}…{(gain.high - 1) * 100:+.1f}%)"
    return text


def config_text(answer: DeployAnswer) -> str:
    if answer.config is None:
        return "none: the schedule never speculates (K = 0 everywhere)"
    return json.dumps(answer.config, separators=(",", ":"))


def command_text(answer: DeployAnswer) -> str:
    if answer.command is None:
        return "not known: run.json holds no plan to build it from"
    return shell_line(answer.command)


def _captioned(table: Table, caption: str) -> Group:
    """The table, then its caption as a line of the pane's width: a Rich caption wraps to the
    table's own width (16 characters for a two-scenario map at 80 columns)."""
    return Group(table, Text(caption, style="dim"))


def best_k_map(answer: DeployAnswer) -> Group:
    """Concurrency down, scenario across (scenarios are few, concurrencies many: fits 80 columns).
    Each cell: the chosen K and the verdict it rests on."""
    decision = answer.decision
    scenarios = list(dict.fromkeys(c.scenario for c in decision.choices))
    concurrencies = sorted({c.concurrency for c in decision.choices})
    table = _table("c", *scenarios)
    table.columns[0].justify = "right"
    for concurrency in concurrencies:
        row: list[Text | str] = [str(concurrency)]
        for scenario in scenarios:
            choice = decision.choice(scenario, concurrency)
            if choice is None:
                row.append("—")
                continue
            top = "" if choice.k == choice.top_k else f", top {choice.top_k}"
            row.append(Text.assemble((f"K={choice.k}", "bold"), f" {choice.verdict}{top}"))
        table.add_row(*row)
    return _captioned(table, f"chosen: the smallest K within the {decision.band.percent}% tie "
                             "band of the fastest; verdict of the comparison the choice rests on")


def acceptance_table(answer: DeployAnswer) -> Table | Group | Text:
    arms = acceptance_by_k(answer.counters)
    if not arms:
        return Text("no spec-decode counters (/metrics) in this run")
    width = max(len(a.cumulative) for a in arms)
    table = _table("K", "cells", "accept len", *(f"p{i}" for i in range(1, width + 1)))
    for arm in arms:
        length = "—" if arm.accept_length is None else f"{arm.accept_length:.2f}"
        rates = [f"{rate * 100:.0f}%" for rate in arm.cumulative]
        table.add_row(str(arm.k), str(arm.cells), length, *rates, *([""] * (width - len(rates))))
    conditional = [p.conditional for p in answer.positions]
    if any(c is not None for c in conditional):
        return _captioned(table, f"p1…p{width}: share of drafts whose position is accepted; "
                          "given the one before accepted: "
                          + " ".join("—" if c is None else f"{c * 100:.0f}%" for c in conditional))
    return table
