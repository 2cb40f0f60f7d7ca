"""Is a run's runner alive? Whoever holds the run's lock (results/run_lock.py); for a run from
before the lock, its pid in run.json plus a heartbeat file it touches every few seconds: a pid
alone can be reused, a heartbeat alone cannot tell a slow disk from a death."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model import UserError, numbers, safe_files
from dspark_tui.results.run_lock import PATIENCE_S, RunLocked, lock_holder, refusal
from dspark_tui.results.scan import HEARTBEAT, pid_alive, run_dirs, scan_runs, warn_skipped
from dspark_tui.results.scan import runner_alive as _runner_process_alive
from dspark_tui.results.store import RUN_JSON

HEARTBEAT_EVERY_S = 2.0


def touch_heartbeat(run_dir: Path) -> None:
    path = run_dir / HEARTBEAT
    try:
        path.touch()
    except OSError:
        pass


def _manifest(run_dir: Path) -> dict[str, object]:
    try:
        data = numbers.loads(safe_files.read_bytes(run_dir / RUN_JSON, safe_files.MANIFEST_CAP))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def runner_alive(run_dir: Path) -> bool:
    """A run marked running whose runner is alive by results.scan's one rule."""
    data = _manifest(run_dir)
    return data.get("status") == "running" and _runner_process_alive(run_dir, data.get("runner_pid"))


def winding_down(run_dir: Path) -> bool:
    """The runner has written its final status to run.json and is still alive: its last events
    (run_finished) are on the way. Not gone: a watcher that took it for gone here told a run
    that ended cleanly as a runner lost (attach exit 1 after an abort, on a loaded box)."""
    data = _manifest(run_dir)
    return (data.get("status") not in ("running", None)
            and _runner_process_alive(run_dir, data.get("runner_pid")))


def refuse_if_alive(run_dir: Path) -> None:
    """One line naming the live runner's pid, for anything that would start a second one."""
    if runner_alive(run_dir):
        pid = lock_holder(run_dir, PATIENCE_S) or _manifest(run_dir).get("runner_pid")
        raise RunLocked(refusal(run_dir, pid if isinstance(pid, int) else None))


@dataclass
class LiveRun:
    path: Path
    name: str
    pid: int
    host: str
    port: int


def live_runs(roots: Iterable[Path], exclude: Path | None = None) -> list[LiveRun]:
    """Runs under the roots whose runner is alive now; an entry that cannot be read is skipped
    with one warning (results.scan.run_dirs)."""
    found: list[LiveRun] = []
    skip = _real(exclude) if exclude is not None else None
    for path in run_dirs(roots):
        if skip is not None and _real(path) == skip:
            continue
        if not runner_alive(path):
            continue
        data = _manifest(path)
        plan = data.get("plan")
        server = plan.get("server") if isinstance(plan, dict) else None
        if not isinstance(server, dict):
            server = {}
        pid = data.get("runner_pid")
        port = server.get("port", 0)
        arms = plan.get("arms") if isinstance(plan, dict) else None
        if isinstance(arms, list) and arms and all(isinstance(a, dict) and a.get("url") for a in arms):
            port = 0  # every arm is a url: the run holds no local port
        found.append(LiveRun(
            path=path, name=str(data.get("name") or path.name),
            pid=pid if isinstance(pid, int) else 0,
            host=str(server.get("host", "127.0.0.1")), port=port if isinstance(port, int) else 0,
        ))
    return found


def _real(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        warn_skipped(path, exc)
        return None


def run_holding_port(roots: Iterable[Path], port: int, exclude: Path | None = None) -> LiveRun | None:
    for run in live_runs(roots, exclude):
        if run.port == port:
            return run
    return None


def orphan_server_on_port(roots: Iterable[Path], port: int) -> Path | None:
    """A dead run whose server (per its server.json) still listens on the port, if any."""
    for path in run_dirs(roots):
        try:
            record = numbers.loads(safe_files.read_bytes(path / "server.json", safe_files.RECORD_CAP))
        except (OSError, ValueError):
            continue
        if (isinstance(record, dict) and record.get("state") == "running"
                and record.get("port") == port and pid_alive(record.get("pid"))
                and not runner_alive(path)):
            return path
    return None


def run_to_attach(roots: Iterable[Path], command: str = "attach") -> Path:
    """The newest run whose runner is alive; when there is none, a refusal that names the runs a
    lost terminal or a kill left interrupted, each with the command that resumes it."""
    roots = list(roots)
    summaries = scan_runs(roots)
    for summary in summaries:  # newest first
        if summary.status == "running" and runner_alive(summary.path):
            return summary.path
    lines = [f"{command}: no running run in " + ", ".join(map(str, roots))]
    interrupted = [s for s in summaries if s.status == "interrupted"]
    if not interrupted:  # one line, as every user mistake gets
        raise UserError(lines[0] + "; list runs with `dspark-tui runs`")
    for summary in interrupted[:INTERRUPTED_SHOWN]:
        lines.append(f"interrupted: {summary.name} ({summary.cells_done}/{summary.cells_total} "
                     f"cells); resume: dspark-tui run --resume {summary.path}")
    if len(interrupted) > INTERRUPTED_SHOWN:
        lines.append(f"… and {len(interrupted) - INTERRUPTED_SHOWN} more interrupted "
                     "(dspark-tui runs)")
    raise UserError("\n".join(lines))


INTERRUPTED_SHOWN = 3
