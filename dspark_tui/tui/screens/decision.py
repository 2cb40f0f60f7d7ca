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
from textual.widgets import Label, Markdown, Static

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.decision import Ratio
from dspark_tui.analysis.deploy import DeployAnswer, deploy_answer
from dspark_tui.analysis.layout import manifest_is_sweep
from dspark_tui.analysis.positions import acceptance_by_k
from dspark_tui.analysis.schedule import (
    DECIDED,
    MERGE_CONCURRENCY_SPAN,
    MIN_RUNNING_SAMPLES,
    SINGLE_ANSWER,
    UNSURE_ANSWER,
    Gain,
    flag_value,
    shell_line,
)
from dspark_tui.report.decision_section import break_even_items
from dspark_tui.report.headline import incomplete_lines, schedule_status_line
from dspark_tui.report.tables import signed
from dspark_tui.report.words import Texts
from dspark_tui.results import load_run
from dspark_tui.results.manifest import RunManifest
from dspark_tui.tui import safe
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.words import VERDICTS, lang_of, status_said

NOT_A_SWEEP = Texts("en", "screens")("decision.not_a_sweep")  # the English, for tests


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
    if not manifest_is_sweep(manifest):
        screen.notify(Texts(lang_of(screen.app), "screens")("decision.not_a_sweep"), severity="warning")
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
        t = Texts(lang_of(self.app), "screens")
        yield Label(safe.text(t("decision.loading", name=self.run_dir.name)), id="decision-title")
        with VerticalScroll(id="decision-body"):
            yield Static(id="decision-warnings", classes="warning")
            yield Label(t("decision.heading.schedule"), classes="heading")
            yield Static(id="decision-schedule")
            yield Static(id="decision-notes", classes="note")
            yield Label(t("decision.heading.config"), classes="heading")
            yield Static(id="decision-config")
            yield Label(t("decision.heading.command"), classes="heading")
            yield Static(id="decision-command")
            yield Static(id="decision-port", classes="note")  # apart: selecting the command is all of it
            yield Label(t("decision.heading.map"), classes="heading")
            yield Static(id="decision-map")
            # A sweep with adaptive-verification arms: each against the K chosen per cell.
            yield Label(t("decision.heading.adaptive"), id="decision-adaptive-heading",
                        classes="heading")
            yield Static(id="decision-adaptive")
            yield Label(t("decision.heading.break_even"), classes="heading")
            yield Markdown(id="decision-break")
            yield Label(t("decision.heading.acceptance"), classes="heading")
            yield Static(id="decision-acceptance")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        self.load(partial(read_decision, self.run_dir), self._show,
                  t("decision.reading", name=self.run_dir.name))

    async def _show(self, data: DecisionData) -> None:
        lang = lang_of(self.app)
        t = Texts(lang, "screens")
        title = self.query_one("#decision-title", Label)
        answer = self.answer = data.answer
        if answer is None:
            title.update(Content(f"{safe.plain(data.manifest.name)}: {t('decision.not_a_sweep')}"))
            self.notify(t("decision.not_a_sweep"), severity="warning")
            return
        decision = answer.decision
        title.update(Content(t("decision.title", name=safe.plain(data.manifest.name),
                               status=status_said(lang, data.manifest.status),
                               ks=", ".join(str(k) for k in decision.ks),
                               certainty=certainty(answer, lang))))
        warnings = self.query_one("#decision-warnings", Static)
        lines = warning_lines(answer, lang)
        warnings.update(Content(safe.lines("\n".join(lines))))
        warnings.display = bool(lines)
        self.query_one("#decision-schedule", Static).update(schedule_table(answer, lang))
        self.query_one("#decision-notes", Static).update(Content("\n".join(schedule_notes(answer, lang))))
        self.query_one("#decision-config", Static).update(Content(config_text(answer, lang)))
        self.query_one("#decision-command", Static).update(Content(command_text(answer, lang)))
        # The run's own server's port (a demo's is a random one).
        port = flag_value(answer.command or [], "--port") or ""
        note = self.query_one("#decision-port", Static)
        if port_picked(data.manifest.plan):  # left out of the command: say why, once
            note.update(Content(t("decision.port_picked")))
        else:
            note.update(Content(t("decision.port_note", port=port) if port else ""))
        note.display = bool(port) or port_picked(data.manifest.plan)
        self.query_one("#decision-map", Static).update(best_k_map(answer, lang))
        adaptive = adaptive_table(answer, lang)
        self.query_one("#decision-adaptive", Static).update(adaptive if adaptive is not None else "")
        for selector in ("#decision-adaptive-heading", "#decision-adaptive"):
            self.query_one(selector).display = adaptive is not None
        items = break_even_items(answer, lang)
        await self.query_one("#decision-break", Markdown).update(
            "\n".join(items) if items else t("decision.no_break_even"))
        self.query_one("#decision-acceptance", Static).update(acceptance_table(answer, lang))
        self.query_one("#decision-body", VerticalScroll).focus()

    def action_copy_command(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        if self.answer is None or self.answer.command is None:
            self.notify(t("decision.no_command"), severity="warning")
            return
        self.app.copy_to_clipboard(command_text(self.answer))
        # Sent, not known to be copied: the terminal (OSC 52) may ignore it, as tmux does
        # unless `set-clipboard on`; the text is on the screen to select either way.
        self.notify(t("decision.command_sent"))

    def action_copy_config(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        if self.answer is None or self.answer.config is None:
            self.notify(t("decision.no_config"), severity="warning")
            return
        self.app.copy_to_clipboard(config_text(self.answer))
        self.notify(t("decision.config_sent"))

    def action_back(self) -> None:
        self.app.pop_screen()


# -- what each part shows: plain functions of the answer ---------------------------------------

def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    return table


def certainty(answer: DeployAnswer, lang: str = "en") -> str:
    """The title's word for what the answer rests on (schedule.json's `status`)."""
    t = Texts(lang, "screens")
    status = answer.status
    if status == SINGLE_ANSWER:
        text = t("decision.single")
    elif status == UNSURE_ANSWER:
        unsure = sum(1 for c in answer.decision.choices if c.status != DECIDED)
        text = t("decision.unsure", n=unsure, total=len(answer.decision.choices))
    else:
        text = t("decision.decided")
    if not answer.complete:
        text = t("decision.incomplete", text=text)
    return text


def warning_lines(answer: DeployAnswer, lang: str = "en") -> list[str]:
    """What the report's summary says first about an incomplete sweep and a withheld schedule,
    the same sentences (report/headline.py), without Markdown."""
    said = Texts(lang)
    lines = incomplete_lines(answer.run, said) if answer.run is not None else []
    if answer.withheld and answer.run is not None:
        lines.append(said("summary_k_withheld", path=answer.run_path,
                          arms=said.join(f"`{a}`" for a in answer.run.missing_arms)))
    elif answer.schedule is not None and answer.status != DECIDED:
        lines.append(schedule_status_line(answer, said))
    return [line.replace("**", "") for line in lines]


def schedule_table(answer: DeployAnswer, lang: str = "en") -> Table | Text:
    t = Texts(lang, "screens")
    schedule = answer.schedule
    if schedule is None:
        return Text(t("decision.no_schedule_arms" if answer.withheld else "decision.no_schedule"))
    key = "decision.running_batch" if schedule.keyed_on == "running_batch" else "decision.client_c"
    table = _table(t(key), "K", t("decision.from_cells"))
    for lo, hi, k in schedule.ranges:
        sources = schedule.sources(lo, hi)
        table.add_row(f"{lo}–{hi}" if lo != hi else str(lo), str(k), t.join(sources) or "—")  # not 1–1
    return table


def schedule_notes(answer: DeployAnswer, lang: str = "en") -> list[str]:
    t = Texts(lang, "screens")
    schedule = answer.schedule
    notes: list[str] = []
    if schedule is None:
        return notes
    if schedule.thin:
        cells = t.join(f"{c.scenario} c={c.concurrency} ({c.samples})" for c in schedule.thin)
        notes.append(t("decision.note_thin", cells=cells, min=MIN_RUNNING_SAMPLES))
    elif schedule.keyed_on == "client_concurrency":
        notes.append(t("decision.note_no_batch"))
    for anchor in schedule.wide_anchors:
        cells = t.join(f"{c.scenario} c={c.concurrency}" for c in anchor.cells)
        notes.append(t("decision.note_wide", k=anchor.k, batch=f"{anchor.batch:.1f}", cells=cells,
                       span=f"{MERGE_CONCURRENCY_SPAN:g}"))
    if schedule.largest_measured_batch < schedule.max_num_seqs:
        from_plan = schedule.max_num_seqs_source == "plan"
        source = t("decision.seqs_plan" if from_plan else "decision.seqs_default")
        notes.append(t("decision.note_beyond", largest=schedule.largest_measured_batch,
                       k=schedule.k_at(schedule.max_num_seqs), seqs=schedule.max_num_seqs,
                       source=source))
    if answer.method_source != "plan":
        notes.append(t("decision.note_method", method=repr(answer.method)))
    single = answer.single
    if single is not None:
        line = t("decision.fixed", k=single.k)
        if single.status == UNSURE_ANSWER:
            line = t("decision.fixed_unsure", k=single.k)
        elif single.status == SINGLE_ANSWER:
            line = t("decision.fixed_point", k=single.k)
        if answer.schedule_gain is not None:
            line += t("decision.gain", gain=_gain(answer.schedule_gain))
        traffic = t("decision.traffic_plan" if answer.traffic_source == "plan" else "decision.traffic_equal")
        notes.append(t("decision.note_fixed", line=line, traffic=traffic))
    return notes


def _gain(gain: Gain) -> str:
    text = f"{(gain.ratio - 1) * 100:+.1f}%"
    if gain.low is not None and gain.high is not None:
        text += f" ({(gain.low - 1) * 100:+.1f}…{(gain.high - 1) * 100:+.1f}%)"
    return text


def config_text(answer: DeployAnswer, lang: str = "en") -> str:
    if answer.config is None:
        return Texts(lang, "screens")("decision.no_speculation")
    return json.dumps(answer.config, separators=(",", ":"))


def command_text(answer: DeployAnswer, lang: str = "en") -> str:
    if answer.command is None:
        return Texts(lang, "screens")("decision.command_unknown")
    return shell_line(answer.command)


def port_picked(plan: dict[str, Any] | None) -> bool:
    """Whether the run picked its server's port (`port = 0`, engine/servers/ports.py): then the
    serve command has no --port (analysis/schedule.serve_command). Older runs: False."""
    server = (plan or {}).get("server")
    return isinstance(server, dict) and server.get("port_picked") is True


def _captioned(table: Table, caption: str) -> Group:
    """The table, then its caption as a line of the pane's width: a Rich caption wraps to the
    table's own width (16 characters for a two-scenario map at 80 columns)."""
    return Group(table, Text(caption, style="dim"))


def best_k_map(answer: DeployAnswer, lang: str = "en") -> Group:
    """Concurrency down, scenario across (scenarios are few, concurrencies many: fits 80 columns).
    Each cell: the chosen K and the verdict it rests on."""
    t = Texts(lang, "screens")
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
            top = "" if choice.k == choice.top_k else t("decision.top", k=choice.top_k)
            verdict = t(f"verdict.{choice.verdict}") if choice.verdict in VERDICTS else choice.verdict
            row.append(Text.assemble((f"K={choice.k}", "bold"), f" {verdict}{top}"))
        table.add_row(*row)
    return _captioned(table, t("decision.map_caption", band=decision.band.percent))


def adaptive_table(answer: DeployAnswer, lang: str = "en") -> Group | None:
    """Each adaptive-verification arm against the K chosen in each cell (analysis/adaptive.py):
    its ratio and outcome per cell and, where the sweep has the fixed arm of its own K, the same
    against that arm (the report's own-K column: every draft verified); then how its hybrid
    with the schedule is served. One table an arm, so 80 columns hold both comparisons. None
    without such arms. They are no K: the schedule and the fixed K above are the fixed arms'.
    The analysis's ratios and outcomes as they are: nothing here is recomputed."""
    if not answer.adaptive:
        return None
    t = Texts(lang, "screens")
    parts: list[Table | Text] = []
    for arm in answer.adaptive:
        own = arm.own_arm
        columns = [t("decision.scenario"), "c", t("decision.chosen_k"), t("decision.vs_chosen"),
                   t("decision.outcome")]
        if own is not None:
            columns += [t("decision.vs_own", own=own), t("decision.outcome")]
        table = _table(*columns)
        table.columns[1].justify = "right"
        for cell in arm.cells:
            row = [cell.scenario, str(cell.concurrency), f"K={cell.k}", _signed(cell.vs_chosen),
                   t(f"decision.adaptive_outcome.{cell.outcome}")]
            if own is not None:
                row += [_signed(cell.vs_own), t(f"decision.adaptive_outcome.{cell.own_outcome}")]
            table.add_row(*row)
        parts += [Text(arm.arm, style="bold"), table]
        if own is not None:
            parts.append(Text(t("decision.own_caption", own=own), style="dim"))
        parts.append(Text(t(f"decision.adaptive_form.{arm.form}", arm=arm.arm)))
    return Group(*parts)


def _signed(ratio: Ratio | None) -> str:
    """The ratio's point as the report writes it (`+8.1%`), `—` where there is none."""
    return "—" if ratio is None else signed(ratio.value)


def acceptance_table(answer: DeployAnswer, lang: str = "en") -> Table | Group | Text:
    """Per arm its mean acceptance length and per-position acceptance over its cells: the fixed
    K (analysis/positions.acceptance_by_k), then each adaptive-verification arm by its name
    (AdaptiveArm.acceptance: the same means of its own cells, as the report's server table and
    acceptance chart give it), with a line saying what its positions mean, or that it has no
    counters."""
    t = Texts(lang, "screens")
    arms = acceptance_by_k(answer.counters)
    adaptive = [(arm, arm.acceptance) for arm in answer.adaptive]
    measured = [(arm, acceptance) for arm, acceptance in adaptive if acceptance is not None]
    if not arms and not measured:
        return Text(t("decision.no_counters"))
    rows = [(str(a.k), a) for a in arms] + [(arm.arm, acceptance) for arm, acceptance in measured]
    width = max(len(a.cumulative) for _, a in rows)
    table = _table("K", t("decision.cells"), t("decision.accept_len"),
                   *(f"p{i}" for i in range(1, width + 1)))
    for name, arm in rows:
        length = "—" if arm.accept_length is None else f"{arm.accept_length:.2f}"
        rates = [f"{rate * 100:.0f}%" for rate in arm.cumulative]
        table.add_row(Text(name), str(arm.cells), length, *rates, *([""] * (width - len(rates))))
    notes = [t("decision.adaptive_acceptance", arm=arm.arm, k=arm.k) if acceptance is not None
             else t("decision.adaptive_no_counters", arm=arm.arm) for arm, acceptance in adaptive]
    conditional = [p.conditional for p in answer.positions]
    if any(c is not None for c in conditional):
        notes.insert(0, t("decision.acceptance_caption", width=width, rates=" ".join(
            "—" if c is None else f"{c * 100:.0f}%" for c in conditional)))
    return _captioned(table, "\n".join(notes)) if notes else table
