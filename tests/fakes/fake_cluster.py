"""What the fake cluster tools share: "nodes" that are this machine. A job's or pod's server is
started detached — its own session, its output in a file, without the runner's server token —
so, as on a real cluster, nothing but the cluster tool (scancel, kubectl delete) stops it.

Each node is a loopback address (FAKE_SLURM_NODES, FAKE_KUBE_NODES: "127.0.0.2,127.0.0.3";
127.0.0.1 alone by default), so two servers on one port run side by side on two "nodes": a
server's `--host` value is replaced by its node's address, as `--host 0.0.0.0` binds the
node's own interfaces on a real one.

State lives in files under a directory the test names (FAKE_SLURM_DIR, FAKE_KUBE_DIR), so
every invocation of a fake sees what the earlier ones did; `locked` serializes the changes
that must not interleave (two tools taking the same free node).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

TOKEN_VAR = "DSPARK_SERVER_TOKEN"  # the runner's mark (engine/servers/procs.py); a remote server has none


def state_dir(var: str) -> Path:
    value = os.environ.get(var)
    if not value:
        sys.exit(f"{var} is not set: the fake cluster keeps its state there")
    path = Path(value)
    path.mkdir(parents=True, exist_ok=True)
    return path


def nodes(var: str) -> list[str]:
    """The cluster's nodes, each a loopback address this machine answers on."""
    return [n.strip() for n in os.environ.get(var, "127.0.0.1").split(",") if n.strip()]


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """One tool at a time changes who holds which node."""
    with open(directory / "lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def bind_to(argv: list[str], address: str) -> list[str]:
    """The command with its `--host` value (`--host X` or `--host=X`) replaced by the node's
    address."""
    bound = list(argv)
    for i, arg in enumerate(bound):
        if arg == "--host" and i + 1 < len(bound):
            bound[i + 1] = address
        elif arg.startswith("--host="):
            bound[i] = f"--host={address}"
    return bound


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic, with a temporary name of this process's own: two tools writing one job at once
    (srun its end, scancel its cancel) must not rename each other's half-written file, which a
    reader would take for a job that does not exist."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(data))
    os.replace(temporary, path)


def start_server(argv: list[str], log_path: Path, env: dict[str, str] | None = None,
                 exit_file: Path | None = None) -> subprocess.Popen[bytes]:
    """The server on the "node": a child of the caller, but in a session of its own and writing
    to a file, so it outlives the caller (srun or kubectl killed with -9). With exit_file, a
    shell in front of it writes its exit code there (what a pod's status keeps)."""
    clean = {k: v for k, v in os.environ.items() if k != TOKEN_VAR}
    if exit_file is not None:
        argv = ["sh", "-c", '"$@"; echo $? > "$EXIT_FILE"', "sh", *argv]
        clean["EXIT_FILE"] = str(exit_file)
    with open(log_path, "ab") as log:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env={**clean, **(env or {})}, start_new_session=True)


def process(pid: int | None, create_time: float | None) -> psutil.Process | None:
    """The recorded process if it still runs (the same pid and start time)."""
    if not pid or create_time is None:
        return None
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - create_time) > 0.05 or proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except psutil.Error:
        return None


def stop_server(pid: int | None, create_time: float | None, grace_s: float = 5.0) -> None:
    """TERM the server's process group, KILL what is left after the grace time."""
    proc = process(pid, create_time)
    if proc is None or pid is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except OSError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if process(pid, create_time) is None:
                return
            time.sleep(0.05)


def follow(log_path: Path, offset: int, out: Any) -> int:
    """Copy what the log gained since offset to out; the new offset."""
    try:
        with open(log_path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return offset
    if data:
        out.write(data)
        out.flush()
    return offset + len(data)
