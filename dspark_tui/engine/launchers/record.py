"""`launcher.json` in the run directory: what a launcher asked a cluster for — a Slurm job, a
pod and its Service — written before the request is made, marked stopped once it is undone.

A runner killed with -9 cannot cancel its job or delete its pod; they would hold GPUs until
their time limit (or forever). A resume reads this record and undoes them before it starts
anything (`stop_orphaned_launch`), as server_record.py does for local processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from dspark_tui.engine.server_record import write_session_record

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


def write_launch_record(run_dir: Path, record: LaunchRecord) -> bool:
    """Best effort, like server.json: a full disk must not stop a stop. Each session keeps its
    own copy as evidence (`servers/{arm}-{session}.launcher.json`)."""
    return write_session_record(run_dir, LAUNCHER_JSON, ".launcher.json", record.arm, record.session,
                                record.model_dump_json(indent=2) + "\n")


def read_launch_record(run_dir: Path) -> LaunchRecord | None:
    try:
        return LaunchRecord.model_validate(json.loads((run_dir / LAUNCHER_JSON).read_bytes()))
    except (OSError, ValueError):
        return None


def stop_orphaned_launch(run_dir: Path) -> str | None:
    """Undo what a dead runner left asked for; what was done, in words (None: nothing was
    left). A tool that fails leaves the record as it was, so the next resume tries again."""
    from dspark_tui.engine.launchers.kubernetes import delete_objects
    from dspark_tui.engine.launchers.slurm import cancel_job

    record = read_launch_record(run_dir)
    if record is None or record.state == "stopped":
        return None
    done, words = cancel_job(record) if record.launcher == "slurm" else delete_objects(record)
    if done:
        record.state = "stopped"
        write_launch_record(run_dir, record)
    return words
