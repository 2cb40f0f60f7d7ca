"""Who starts an arm's server (`[server] launcher`): a local process (server.py's
ServerProcess, the default), a Slurm job step (slurm.py) or a Kubernetes pod (kubernetes.py).

Each is a ServerProcess: the runner's contract does not change — start, ready, logs, stop —
and `stop_orphaned_launch` undoes what a runner killed with -9 left on a cluster. A
`Placement` asks a cluster launcher for a node (or to avoid some), and the server's `node` says
where it landed: rounds in parallel keep each round's arms on one node.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from dspark_tui.engine.servers.gpu import GpuProbe
from dspark_tui.engine.servers.launchers.kubernetes import (
    KubernetesServer,
    delete_objects,
    places_on_nodes,
    read_template,
    render_manifest,
)
from dspark_tui.engine.servers.launchers.record import (
    job_key,
    read_launch_record,
    read_launch_records,
    write_launch_record,
)
from dspark_tui.engine.servers.launchers.slurm import SlurmServer, cancel_job
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.engine.servers.server import Emit, ServerError, ServerProcess
from dspark_tui.model import Arm, Plan, UserError
from dspark_tui.results import RunStore

__all__ = ["Placement", "launcher_problems", "make_server", "plan_launcher", "stop_orphaned_launch"]

_LAUNCHERS: dict[str, type[ServerProcess]] = {
    "local": ServerProcess, "slurm": SlurmServer, "kubernetes": KubernetesServer}


def make_server(plan: Plan, arm: Arm, *, log_path: Path, run_dir: Path, emit: Emit,
                gpu: GpuProbe | None, session: str,
                placement: Placement | None = None) -> ServerProcess:
    """The plan's launcher for one session of `arm`; `placement` is for a cluster launcher
    (the local one keeps it and ignores it)."""
    kind = _LAUNCHERS[plan.server.launcher]
    return kind(plan, arm, log_path=log_path, run_dir=run_dir, emit=emit, gpu=gpu, session=session,
                placement=placement)


def launcher_problems(plan: Plan) -> list[str]:
    """Preflight of a cluster launcher, one line a problem: its tools are on PATH, a pod's
    manifest template reads and fills, and with rounds in parallel the plan's own template can
    place a pod on a node (`{affinity}`)."""
    tools = {"slurm": ("srun", "squeue", "scancel"), "kubernetes": ("kubectl",)}
    missing = [tool for tool in tools.get(plan.server.launcher, ()) if shutil.which(tool) is None]
    problems = [f"server.launcher = {plan.server.launcher!r}: {', '.join(missing)} not on PATH; "
                "install the cluster's client tools here or run from a login node"] if missing else []
    if plan.server.launcher == "kubernetes":
        try:
            template, where = read_template(plan.server.kubernetes)
            render_manifest(plan, plan.arms[0], "check", "s1", template, where)
        except ServerError as exc:
            problems.append(exc.reason)
        else:
            parallel = getattr(plan.bench, "parallel", 1)
            if parallel > 1 and not places_on_nodes(template):
                problems.append(
                    f"{where}: no {{affinity}} placeholder, but [bench] parallel = {parallel} "
                    "runs rounds on several nodes at once and the template must place a round's "
                    "arms on one node: add `affinity: {affinity}` under the Pod's spec")
    return problems


def stop_orphaned_launch(run_dir: Path, launcher: str | None = None) -> str | None:
    """Undo every job or pod a dead runner left asked for; what was done, in words, several
    joined by "; " (None: nothing was left). A job any copy says is stopped was undone (the
    state is written only after the undo). A tool that fails leaves the record as it was, so
    the next resume tries again.

    Only records of `launcher` — the plan's (None: the run.json snapshot's; a directory without
    a readable run.json, which nothing resumes, any record's own) — are acted on;
    scancel and kubectl are the ones on PATH, given only the job's name or id, the objects
    and kubectl's context and namespace from the record (record.py says what a record must
    look like; one that does not is left alone, and said)."""
    if launcher is None:
        launcher = plan_launcher(run_dir)
    live = read_launch_record(run_dir)
    problems: list[str] = []
    words = []
    for copies in read_launch_records(run_dir, problems):
        if any(copy.state == "stopped" for copy in copies):
            continue
        record = max(copies, key=lambda copy: (copy.job_id is not None, copy.node is not None))
        if launcher is not None and record.launcher != launcher:
            problems.append(f"{record.launcher} record of {record.arm} left alone: the plan's "
                            f"launcher is {launcher}")
            continue
        done, said = cancel_job(record) if record.launcher == "slurm" else delete_objects(record)
        words.append(said)
        if done:
            record.state = "stopped"
            write_launch_record(run_dir, record, live=live is not None and job_key(live) == job_key(record))
    return "; ".join([*words, *dict.fromkeys(problems)]) or None


def plan_launcher(run_dir: Path) -> str | None:
    """The launcher of the plan run.json keeps (None when run.json cannot be read)."""
    try:
        server = RunStore(run_dir).read_manifest().plan.get("server")
    except (UserError, OSError, ValueError):
        return None
    launcher = server.get("launcher", "local") if isinstance(server, dict) else "local"
    return launcher if launcher in _LAUNCHERS else "local"
