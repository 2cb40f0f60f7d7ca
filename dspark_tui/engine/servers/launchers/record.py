"""`launcher.json` in the run directory: what a launcher asked a cluster for — a Slurm job, a
pod and its Service — written before the request is made, marked stopped once it is undone.

A runner killed with -9 cannot cancel its job or delete its pod; they would hold GPUs until
their time limit (or forever). A resume reads this record and undoes them before it starts
anything (`stop_orphaned_launch`), as server_record.py does for local processes.

launcher.json is the latest session's record; with rounds in parallel several sessions live at
once and overwrite it, so each session's own copy (`servers/{arm}-{session}.launcher.json`) is
read too: a resume undoes every job or pod that no copy says is stopped.

A run directory is data, never code: a resume runs `scancel` and `kubectl` from PATH, never a
program a record names, and takes from the record only what identifies the job or pod — the
job's name and id, the pod's objects, kubectl's context and namespace — each checked against
the shape the tool writes (a record that does not fit is left alone and said so); and only
records of the launcher the plan uses are acted on. (`kubectl`, the command that made the
objects, stays in the record as evidence; it is never run.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from dspark_tui.engine.servers.server_record import write_session_record
from dspark_tui.model import numbers, safe_files

LAUNCHER_JSON = "launcher.json"

_JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=+-]{0,127}")
_JOB_ID = re.compile(r"[0-9]{1,20}(_[0-9]{1,20})?")
_OBJECT = re.compile(r"(pod|service)/dspark-[a-z0-9]([-a-z0-9]{0,54}[a-z0-9])?")  # as pod_name makes them
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_CONTEXT = re.compile(r"[A-Za-z0-9_@.:/+=-]{1,253}")


class LaunchRecord(BaseModel):
    launcher: Literal["slurm", "kubernetes"]
    arm: str
    session: str | None = None
    state: str = "starting"  # starting (asked for, maybe not yet granted) | running | stopped
    # Slurm: the job is found by its unique name until its id is known.
    job_name: str = ""
    job_id: str | None = None
    node: str | None = None
    # Kubernetes: what `kubectl delete` needs (kubectl itself comes from PATH).
    context: str | None = None  # kubectl's --context; None: the current one
    namespace: str | None = None
    kubectl: list[str] = Field(default_factory=list)  # evidence: what made them; never run
    objects: list[str] = Field(default_factory=list)  # ["pod/NAME", "service/NAME"]

    def kubectl_argv(self) -> list[str]:
        """`kubectl` (from PATH) with the record's context and namespace: what a resume runs.
        A record from before these fields gives them as flags in `kubectl`; only those two
        flags are read from it."""
        context, namespace = self.scope()
        return ["kubectl", *([f"--context={context}"] if context else []),
                *([f"--namespace={namespace}"] if namespace else [])]

    def scope(self) -> tuple[str | None, str | None]:
        """kubectl's context and namespace: the fields, or the flags of a record from before
        them (only those two flags are read from its `kubectl`)."""
        if self.context is not None or self.namespace is not None:
            return self.context, self.namespace
        context = namespace = None
        for arg in self.kubectl[1:]:
            if arg.startswith("--context="):
                context = arg.removeprefix("--context=")
            elif arg.startswith("--namespace="):
                namespace = arg.removeprefix("--namespace=")
        return context, namespace


def record_problem(record: LaunchRecord) -> str | None:
    """Why a record read from a run directory is not one this tool writes (None: it is): each
    value a resume passes to scancel or kubectl must have the shape the tool gives it."""
    context, namespace = record.scope()
    checks = [("job_name", record.job_name or None, _JOB_NAME),
              ("job_id", record.job_id, _JOB_ID),
              ("context", context, _CONTEXT), ("namespace", namespace, _NAMESPACE),
              *(("objects", item, _OBJECT) for item in record.objects)]
    for key, value, shape in checks:
        if value is not None and not shape.fullmatch(value):
            return f"{key} {value[:60]!r} is not what the tool writes there"
    if record.launcher == "slurm" and not (record.job_name or record.job_id):
        return "names no Slurm job"
    if record.launcher == "kubernetes" and not record.objects:
        return "names no pod"
    return None


def write_launch_record(run_dir: Path, record: LaunchRecord, *, live: bool = True) -> bool:
    """Best effort, like server.json: a full disk must not stop a stop. Each session keeps its
    own copy as evidence (`servers/{arm}-{session}.launcher.json`); live=False writes only that
    copy, leaving launcher.json to the session it holds."""
    return write_session_record(run_dir, LAUNCHER_JSON, ".launcher.json", record.arm, record.session,
                                record.model_dump_json(indent=2) + "\n", live=live)


def _read(path: Path) -> LaunchRecord | None:
    return _read_or_problem(path)[0]


def _read_or_problem(path: Path) -> tuple[LaunchRecord | None, str | None]:
    """The record, or None and (for a file that is there but not a record this tool writes)
    one line saying why it is left alone."""
    try:  # a FIFO, a link to /dev/zero or a huge file is refused, never read whole
        data = numbers.loads(safe_files.read_bytes(path, safe_files.RECORD_CAP))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path.name}: unreadable ({getattr(exc, 'strerror', None) or exc}), left alone"
    try:
        record = LaunchRecord.model_validate(data)
    except ValueError as exc:
        detail = [line.strip() for line in str(exc).splitlines()[1:3]]
        return None, (f"{path.name}: not a launch record this tool writes "
                      f"({': '.join(detail)[:120]}), left alone")
    if (why := record_problem(record)) is not None:
        return None, f"{path.name}: {why}, left alone"
    return record, None


def read_launch_record(run_dir: Path) -> LaunchRecord | None:
    return _read(run_dir / LAUNCHER_JSON)


def job_key(record: LaunchRecord) -> tuple[str, str, tuple[str, ...]]:
    """What a record asked for: the same for the live record and the session's copy of it."""
    return record.launcher, record.job_name, tuple(record.objects)


def read_launch_records(run_dir: Path, problems: list[str] | None = None) -> list[list[LaunchRecord]]:
    """Every job or pod the run's records name, each as the copies that name it (launcher.json
    and the session's own copy); a file that is no such record adds a line to `problems`."""
    paths = [*sorted((run_dir / "servers").glob("*.launcher.json")), run_dir / LAUNCHER_JSON]
    jobs: dict[tuple[str, str, tuple[str, ...]], list[LaunchRecord]] = {}
    for path in paths:
        record, problem = _read_or_problem(path)
        if problem is not None and problems is not None:
            problems.append(problem)
        if record is not None:
            jobs.setdefault(job_key(record), []).append(record)
    return list(jobs.values())
