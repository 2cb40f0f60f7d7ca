"""`server.json` in the run directory: which processes the running server is made of.

Written while a server lives, marked stopped when it is stopped. If the runner dies (kill -9,
lost machine), the server lives on, orphaned; a resume reads this file and ends those processes
before it starts a new server on the same port and GPUs.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import psutil
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
    # What proved, at ready, that the server answering is this session's (engine/servers/identity.py).
    identity: str | None = None

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

    The run directory is data, not a kill list: a process is signalled only when it carries
    the record's token in its environment (TOKEN_VAR, set by the tool at the spawn; /proc shows
    a process's environment to its owner alone, and only this user's processes are looked at),
    a recorded pid only when its start time matches too, and the process group only when a
    process of it carries the token. A crafted server.json naming a stranger's pid and start
    time (anyone can read those from /proc/PID/stat) signals nothing.
    """
    found: set[int] = set()
    for record in live_records(run_dir):
        found |= set(_stop_recorded(run_dir, record, grace_s))
    return sorted(found)


def plausible_token(token: str) -> bool:
    """A token the tool could have made (uuid4 hex): long, printable, no spaces."""
    return len(token) >= 16 and token.isascii() and token.isprintable() and " " not in token


def _stop_recorded(run_dir: Path, record: ServerRecord, grace_s: float) -> list[int]:
    tokened = processes_with_token(record.token) if plausible_token(record.token) else []
    ours = {proc.pid for proc in tokened}
    refs = [ref for ref in record.refs() if ref.pid in ours and ref.process() is not None]
    pgid = record.pgid if record.pgid > 0 and _group_of_any(tokened, record.pgid) else None
    if pgid is not None and not group_alive(pgid):
        pgid = None
    found = sorted(ours)
    if found:
        terminate_tree(pgid=pgid, refs=refs, token=record.token, grace_s=grace_s)
    record.state = "stopped"
    held = read_record(run_dir)  # server.json may name another session, started after this one
    write_record(run_dir, record, live=held is None or held.token == record.token)
    return found


def _group_of_any(procs: list[psutil.Process], pgid: int) -> bool:
    """Whether a process carrying the token is in the process group (so the group is ours)."""
    for proc in procs:
        with contextlib.suppress(OSError):
            if os.getpgid(proc.pid) == pgid:
                return True
    return False
