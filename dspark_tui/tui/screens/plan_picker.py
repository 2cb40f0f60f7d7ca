"""Choosing what to run: a plan (shipped, the user's folder, or a path), its arms and scenarios."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, Input, Label, OptionList, SelectionList
from textual.widgets.option_list import Option

from dspark_tui.model import Plan, UserError
from dspark_tui.plans import resolve_plan, shipped_plan_names
from dspark_tui.report.words import Texts
from dspark_tui.tui import safe
from dspark_tui.tui.screens.dialog import Dialog
from dspark_tui.tui.words import SaidBindings, lang_of


@dataclass
class StartRequest:
    plan: str
    arms: list[str] | None = None
    scenarios: list[str] | None = None
    detach: bool = False
    resume: Path | None = None
    verify: Path | None = None  # a finished K sweep whose schedule this run verifies
    cells: int = 0
    notes: list[str] = field(default_factory=list)


def plan_choices(plans_dir: Path, lang: str = "en") -> list[tuple[str, str]]:
    """(what to resolve, what to show): shipped plans, then the user's plan files."""
    shipped = Texts(lang, "screens")("picker.shipped")
    choices = [(name, f"{name}  ({shipped})") for name in shipped_plan_names()]
    if plans_dir.is_dir():
        choices += [(str(p), f"{p.stem}  ({p})") for p in sorted(plans_dir.glob("*.toml"))]
    return choices


class PlanPickerScreen(SaidBindings, Dialog[StartRequest | None]):
    DEFAULT_CSS = """
    PlanPickerScreen > Vertical {
        width: 90%; max-width: 110; height: 90%;
        border: round $primary; padding: 0 1;
    }
    PlanPickerScreen #plans { height: auto; max-height: 9; }  /* seven plans before it scrolls */
    /* A plan loaded: its arms and scenarios get the rows (at 80x24 the full plan list left the
       two lists no height at all); the list scrolls in 4 rows. */
    PlanPickerScreen.-loaded #plans { max-height: 4; }
    PlanPickerScreen #choose { height: 1fr; display: none; }
    PlanPickerScreen #choose.-loaded { display: block; }
    PlanPickerScreen SelectionList { width: 1fr; height: 1fr; }
    PlanPickerScreen #plan-error { color: $error; }
    PlanPickerScreen #start-row { height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel"),
        Binding("ctrl+s", "start", "Start", id="picker.start"),
    ]

    def __init__(self, plans_dir: Path, default_plan: str = "demo") -> None:
        super().__init__()
        self.plans_dir = plans_dir
        self.default_plan = default_plan
        self.plan: Plan | None = None
        self.source = ""

    def compose(self) -> ComposeResult:
        t = Texts(lang_of(self.app), "screens")
        choices = plan_choices(self.plans_dir, lang_of(self.app))
        with Vertical():
            yield Label(t("picker.title"), id="picker-title")
            yield OptionList(*[Option(label, id=value) for value, label in choices], id="plans")
            yield Input(placeholder=t("picker.path_hint"), id="plan-path")
            yield Label("", id="plan-error")
            with Vertical(id="choose"):
                yield Label("", id="plan-summary")
                with Horizontal():
                    yield SelectionList[str](id="arms")
                    yield SelectionList[str](id="scenarios")
                with Horizontal(id="start-row"):
                    yield Checkbox(t("picker.detached"), id="detach")
                    yield Button(t("picker.start"), variant="primary", id="start")

    def on_mount(self) -> None:
        options = self.query_one("#plans", OptionList)
        options.focus()
        for index in range(options.option_count):
            if options.get_option_at_index(index).id == self.default_plan:
                options.highlighted = index

    @on(OptionList.OptionSelected, "#plans")
    def _plan_chosen(self, event: OptionList.OptionSelected) -> None:
        self.load(str(event.option.id))

    @on(Input.Submitted, "#plan-path")
    def _path_given(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.load(event.value.strip())

    def load(self, name_or_path: str) -> None:
        error = self.query_one("#plan-error", Label)
        try:
            plan, _source = resolve_plan(name_or_path, self.plans_dir)
        except UserError as exc:
            error.update(safe.text(str(exc)))
            return
        error.update("")
        self.plan, self.source = plan, name_or_path
        arms = self.query_one("#arms", SelectionList)
        scenarios = self.query_one("#scenarios", SelectionList)
        arms.clear_options()
        scenarios.clear_options()
        t = Texts(lang_of(self.app), "screens")
        arms.add_options([(t("picker.arm", arm=a.name), a.name, True) for a in plan.arms])
        scenarios.add_options([(f"{s.name}  c={','.join(map(str, s.concurrencies))}", s.name, True)
                               for s in plan.scenarios])
        self.query_one("#choose").add_class("-loaded")
        self.add_class("-loaded")
        self._summarize()
        arms.highlighted = 0
        scenarios.highlighted = 0
        arms.focus()

    @on(SelectionList.SelectedChanged)
    def _summarize(self) -> None:
        if self.plan is None:
            return
        request = self.request()
        t = Texts(lang_of(self.app), "screens")
        self.query_one("#plan-summary", Label).update(t(
            "picker.summary_one" if request.cells == 1 else "picker.summary", name=self.plan.name,
            cells=request.cells, driver=self.plan.bench.driver))

    def request(self) -> StartRequest:
        assert self.plan is not None
        arms = list(self.query_one("#arms", SelectionList).selected)
        scenarios = list(self.query_one("#scenarios", SelectionList).selected)
        cells = sum(len(s.concurrencies) for s in self.plan.scenarios if s.name in scenarios)
        all_arms = [a.name for a in self.plan.arms]
        all_scenarios = [s.name for s in self.plan.scenarios]
        return StartRequest(
            plan=self.source,
            arms=None if arms == all_arms else arms,
            scenarios=None if scenarios == all_scenarios else scenarios,
            detach=self.query_one("#detach", Checkbox).value,
            cells=cells * len(arms),
        )

    @on(Button.Pressed, "#start")
    def action_start(self) -> None:
        t = Texts(lang_of(self.app), "screens")
        if self.plan is None:
            self.query_one("#plan-error", Label).update(t("picker.no_plan"))
            return
        request = self.request()
        if request.arms is not None and len(request.arms) < 1:
            self.query_one("#plan-error", Label).update(t("picker.no_arm"))
            return
        if request.cells == 0:
            self.query_one("#plan-error", Label).update(t("picker.no_scenario"))
            return
        self.dismiss(request)

    def action_cancel(self) -> None:
        self.dismiss(None)
