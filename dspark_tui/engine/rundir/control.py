"""Controlling a run from another process: an append-only `control.jsonl` in the run directory.

A file, not a socket, because it survives either side restarting and needs no server; only the
run's owner can write it (directory 0700, file 0600). The runner reads new lines every half
second and acknowledges each request with a `run_control` event in events.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from pathlib import Path

from dspark_tui.model import UserError, numbers, safe_files
from dspark_tui.model.events import RunControl
from dspark_tui.results.jsonl import read_complete_lines
from dspark_tui.results.store import EVENTS, RUN_JSON, read_events_from

CONTROL = "control.jsonl"
# detach: the app that started the runner quits and leaves it going (its parent watch stops);
# hangup: the same, because the app's terminal went away (the events say so)
ACTIONS = ("pause", "resume", "skip", "abort", "retry", "detach", "hangup")


# The launcher's clock when it started a runner process: requests stamped from then on are
# for that runner (engine/start/launch.py sets it, the runner reads and drops it)
CONTROLS_SINCE_VAR = "DSPARK_CONTROLS_SINCE"


def controls_since(value: str | None, fallback: float) -> float:
    try:
        since = float(value) if value is not None else fallback
    except ValueError:
        return fallback
    return since if since == since and since <= fallback else fallback  # NaN or a future time


def send_control(run_dir: Path, action: str) -> float:
    """Append one request; returns its time so a caller can wait for the acknowledgement."""
    if action not in ACTIONS:
        raise UserError(f"unknown control action {action!r} (one of: {', '.join(ACTIONS)})")
    if not (run_dir / RUN_JSON).is_file():
        raise UserError(f"{run_dir}: not a run directory (no {RUN_JSON})")
    now = time.time()
    line = json.dumps({"action": action, "t": now, "id": uuid.uuid4().hex}) + "\n"
    path = run_dir / CONTROL
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except PermissionError:
        raise UserError(f"{path}: no permission (only the run's owner can control it)") from None
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return now


class ControlReader:
    """New, well-formed requests since the last poll; garbage lines are skipped."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CONTROL
        self.offset = 0
        self._seen: set[str] = set()
        self._not_before = 0.0

    def skip_existing(self, since: float) -> None:
        """Requests written for an earlier runner of this directory are not for us: those
        stamped before `since` (when this runner was asked for). One sent after that but before
        the runner first read the file (a pause pressed in a run's first second) is for us: it
        was lost when everything already written was skipped."""
        self._not_before = since

    def poll(self) -> list[str]:
        try:
            lines, self.offset = read_complete_lines(self.path, self.offset, safe_files.RECORD_CAP)
        except OSError:
            return []
        actions: list[str] = []
        for raw in lines:
            try:
                request = numbers.loads(raw)
            except ValueError:
                continue
            if not isinstance(request, dict) or request.get("action") not in ACTIONS:
                continue
            stamped = request.get("t")
            if self._not_before and (not isinstance(stamped, (int, float)) or stamped < self._not_before):
                continue
            request_id = str(request.get("id", ""))
            if request_id and request_id in self._seen:
                continue
            self._seen.add(request_id)
            actions.append(str(request["action"]))
        return actions


def wait_for_ack(run_dir: Path, action: str, since: float, timeout: float) -> RunControl | None:
    deadline = time.monotonic() + timeout
    offset = 0
    while True:
        events, offset = read_events_from(run_dir / EVENTS, offset)
        for event in events:
            if isinstance(event, RunControl) and event.action == action and event.t >= since - 0.01:
                return event
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


def ctl_command(args: argparse.Namespace) -> int:
    """`dspark-tui ctl RUN_DIR ACTION`: send, then report the runner's answer."""
    from dspark_tui.engine.rundir.liveness import runner_alive

    run_dir = Path(args.run_dir).expanduser()
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: no such run directory")
    if not runner_alive(run_dir):
        raise UserError(_no_runner(run_dir))
    since = send_control(run_dir, args.action)
    ack = wait_for_ack(run_dir, args.action, since, timeout=10.0)
    if ack is None:
        print(f"{args.action}: sent; the runner has not acknowledged it yet")
        return 0
    print(f"{args.action}: {ack.message or 'done'}")
    return 0


def _no_runner(run_dir: Path) -> str:
    """Why there is nothing to control, and a resume suggested only for a run that can take one."""
    try:
        raw = safe_files.read_bytes(run_dir / RUN_JSON, safe_files.MANIFEST_CAP)
        status = numbers.loads(raw).get("status")
    except (OSError, ValueError, AttributeError):
        return f"{run_dir}: not a run directory (no readable run.json); list runs with `dspark-tui runs`"
    if status == "completed":
        return f"{run_dir}: the run has completed; there is nothing to control"
    return (f"{run_dir}: no runner is alive for this run (resume it with "
            f"`dspark-tui run --resume {run_dir}`)")
