"""`server.json` in the run directory: which processes the running server is made of.

Written while a server lives, marked stopped when it is stopped. If the runner dies (kill -9,
lost machine), the server lives on, orphaned; a resume reads this file and ends those processes
before it starts a new server on the same port and GPUs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, Field

from dspark_tui.engine.servers.procs import ProcRef, group_alive, processes_with_token, terminate_tree
from dspark_tui.model import safe_name
from dspark_tui.results.atomic import atomic_write_text

SERVER_JSON = "server.json"


class RecordedProc(BaseModel):
    pid: int
    create_time: float


class ServerRecord(BaseModel):
    arm: str
    pid: int
    pgid: int
    create_time: float
    token: str
    host: str
    port: int
    argv: list[str] = Field(default_factory=list)
    descendants: list[RecordedProc] = Field(default_factory=list)
    state: str = "running"  # starting (pid not yet known) | running | stopped
    session: str | None = None  # the run's server session (s1, s2 ...) this process serves

    def refs(self) -> list[ProcRef]:
        own = [ProcRef(self.pid, self.create_time)] if self.pid > 0 else []
        return own + [ProcRef(d.pid, d.create_time) for d in self.descendants]


def write_record(run_dir: Path, record: ServerRecord, *, live: bool = True) -> bool:
    """Best effort: on a full or read-only disk the server must still start and stop; the
    runner notices the disk when it cannot save a cell, and stops the run there.

    server.json is the live server (what a resume stops); each session also keeps its own
    record, `servers/{arm}-{session}.json`, as evidence of what served its measurements."""
    return write_session_record(run_dir, SERVER_JSON, ".json", record.arm, record.session,
                                record.model_dump_json(indent=2) + "\n", live=live)


def write_session_record(run_dir: Path, name: str, copy_suffix: str, arm: str,
                         session: str | None, text: str, *, live: bool = True) -> bool:
    """`name` in the run directory (the live one, what a resume undoes; not with live=False)
    and, for a session, its own copy `servers/{arm}-{session}{copy_suffix}`; 0600, best effort
    (False on an OSError)."""
    paths = [run_dir / name] if live or not session else []
    if session:
        paths.append(run_dir / "servers" / f"{safe_name(arm)}-{safe_name(session)}{copy_suffix}")
    try:
        for path in paths:
            atomic_write_text(path, text)
            os.chmod(path, 0o600)
    except OSError:
        return False
    return True


def read_record(run_dir: Path) -> ServerRecord | None:
    return _read(run_dir / SERVER_JSON)


def _read(path: Path) -> ServerRecord | None:
    try:
        return ServerRecord.model_validate(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        return None


def live_records(run_dir: Path) -> list[ServerRecord]:
    """Every record not marked stopped: server.json and each session's own copy, one a server.
    With rounds in parallel several servers live at once and server.json names only the last
    one started; the per-session copies name them all."""
    paths = [run_dir / SERVER_JSON,
             *(p for p in sorted((run_dir / "servers").glob("*.json"))
               if not p.name.endswith(".launcher.json"))]
    found: dict[str, ServerRecord] = {}
    for path in paths:
        record = _read(path)
        if record is not None and record.state != "stopped":
            found.setdefault(record.token, record)
    return list(found.values())


def stop_orphaned_server(run_dir: Path, grace_s: float = 5.0) -> list[int]:
    """End what a dead runner left running; the pids found alive (empty: nothing was left).

    The process group is only signalled when a recorded process of it is still the same
    process (pid and start time), so a reused pgid never hits a stranger.
    """
    found: set[int] = set()
    for record in live_records(run_dir):
        found |= set(_stop_recorded(run_dir, record, grace_s))
    return sorted(found)


def _stop_recorded(run_dir: Path, record: ServerRecord, grace_s: float) -> list[int]:
    refs = record.refs()
    live = [ref for ref in refs if ref.process() is not None]
    pgid = record.pgid if live and record.pgid > 0 and group_alive(record.pgid) else None
    tokened = processes_with_token(record.token)
    found = sorted({r.pid for r in live} | {p.pid for p in tokened})
    if found or pgid is not None:
        terminate_tree(pgid=pgid, refs=refs, token=record.token, grace_s=grace_s)
    record.state = "stopped"
    held = read_record(run_dir)  # server.json may name another session, started after this one
    write_record(run_dir, record, live=held is None or held.token == record.token)
    return found
