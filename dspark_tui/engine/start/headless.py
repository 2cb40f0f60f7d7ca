"""`dspark-tui run|demo --headless`, `--detach`, and `attach --headless`: the engine without the TUI."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dspark_tui.config import settings_or_warn
from dspark_tui.engine.checks.disk_budget import refuse_resume_without_room
from dspark_tui.engine.run.finish import answer_lines
from dspark_tui.engine.run.runner import TERMINAL_CLOSED, Runner, plan_of_run, preflight, prepare_run
from dspark_tui.engine.run.verify import plan_to_run
from dspark_tui.engine.rundir.liveness import refuse_if_alive, run_to_attach, runner_alive, winding_down
from dspark_tui.engine.servers.ports import with_concrete_port
from dspark_tui.engine.start.launch import (
    RESUME_NO_FILTERS,
    RESUME_NO_VERIFY,
    RunnerProcess,
    refused_resume,
)
from dspark_tui.model import UserError
from dspark_tui.results import RunStore
from dspark_tui.results.follow import EventFollower
from dspark_tui.results.manifest import RunManifest
from dspark_tui.results.run_lock import RunLock

if TYPE_CHECKING:
    from dspark_tui.engine.start.printer import HeadlessPrinter

# The printer (rich, and the live verdicts: numpy, the statistics) is imported when a printer is
# made: a runner the app or --detach started prints nothing, and a command refused by a pre-run
# check ends before it prints a table.

EXIT_CODES = {"completed": 0, "failed": 1, "aborted": 3, "interrupted": 130}


def _split(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def run_command(args: argparse.Namespace) -> int:
    settings = settings_or_warn(getattr(args, "config", None))
    results_root = Path(args.results or settings.results_root).expanduser()
    lang = args.lang or settings.language
    resume: Path | None = getattr(args, "resume", None)
    plan_name = "demo" if args.command == "demo" else getattr(args, "plan", None)
    if resume is None and not plan_name:
        raise UserError("run: name a plan (shipped name or TOML file) or use --resume RUN_DIR")
    if resume is not None and (_split(args.arms) or _split(args.scenarios)):
        raise UserError(RESUME_NO_FILTERS)
    verify: Path | None = getattr(args, "verify", None)
    if verify is not None and resume is not None:
        raise UserError(RESUME_NO_VERIFY)
    if args.detach:
        process = RunnerProcess.start(
            plan_name or "", results_root=results_root, arms=_split(args.arms),
            scenarios=_split(args.scenarios), resume=resume, detach=True, lang=lang,
            plans_dir=settings.plans_dir, other_roots=settings.history_roots(), verify=verify,
        )
        print(process.run_dir)
        print(f"runner pid {process.pid}, detached; watch: dspark-tui attach {process.run_dir}  "
              f"control: dspark-tui ctl {process.run_dir} pause|resume|skip|abort", file=sys.stderr)
        return 0
    if resume is not None:
        store = RunStore(Path(resume).expanduser())
        store.read_manifest()
        store.lock = lock_for_resume(store.path, getattr(args, "lock_fd", None))
        try:
            plan = plan_of_run(store)
            refuse_resume_without_room(store, plan)
        except UserError as refusal:
            raise refused_resume(store, refusal) from None
    else:
        from dspark_tui.plans import resolve_plan

        plan, source = resolve_plan(plan_name or "", settings.plans_dir)
        plan, verification = plan_to_run(plan, verify, _split(args.arms), _split(args.scenarios))
        plan = with_concrete_port(plan)
        preflight(plan, [results_root, *settings.history_roots()], results_root=results_root,
                  source=source)
        store = prepare_run(plan, results_root, source, verification)
    quiet = bool(getattr(args, "quiet_runner", False))
    runner = Runner(plan, store, lang=lang, parent_pid=getattr(args, "parent_pid", None),
                    other_roots=[results_root, *settings.history_roots()], charts=settings.charts)
    printer: HeadlessPrinter | None = None
    on_hangup = None
    if not quiet:
        printer = headless_printer(args, store.read_manifest())
        if resume is not None:
            _seed_from_run(printer, store)
        runner.subscribe(printer)
        if settings.detach_on_hangup and not getattr(args, "no_detach_on_hangup", False):
            on_hangup = _going_on_without_terminal(runner, printer)
    # A runner the app started (quiet) is told of a lost terminal by the app, which chooses.
    status = asyncio.run(_run(runner, on_hangup))
    if printer is not None and not printer.broken:
        from dspark_tui.engine.start.printer import summary_lines

        with contextlib.suppress(OSError):
            for line in summary_lines(store.path, printer.state, status):
                print(line, flush=True)
            for line in answer_lines(store.path, lang):
                print(line, flush=True)
    return EXIT_CODES.get(status, 1)


def headless_printer(args: argparse.Namespace, manifest: RunManifest) -> HeadlessPrinter:
    """Colours and tables for a terminal; for a pipe or a file (a log over SSH), plain lines
    that are never cut to a width, and tables without box drawing (`--pretty` keeps them)."""
    from rich.console import Console

    from dspark_tui.analysis.layout import baseline_arm
    from dspark_tui.engine.start.printer import HeadlessPrinter

    baseline = baseline_arm(manifest)
    if getattr(args, "pretty", False) or sys.stdout.isatty():
        console = Console(highlight=False, force_terminal=getattr(args, "pretty", False) or None)
        return HeadlessPrinter(console, baseline=baseline)
    console = Console(highlight=False, no_color=True, width=PLAIN_WIDTH, soft_wrap=True,
                      emoji=False, force_terminal=False)
    return HeadlessPrinter(console, baseline=baseline, plain=True)


PLAIN_WIDTH = 10_000  # no line of a log is cut


def _going_on_without_terminal(runner: Runner, printer: HeadlessPrinter) -> Callable[[], None]:
    """SIGHUP of a foreground `run --headless`: the run goes on. What still points at the lost
    terminal reads and writes /dev/null from now on (a log file stays as it is), and the events
    say "terminal closed, detached" for whoever attaches."""

    def hung_up() -> None:
        silenced = False
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                if os.isatty(fd):
                    os.dup2(null, fd)
                    silenced = silenced or fd == 1
            os.close(null)
        if silenced:
            printer.broken = True
        runner.detach(TERMINAL_CLOSED)

    return hung_up


def lock_for_resume(run_dir: Path, handed_fd: int | None) -> RunLock:
    """The run's lock, before anything of the run is read for running: the one a launcher
    handed down, or taken here — refused, naming the holder, while another runner has it."""
    if handed_fd is not None:
        return RunLock.adopt(run_dir, handed_fd)
    refuse_if_alive(run_dir)
    return RunLock.acquire(run_dir)


def _seed_from_run(printer: HeadlessPrinter, store: RunStore) -> None:
    """A resumed run's printer starts from what its earlier runners did: their events (rounds
    planned, measurements ended) and the measurements saved on disk, which are the truth."""
    saved, _ = store.load_measurements()
    printer.seed(store.read_events(), saved)


async def _run(runner: Runner, on_hangup: Callable[[], None] | None = None) -> str:
    runner.install_signal_handlers(on_hangup)
    return await runner.run()


def attach_command(args: argparse.Namespace) -> int:
    """Replay a run's events, then follow them until it finishes (Ctrl-C leaves the run alone)."""
    settings = settings_or_warn(getattr(args, "config", None))
    run_dir = args.run_dir
    if run_dir is None:
        run_dir = run_to_attach(settings.history_roots())
    run_dir = Path(run_dir).expanduser()
    manifest = RunStore(run_dir).read_manifest()
    printer = headless_printer(args, manifest)
    follower = EventFollower(run_dir)
    quiet_since = time.monotonic()
    try:
        while True:
            events = follower.poll()
            for event in events:
                printer(event)
            if events:
                quiet_since = time.monotonic()
            state = printer.state
            if state.finished and not runner_alive(run_dir):
                if not printer.broken:
                    from dspark_tui.engine.start.printer import summary_lines

                    with contextlib.suppress(OSError):
                        for line in [*summary_lines(run_dir, state, state.status or "failed"),
                                     *answer_lines(run_dir, settings.language)]:
                            print(line, flush=True)
                return EXIT_CODES.get(state.status, 1)
            if (not runner_alive(run_dir) and not winding_down(run_dir)
                    and time.monotonic() - quiet_since > 3.0):
                printer.runner_gone(time.time(), run_dir)
                return 1
            time.sleep(0.3)
    except KeyboardInterrupt:
        print(f"detached from {run_dir}; the run goes on")
        return 0

