"""Listing past runs for the history view: cheap (run.json plus a file count), never fatal.

A results root may be shared: an entry this user cannot read (another user's run, created
0700), a symlink loop, a run.json of the wrong shape — each is skipped or reported as
unreadable, with one warning line per entry and process, and the rest is listed."""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from dspark_tui.model import numbers, safe_files, shown
from dspark_tui.results.manifest import RunManifest, newer_run_schema
from dspark_tui.results.run_lock import lock_held
from dspark_tui.results.run_size import run_size_bytes
from dspark_tui.results.store import EVENTS, RUN_JSON

HEARTBEAT = "heartbeat"
HEARTBEAT_STALE_S = 30.0
_LIVE = ("running", "starting")  # files still growing in place: sizes not cached

log = logging.getLogger(__name__)
_warned: set[str] = set()


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
    found = [summarize_run(path) for path in run_dirs(roots)]
    if sizes:
        for summary in found:
            summary.size_bytes = run_size_bytes(summary.path, settled=summary.status not in _LIVE)
    found.sort(key=lambda s: (s.started_at or "", s.name), reverse=True)
    return found


def run_dirs(roots: Iterable[str | Path]) -> Iterator[Path]:
    """The run directories (a run.json or a cells/ folder) directly under each root, each once
    however many roots or links reach it. What cannot be read is skipped with one warning."""
    seen: set[Path] = set()
    for root in roots:
        root = Path(root).expanduser()
        try:
            entries = list(os.scandir(root))
        except (FileNotFoundError, NotADirectoryError):
            continue  # a results folder nothing has been written to yet; a file is no folder
        except OSError as exc:
            warn_skipped(root, exc)
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if not entry.is_dir():
                    continue
                path = Path(entry.path)
                real = path.resolve()
                if real in seen:
                    continue
                if not (path / RUN_JSON).exists() and not (path / "cells").is_dir():
                    continue
            except (OSError, RuntimeError) as exc:  # RuntimeError: resolve() in a symlink loop
                warn_skipped(Path(entry.path), exc)
                continue
            seen.add(real)
            yield path


def warn_skipped(path: Path, exc: BaseException) -> None:
    """One warning line for an entry a scan cannot read; once per entry and process, so a view
    that rescans every few seconds does not flood its log."""
    key = str(path)
    if key in _warned:
        return
    _warned.add(key)
    log.warning("dspark-tui: warning: %s: skipped, cannot read it (%s)", path, _reason(exc))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError):
        return "symlink loop"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def summarize_run(path: Path) -> RunSummary:
    summary = RunSummary(path=path, name=path.name)
    summary.cells_done = _count_cells(path)
    try:
        data = numbers.loads(safe_files.read_bytes(path / RUN_JSON, safe_files.MANIFEST_CAP))
        if not isinstance(data, dict):
            raise ValueError("not an object")
        if newer_run_schema(data) is not None:  # never listed as if it were understood
            summary.problem = f"run.json {newer_run_schema(data)}"
            return summary
        manifest = RunManifest.model_validate({"name": path.name, **data})
    except FileNotFoundError:
        summary.problem = "run.json is missing"
        return summary
    except ValidationError as exc:  # the right JSON of the wrong shape: `total_cells: "abc"`
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in err["loc"])
        summary.problem = f"run.json is unreadable ({where}: {err['msg']})"
        return summary
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        summary.problem = f"run.json is unreadable ({reason})"
        return summary
    # Listed by `runs` and History: a crafted run.json's names show their control characters
    # escaped (model/shown.py); History escapes markup on top.
    summary.name = shown.plain(manifest.name or path.name)
    summary.started_at = manifest.started_at or ""
    summary.model = shown.plain(manifest.model)
    summary.arms = [shown.plain(arm) for arm in manifest.arm_names()]
    summary.cells_total = manifest.total_cells
    if manifest.cells_ok is not None:
        summary.cells_done = manifest.cells_ok  # exact, written by the runner when it finished
    summary.status = str(data.get("status") or "unknown")  # absent: unknown, not "running"
    if summary.status == "running" and not runner_alive(path, manifest.runner_pid):
        # A run whose runner has not written its pid yet is starting, if its directory is fresh.
        starting = manifest.runner_pid is None and _fresh(path / HEARTBEAT, time.time())
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
    """The one liveness rule (the engine's liveness.py uses it too). A run with a lock file is
    alive exactly while someone holds its lock (results/run_lock.py): the kernel drops it when
    the runner dies, so neither a reused pid nor a slow disk can mislead. A run from before the
    lock: its runner's pid exists AND it touched its heartbeat or events.jsonl within
    HEARTBEAT_STALE_S (a pid alone can be reused; a fresh file alone cannot tell whose it is)."""
    held = lock_held(path)
    if held is not None:
        return held
    if not pid_alive(pid):
        return False
    now = time.time()
    return any(_fresh(path / name, now) for name in (HEARTBEAT, EVENTS))
