"""Is a run's runner alive? Its pid in run.json plus a heartbeat file it touches every few
seconds: a pid alone can be reused, a heartbeat alone cannot tell a slow disk from a death."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.results.scan import HEARTBEAT, pid_alive
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
        data = json.loads((run_dir / RUN_JSON).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def runner_alive(run_dir: Path) -> bool:
    """A run marked running whose runner is alive by results.scan's one rule."""
    data = _manifest(run_dir)
    return data.get("status") == "running" and _runner_process_alive(run_dir, data.get("runner_pid"))


@dataclass
class LiveRun:
    path: Path
    name: str
    pid: int
    host: str
    port: int


def live_runs(roots: Iterable[Path], exclude: Path | None = None) -> list[LiveRun]:
    """Runs under the roots whose runner is alive now."""
    found: list[LiveRun] = []
    skip = exclude.resolve() if exclude is not None else None
    seen: set[Path] = set()
    for root in roots:
        for path in _entries(root):
            real = path.resolve()
            if real == skip or real in seen or not (path / RUN_JSON).is_file():
                continue
            seen.add(real)
            if not runner_alive(path):
                continue
            data = _manifest(path)
            plan = data.get("plan")
            server = plan.get("server") if isinstance(plan, dict) else None
            if not isinstance(server, dict):
                server = {}
            pid = data.get("runner_pid")
            arms = plan.get("arms") if isinstance(plan, dict) else None
            if isinstance(arms, list) and arms and all(
                    isinstance(a, dict) and a.get("url") for a in arms):
                server = {**server, "port": 0}  # every arm is a url: it holds no local port
            found.append(LiveRun(
                path=path, name=str(data.get("name") or path.name),
                pid=pid if isinstance(pid, int) else 0,
                host=str(server.get("host", "127.0.0.1")), port=int(server.get("port", 0) or 0),
            ))
    return found


def _entries(root: Path) -> list[Path]:
    """What a results root holds; nothing when it cannot be listed (missing, unreadable)."""
    try:
        return list(Path(root).expanduser().iterdir())
    except OSError:
        return []


def run_holding_port(roots: Iterable[Path], port: int, exclude: Path | None = None) -> LiveRun | None:
    for run in live_runs(roots, exclude):
        if run.port == port:
            return run
    return None


def orphan_server_on_port(roots: Iterable[Path], port: int) -> Path | None:
    """A dead run whose server (per its server.json) still listens on the port, if any."""
    for root in roots:
        for path in _entries(root):
            try:
                record = json.loads((path / "server.json").read_bytes())
            except (OSError, ValueError):
                continue
            if (isinstance(record, dict) and record.get("state") == "running"
                    and record.get("port") == port and pid_alive(record.get("pid"))
                    and not runner_alive(path)):
                return path
    return None
