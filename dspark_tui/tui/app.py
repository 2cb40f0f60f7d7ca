"""The application: themes, keymap, quitting safely, and routing between screens.

It stays thin: screens own their widgets and timers. Runs happen in runner processes; the
app only remembers which of them it started, so quitting (or losing the terminal) can stop
those and leave detached or attached runs alone.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from dspark_tui.config import Settings, save_setting
from dspark_tui.model import UserError
from dspark_tui.report.words import Texts
from dspark_tui.results import RunStore
from dspark_tui.tui import safe
from dspark_tui.tui.keys import resolve_keymap
from dspark_tui.tui.run_link import AttachedRun, RunLink, run_closed, start_runner
from dspark_tui.tui.screens.confirm import ConfirmScreen
from dspark_tui.tui.screens.help import HelpScreen
from dspark_tui.tui.screens.history import HistoryScreen
from dspark_tui.tui.screens.plan_picker import PlanPickerScreen, StartRequest
from dspark_tui.tui.screens.quit_run import QuitRunScreen, detach_all
from dspark_tui.tui.screens.refusal import RefusalScreen
from dspark_tui.tui.screens.run_screen import RunScreen
from dspark_tui.tui.themes import load_themes
from dspark_tui.tui.words import lang_of

log = logging.getLogger("dspark_tui.tui")

STOP_TIMEOUT_S = 20.0


@dataclass
class AttachTarget:
    run_dir: Path
    read_only: bool = False


class DsparkApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "dspark-tui"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit",
                tooltip="asks first while a run this app started is going, then stops it"),
        Binding("question_mark", "help", "Help", id="app.help", tooltip="this list"),
        # Off the footers (History shows it): at 80 columns the run screen's keys overflow
        # the footer, and the tail of "New run" showed as a stray `w` after "^p palette".
        Binding("n", "new_run", "New run", id="app.new_run", show=False,
                tooltip="pick a plan, its arms and scenarios; optionally detached"),
    ]

    def __init__(self, settings: Settings, *, warnings: Iterable[str] = (),
                 start: StartRequest | AttachTarget | None = None,
                 results_root: Path | None = None, lang: str | None = None,
                 config_file: Path | None = None, clock: Callable[[], float] | None = None,
                 remember_theme: bool = True) -> None:
        super().__init__()
        self.settings = settings
        self.startup_warnings = list(warnings)
        self.start = start
        self.results_root = results_root or settings.results_root
        self.lang = lang or settings.language  # the screens' and the reports' (the locale's unless set)
        self.config_file = config_file
        self.clock = clock or time.time
        self.remember_theme = remember_theme
        self.links: list[RunLink] = []
        self.hung_up = False

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every notice as plain text: what it says comes from run files, servers and runners
        (a cell's failure, a server's error) and must show literally, brackets and control
        characters included (tui/safe.py); no notice of ours uses markup."""
        super().notify(safe.lines(message), title=safe.plain(title), severity=severity,
                       timeout=timeout, markup=False)

    # -- start-up --------------------------------------------------------------------------

    def on_mount(self) -> None:
        self._install_themes()
        if self.settings.keymap:  # the user's keys win, over the lists' j/k/g/G too
            self.set_keymap(resolve_keymap(self.settings.keymap))
        self.push_screen(HistoryScreen(self.history_roots()))
        for warning in self.startup_warnings:
            self.notify(warning, severity="warning", timeout=10)
        self._watch_signals()
        if isinstance(self.start, StartRequest):
            self.start_run(self.start)
        elif isinstance(self.start, AttachTarget):
            self.open_live(self.start.run_dir, read_only=self.start.read_only)

    def history_roots(self) -> list[Path]:
        roots: list[Path] = []
        for root in [self.results_root, *self.settings.history_roots()]:
            if root.expanduser().resolve() not in {r.expanduser().resolve() for r in roots}:
                roots.append(root)
        return roots

    def _install_themes(self) -> None:
        themes, problems = load_themes([self.settings.plans_dir.parent / "themes"])
        for theme in themes:
            self.register_theme(theme)
        for problem in problems:
            self.notify(problem, severity="warning", timeout=10)
        wanted = self.settings.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            fallback = "dspark-dark" if "dspark-dark" in self.available_themes else "textual-dark"
            self.theme = fallback
            self.notify(f"unknown theme {wanted!r} in the config; using {fallback}",
                        severity="warning", timeout=10)
        self.theme_changed_signal.subscribe(self, self._remember_theme)

    def _remember_theme(self, theme: object) -> None:
        name = getattr(theme, "name", str(theme))
        if not self.remember_theme or name == self.settings.theme:
            return
        self.settings.theme = name
        try:
            save_setting("theme", name, self.config_file)
        except OSError as exc:
            self.notify(f"theme not remembered: {exc}", severity="warning")

    def _watch_signals(self) -> None:
        """A lost terminal (SIGHUP) or a polite kill (SIGTERM) ends the app; launch stops runners."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGHUP, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, self._hang_up, signum)
            except (NotImplementedError, RuntimeError, ValueError):
                continue

    def _hang_up(self, signum: int) -> None:
        log.warning("signal %s: leaving", signum)
        self.hung_up = True
        self.exit(return_code=128 + signum)

    # -- runs ------------------------------------------------------------------------------

    def start_run(self, request: StartRequest) -> None:
        self.run_worker(self._start(request), group="start", exit_on_error=False,
                        description=f"start {request.plan}")

    async def _start(self, request: StartRequest) -> None:
        t = Texts(lang_of(self), "screens")
        self.notify(t("app.starting_detached" if request.detach else "app.starting", plan=request.plan))
        try:
            link = await asyncio.to_thread(
                start_runner, request.plan, results_root=self.results_root, arms=request.arms,
                scenarios=request.scenarios, resume=request.resume, detach=request.detach,
                lang=self.lang, plans_dir=self.settings.plans_dir,
                other_roots=self.history_roots(), verify=request.verify)
        except UserError as exc:  # a preflight's problems, one a line: a dialog that stays
            problems = [line for line in str(exc).splitlines() if line.strip()] or [str(exc)]
            self.push_screen(RefusalScreen(request.plan, problems))
            return
        self._show_run(link.run_dir, link)

    def open_live(self, run_dir: Path, read_only: bool = False) -> None:
        self._show_run(Path(run_dir), AttachedRun(Path(run_dir), read_only=read_only))

    def open_replay(self, run_dir: Path) -> None:
        self._show_run(Path(run_dir), None)

    def _show_run(self, run_dir: Path, link: RunLink | None) -> None:
        """The run screen over History, which will have this run selected on the way back."""
        if link is not None:
            self.links.append(link)
        for screen in self.screen_stack:
            if isinstance(screen, HistoryScreen):
                screen.prefer = run_dir
        self.push_screen(RunScreen(run_dir, link, clock=self.clock))

    def resume_run(self, run_dir: Path) -> None:
        try:
            manifest = RunStore(run_dir).read_manifest()
        except (UserError, OSError) as exc:  # OSError: run.json is a folder, or unreadable
            # markup=False: an OSError reads "[Errno 21] ...", which is not a style
            self.notify(f"cannot resume {Path(run_dir).name}: {exc}", severity="error",
                        markup=False)
            return
        request = StartRequest(plan=manifest.plan_source or manifest.name, resume=Path(run_dir))

        def answered(yes: bool | None) -> None:
            if yes:
                self.start_run(request)

        t = Texts(lang_of(self), "screens")
        self.push_screen(ConfirmScreen(t("confirm.resume", name=Path(run_dir).name),
                                       t("confirm.resume_yes")), answered)

    def live_owned(self) -> list[RunLink]:
        return [link for link in self.links
                if link.owned and link.alive() and not run_closed(link.run_dir)]

    def stop_owned(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stop every non-detached runner this app started; each stops its own servers."""
        for link in self.links:
            if link.owned:
                try:
                    link.stop(timeout)
                except Exception:  # one stubborn runner must not keep the others alive
                    log.exception("stopping the runner of %s", link.run_dir)

    # -- actions ---------------------------------------------------------------------------

    def action_quit(self) -> None:  # type: ignore[override]
        if not self.live_owned():
            self.exit(message=self._goodbye())
            return

        def answered(choice: str | None) -> None:
            if choice == "abort":
                self.run_worker(self._stop_and_exit(), group="quit", exit_on_error=False)
            elif choice == "detach":
                self.run_worker(self._detach_and_exit(), group="quit", exit_on_error=False)

        self.push_screen(QuitRunScreen(), answered)

    async def _detach_and_exit(self) -> None:
        for problem in await detach_all(self.live_owned()):
            self.notify(problem, severity="warning")
        if self.live_owned():  # a runner that did not answer is stopped as before
            await self._stop_and_exit()
        else:
            self.exit(message=self._goodbye())  # names the detached runs and how to attach

    async def _stop_and_exit(self) -> None:
        self.notify(Texts(lang_of(self), "screens")("app.stopping"), timeout=30)
        await asyncio.to_thread(self.stop_owned)
        self.exit(message=self._goodbye())

    def _goodbye(self) -> str | None:
        going = [link.run_dir for link in self.links if not link.owned and link.alive()]
        if not going:
            return None
        return "\n".join(f"still running: {d}  (dspark-tui attach {d})" for d in going)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.screen))

    def action_new_run(self) -> None:
        def chosen(request: StartRequest | None) -> None:
            if request is not None:
                self.start_run(request)

        self.push_screen(PlanPickerScreen(self.settings.plans_dir, self.settings.default_plan), chosen)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Textual's own (themes, keys, quit) and each action of the current screen and the app,
        once: a focused widget's own keys (cursor moves, text editing) are not commands."""
        yield from super().get_system_commands(screen)
        seen: set[str] = {"quit", "command_palette"}
        for active in screen.active_bindings.values():
            binding = active.binding
            action = binding.action.removeprefix("app.")  # a screen's key for an app action
            if active.node not in (screen, self) or action in seen or not binding.description:
                continue
            seen.add(action)
            yield SystemCommand(
                binding.description,
                f"({self.get_key_display(binding)}) {binding.tooltip}".rstrip(),
                partial(self.run_action, binding.action, active.node),
            )

    # -- errors ----------------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            log.error("worker %s failed", event.worker.description, exc_info=error)
            self.notify(f"{event.worker.description or 'a task'} failed: {error}",
                        severity="error", timeout=15)
