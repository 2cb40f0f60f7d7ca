"""How the TUI reaches a run it watches: a runner it started, or one started elsewhere.

Either way the screen reads the run's events.jsonl; this only decides how control requests
travel and whether quitting the app must stop the runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dspark_tui.model import UserError

ACTIONS = ("pause", "resume", "skip", "abort", "retry", "detach")


class RunLink(Protocol):
    @property
    def run_dir(self) -> Path: ...

    @property
    def owned(self) -> bool: ...  # quitting the app stops this runner

    @property
    def read_only(self) -> bool: ...

    def control(self, action: str) -> None: ...

    def alive(self) -> bool: ...

    def stop(self, timeout: float) -> None: ...


@dataclass
class OwnedRunner:
    """A runner this TUI started. Non-detached ones live and die with the app."""

    process: Any  # dspark_tui.engine.start.launch.RunnerProcess
    detached: bool = False
    read_only: bool = False

    @property
    def run_dir(self) -> Path:
        return Path(self.process.run_dir)

    @property
    def owned(self) -> bool:
        return not self.detached

    def control(self, action: str) -> None:
        self.process.control(action)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float) -> None:
        self.process.stop(timeout)

    def detach(self, timeout: float = 10.0, *, hangup: bool = False) -> bool:
        """Ask the runner to stop watching this app, and wait until it says so: from then on it
        is a detached run (quitting leaves it going). False when it did not answer in time.
        `hangup`: because the app's terminal went away, which the runner's answer says."""
        import time

        from dspark_tui.engine.rundir.control import send_control, wait_for_ack

        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            # Sent again until answered: a runner still starting up ignores earlier requests.
            since = send_control(self.run_dir, "hangup" if hangup else "detach")
            if wait_for_ack(self.run_dir, "detach", since, 2.0) is not None:
                self.detached = True
                return True
        return False


def run_closed(run_dir: Path) -> bool:
    """The runner has written its final status to run.json: it is only winding down (a few
    tenths of a second, its last event may still be on the way), so quitting needs no question.
    Not a liveness test: a watcher waits for the process to exit before calling it gone."""
    import json

    try:
        status = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return False
    return status not in ("running", None)


@dataclass
class AttachedRun:
    """A run started elsewhere (`run --detach`, another terminal): control through its directory."""

    run_dir: Path
    read_only: bool = False
    owned: bool = False

    def control(self, action: str) -> None:
        if self.read_only:
            raise UserError("this run is open read-only")
        from dspark_tui.engine.rundir.control import send_control

        send_control(self.run_dir, action)

    def alive(self) -> bool:
        from dspark_tui.engine.rundir.liveness import runner_alive

        return runner_alive(self.run_dir)

    def stop(self, timeout: float) -> None:
        """Attached runs outlive the viewer: that is the point of detaching."""


def start_runner(plan: str, *, results_root: Path, arms: list[str] | None,
                 scenarios: list[str] | None, resume: Path | None, detach: bool,
                 lang: str, plans_dir: Path | None = None,
                 other_roots: list[Path] | None = None,
                 verify: Path | None = None) -> OwnedRunner:
    """Start the runner in its own process (the UI never measures in-process)."""
    from dspark_tui.engine.start.launch import RunnerProcess

    process = RunnerProcess.start(plan, results_root=results_root, arms=arms, scenarios=scenarios,
                                  resume=resume, detach=detach, lang=lang, plans_dir=plans_dir,
                                  other_roots=other_roots, verify=verify)
    return OwnedRunner(process=process, detached=detach)
