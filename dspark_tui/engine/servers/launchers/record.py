"""`launcher.json` in the run directory: what a launcher asked a cluster for — a Slurm job, a
pod and its Service — written before the request is made, marked stopped once it is undone.

A runner killed with -9 cannot cancel its job or delete its pod; they would hold GPUs until
their time limit (or forever). A resume reads this record and undoes them before it starts
anything (`stop_orphaned_launch`), as server_record.py does for local processes.

launcher.json is the latest session's record; with rounds in parallel several sessions live at
once and overwrite it, so each session's own copy (`servers/{arm}-{session}.launcher.json`) is
read too: a resume undoes every job or pod that no copy says is stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from dspark_tui.engine.servers.server_record import write_session_record

LAUNCHER_JSON = "launcher.json"


class LaunchRecord(BaseModel):
    launcher: Literal["slurm", "kubernetes"]
    arm: str
    session: str | None = None
    state: str = "starting"  # starting (asked for, maybe not yet granted) | running | stopped
    # Slurm: the job is found by its unique name until its id is known.
    job_name: str = ""
    job_id: str | None = None
    node: str | None = None
    # Kubernetes: what `kubectl delete` needs.
    kubectl: list[str] = Field(default_factory=list)  # kubectl with its --context/--namespace
    objects: list[str] = Field(default_factory=list)  # ["pod/NAME", "service/NAME"]


def write_launch_record(run_dir: Path, record: LaunchRecord, *, live: bool = True) -> bool:
    """Best effort, like server.json: a full disk must not stop a stop. Each session keeps its
    own copy as evidence (`servers/{arm}-{session}.launcher.json`); live=False writes only that
    copy, leaving launcher.json to the session it holds."""
    return write_session_record(run_dir, LAUNCHER_JSON, ".launcher.json", record.arm, record.session,
                                record.model_dump_json(indent=2) + "\n", live=live)


def _read(path: Path) -> LaunchRecord | None:
    try:
        return LaunchRecord.model_validate(json.loads(path.read_bytes()))
    except (OSError, ValueError):
        return None


def read_launch_record(run_dir: Path) -> LaunchRecord | None:
    return _read(run_dir / LAUNCHER_JSON)


def job_key(record: LaunchRecord) -> tuple[str, str, tuple[str, ...]]:
    """What a record asked for: the same for the live record and the session's copy of it."""
    return record.launcher, record.job_name, tuple(record.objects)


def read_launch_records(run_dir: Path) -> list[list[LaunchRecord]]:
    """Every job or pod the run's records name, each as the copies that name it (launcher.json
    and the session's own copy)."""
    paths = [*sorted((run_dir / "servers").glob("*.launcher.json")), run_dir / LAUNCHER_JSON]
    jobs: dict[tuple[str, str, tuple[str, ...]], list[LaunchRecord]] = {}
    for record in filter(None, map(_read, paths)):
        jobs.setdefault(job_key(record), []).append(record)
    return list(jobs.values())
