"""`dspark-tui`, `dspark-tui demo`, `dspark-tui run PLAN`, `dspark-tui attach [DIR]` with a TUI.

Everything a user can get wrong (bad plan, no running run to attach to) is checked here,
before the screen switches, so it prints as one line like the other commands.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

import platformdirs

from dspark_tui.config import APP_NAME, load_settings
from dspark_tui.model import UserError
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, scan_runs
from dspark_tui.tui.app import AttachTarget, DsparkApp
from dspark_tui.tui.run_link import OwnedRunner
from dspark_tui.tui.screens.plan_picker import StartRequest


def tui_command(args: argparse.Namespace) -> int:
    settings, warning = load_settings(getattr(args, "config", None))
    results_root = getattr(args, "results", None) or settings.results_root
    roots = list(dict.fromkeys(Path(r).expanduser() for r in [results_root, *settings.history_roots()]))
    start = _start_of(args, settings.plans_dir, roots)
    _log_to_file()
    app = DsparkApp(settings, warnings=[warning] if warning else [], start=start,
                    results_root=Path(results_root).expanduser(), lang=getattr(args, "lang", None),
                    config_file=getattr(args, "config", None))
    detach_on_hangup = settings.detach_on_hangup and not getattr(args, "no_detach_on_hangup", False)
    try:
        app.run(mouse=False)
    finally:
        if app.hung_up:
            _hang_up_runners(app, detach=detach_on_hangup)
        app.stop_owned()
    return app.return_code or 0


def _start_of(args: argparse.Namespace, plans_dir: Path,
              roots: list[Path]) -> StartRequest | AttachTarget | None:
    command = args.command
    if command in ("run", "demo"):
        resume = getattr(args, "resume", None)
        plan = "demo" if command == "demo" else args.plan
        if resume is not None:
            resume = Path(resume).expanduser()
            if not resume.is_dir():
                raise UserError(f"{resume}: no such run directory to resume")
            plan = plan or ""
        elif not plan:
            raise UserError("run: name a plan (shipped name or TOML file) or --resume RUN_DIR")
        arms, scenarios = _names(args.arms), _names(args.scenarios)
        if resume is not None and (arms or scenarios):
            from dspark_tui.engine.start.launch import RESUME_NO_FILTERS

            raise UserError(RESUME_NO_FILTERS)
        verify = getattr(args, "verify", None)
        if verify is not None and resume is not None:
            from dspark_tui.engine.start.launch import RESUME_NO_VERIFY

            raise UserError(RESUME_NO_VERIFY)
        if resume is None:
            from dspark_tui.engine.checks.preflight import preflight
            from dspark_tui.engine.run.verify import plan_to_run
            from dspark_tui.engine.servers.ports import with_concrete_port

            # A bad plan, an unknown arm, a run that is no finished sweep or a machine the run
            # cannot start on fails here, one line a problem, before the screen switches.
            resolved, source = resolve_plan(plan, plans_dir)
            to_run, _ = plan_to_run(resolved, verify, arms, scenarios)
            preflight(with_concrete_port(to_run), roots, results_root=roots[0], source=source)
        return StartRequest(plan=plan, arms=arms, scenarios=scenarios, detach=bool(args.detach),
                            resume=resume, verify=verify)
    if command == "attach":
        run_dir = args.run_dir
        if run_dir is None:
            from dspark_tui.engine.rundir.liveness import run_to_attach

            run_dir = run_to_attach(roots)
        run_dir = Path(run_dir).expanduser()
        if not (run_dir / "run.json").is_file():
            raise UserError(f"{run_dir}: not a run directory (no run.json)")
        RunStore(run_dir).read_manifest()  # one written by a newer version: refused here, in one line
        return AttachTarget(run_dir)
    running = [run for run in scan_runs(roots[:1]) if run.status == "running"]
    return AttachTarget(running[0].path) if running else None


def _hang_up_runners(app: DsparkApp, *, detach: bool) -> None:
    """The terminal is gone. By default each runner this app owns is handed off as detach does
    (its events say "terminal closed, detached") and goes on, for `dspark-tui attach`. With
    `--no-detach-on-hangup`, or a runner that does not answer, the lost terminal is passed on:
    the run ends "interrupted: terminal closed", resumable (stop_owned's abort would record
    "aborted by user")."""
    log = logging.getLogger("dspark_tui.tui")
    for link in app.live_owned():
        if detach and isinstance(link, OwnedRunner) and link.detach(hangup=True):
            log.warning("terminal lost; %s goes on, detached", link.run_dir)
            continue
        pid = getattr(getattr(link, "process", None), "pid", None)
        if isinstance(pid, int):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGHUP)
            log.warning("terminal lost; the runner of %s stopped", link.run_dir)


def _names(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def _log_to_file() -> None:
    """Worker errors and signals go to a file: the terminal belongs to the UI."""
    folder = platformdirs.user_log_path(APP_NAME)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(folder / "tui.log", encoding="utf-8")
    except OSError as exc:
        print(f"dspark-tui: warning: no log file ({exc})", file=sys.stderr)
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("dspark_tui")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
