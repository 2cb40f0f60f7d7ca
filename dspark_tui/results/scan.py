"""Listing past runs for the history view: cheap (run.json plus a file count), never fatal."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dspark_tui.results.manifest import newer_run_schema
from dspark_tui.results.run_size import run_size_bytes
from dspark_tui.results.store import EVENTS, RUN_JSON

HEARTBEAT = "heartbeat"
HEARTBEAT_STALE_S = 30.0
_LIVE = ("running", "starting")  # files still growing in place: sizes not cached


@dataclass
class RunSummary:
    path: Path
    name: str
    started_at: str = ""
    model: str = ""
    arms: list[str] = field(default_factory=list)
    cells_done: int = 0
    cells_total: int = 0
    status: str = "unknown"
    problem: str = ""
    size_bytes: int | None = None  # every file under the run; only when scanned with sizes=True

    @property
    def readable(self) -> bool:
        return not self.problem


def scan_runs(roots: Iterable[str | Path], sizes: bool = False) -> list[RunSummary]:
    """Every run directory directly under each root, newest first; broken ones carry a reason.

    `sizes`: also each run's size (results/run_size.py: cached by directory mtimes, so only
    the first scan in a process walks every file)."""
    found: list[RunSummary] = []
    seen: set[Path] = set()
    for root in roots:
        root = Path(root).expanduser()
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir() or entry.name.startswith("."):
                continue
            path = Path(entry.path)
            real = path.resolve()
            if real in seen:
                continue
            if not (path / RUN_JSON).exists() and not (path / "cells").is_dir():
                continue
            seen.add(real)
            found.append(summarize_run(path))
            if sizes:
                found[-1].size_bytes = run_size_bytes(path, settled=found[-1].status not in _LIVE)
    found.sort(key=lambda s: (s.started_at or "", s.name), reverse=True)
    return found


def summarize_run(path: Path) -> RunSummary:
    summary = RunSummary(path=path, name=path.name)
    summary.cells_done = _count_cells(path)
    try:
        data = json.loads((path / RUN_JSON).read_bytes())
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        summary.problem = "run.json is missing"
        return summary
    except (OSError, ValueError) as exc:
        summary.problem = f"run.json is unreadable ({type(exc).__name__})"
        return summary
    if newer_run_schema(data) is not None:  # never listed as if it were understood
        summary.problem = f"run.json {newer_run_schema(data)}"
        return summary
    summary.name = str(data.get("name") or path.name)
    summary.started_at = str(data.get("started_at") or "")
    summary.model = str(data.get("model") or "")
    summary.arms = [str(a.get("name")) for a in data.get("arms", []) if isinstance(a, dict)]
    summary.cells_total = int(data.get("total_cells") or 0)
    if isinstance(data.get("cells_ok"), int):
        summary.cells_done = data["cells_ok"]  # exact, written by the runner when it finished
    summary.status = str(data.get("status") or "unknown")
    if summary.status == "running" and not runner_alive(path, data.get("runner_pid")):
        # A run whose runner has not written its pid yet is starting, if its directory is fresh.
        starting = data.get("runner_pid") is None and _fresh(path / HEARTBEAT, time.time())
        summary.status = "starting" if starting else "interrupted"
    return summary


def _fresh(path: Path, now: float) -> bool:
    try:
        return now - path.stat().st_mtime < HEARTBEAT_STALE_S
    except OSError:
        return False


_MEASUREMENT_FILE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*__c\d+(__r\d+p\d+)?\.json$")


def _count_cells(path: Path) -> int:
    """Cells with at least one measurement file, from the names alone (a live or an old run;
    a finished run says exactly in run.json's cells_ok)."""
    cells = path / "cells"
    try:
        return len({
            (arm.name, _cell_stem(f.name))
            for arm in os.scandir(cells)
            if arm.is_dir()
            for f in os.scandir(arm.path)
            if _MEASUREMENT_FILE.match(f.name)  # junk and temporary files are no cells
        })
    except OSError:
        return 0


def _cell_stem(filename: str) -> str:
    """`chat__c8__r2p1.json` and the schema 1 `chat__c8.json` are both cell `chat__c8`."""
    stem = filename.removesuffix(".json")
    head, sep, tail = stem.rpartition("__r")
    return head if sep and "p" in tail else stem


def pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def runner_alive(path: Path, pid: object) -> bool:
    """The one liveness rule (the engine's liveness.py uses it too): the runner's pid exists
    AND it touched its heartbeat or events.jsonl within HEARTBEAT_STALE_S. A pid alone can be
    reused by another process; a fresh file alone cannot tell whose it is."""
    if not pid_alive(pid):
        return False
    now = time.time()
    return any(_fresh(path / name, now) for name in (HEARTBEAT, EVENTS))
