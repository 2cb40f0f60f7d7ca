"""A server started as a Slurm job step: `srun` held by the tool.

`srun` runs on this machine and blocks while the job lives, so it is the local process the
server supervisor already knows how to watch: the server's output comes back through it (into
the scrubbing relay and logs/server-{arm}-{session}.log), its exit is the server's, and ending
it is part of the stop. The job gets a unique name, so `squeue --name` finds its id and node
while it starts, and `scancel` ends it whether or not the id was ever seen.

A `Placement` becomes srun's own flags — `--nodelist=NODE` (exactly that node) and
`--exclude=A,B` (none of those) — and the node squeue names once the job runs is the server's
`host` and `node`: a round's later arms are asked for that node.
"""

from __future__ import annotations

import asyncio
import time

from dspark_tui.engine.servers.launchers.launched import LaunchedServer
from dspark_tui.engine.servers.launchers.record import LaunchRecord, write_launch_record
from dspark_tui.engine.servers.launchers.tools import run_tool
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.model import SlurmOptions
from dspark_tui.model.events import Notice, ServerLog

SQUEUE_EVERY_S = 1.0  # how often a starting job is looked up (slurmctld is shared)


def srun_argv(options: SlurmOptions, job_name: str,
              placement: Placement | None = None) -> list[str]:
    """srun with the plan's options; one task on one node, the server's command after `--`.
    The placement's flags come after the plan's extra_args, so they are the ones srun keeps;
    nodes the plan excludes itself (`-x`/`--exclude` in extra_args) stay excluded, merged in."""
    argv = ["srun", f"--job-name={job_name}", "--nodes=1", "--ntasks=1"]
    for flag, value in (("--partition", options.partition), ("--gres", options.gres),
                        ("--time", options.time), ("--account", options.account)):
        if value:
            argv.append(f"{flag}={value}")
    extra, excluded = _without_exclude(options.extra_args)
    argv += extra if placement is not None and placement.avoid else options.extra_args
    if placement is not None and placement.node:
        argv.append(f"--nodelist={placement.node}")
    if placement is not None and placement.avoid:
        argv.append(f"--exclude={','.join(dict.fromkeys([*excluded, *placement.avoid]))}")
    return [*argv, "--"]


def _without_exclude(args: list[str]) -> tuple[list[str], list[str]]:
    """extra_args without their `-x LIST` / `--exclude=LIST` / `--exclude LIST`, and the nodes
    those named."""
    kept: list[str] = []
    nodes: list[str] = []
    pending = False
    for arg in args:
        if pending:
            nodes += arg.split(",")
            pending = False
        elif arg in ("-x", "--exclude"):
            pending = True
        elif arg.startswith("--exclude="):
            nodes += arg.removeprefix("--exclude=").split(",")
        elif arg.startswith("-x") and len(arg) > 2:
            nodes += arg[2:].split(",")
        else:
            kept.append(arg)
    return kept, [n for n in nodes if n]


def first_host(nodelist: str) -> str | None:
    """The first node of a Slurm node list; `node[01-04]` is expanded by `scontrol`, Slurm's
    own reader of its syntax."""
    nodelist = nodelist.strip()
    if not nodelist or nodelist in ("(null)", "n/a"):
        return None
    if "[" not in nodelist and "," not in nodelist:
        return nodelist
    result = run_tool(["scontrol", "show", "hostnames", nodelist], timeout=30)
    hosts = result.out.split() if result.code == 0 else []
    return hosts[0] if hosts else None


def cancel_job(record: LaunchRecord) -> tuple[bool, str]:
    """scancel by id when it is known, else by the job's unique name; (done, in words).

    An id read from a run directory is not trusted alone: a crafted record could name another
    job of the user who resumes it. squeue must first say that the id is still the job of the
    record's name; a job of another name is left alone and said."""
    what = f"Slurm job {record.job_id or record.job_name}"
    if record.job_id:
        if (why := _not_the_recorded_job(record)) is not None:
            return False, why
        target = [record.job_id]
    else:
        target = [f"--name={record.job_name}"]
    result = run_tool(["scancel", *target], timeout=60)
    if result.code == 0:
        return True, f"cancelled {what}"
    return False, f"scancel of {what} failed: {result.last_error_line()}"


def _not_the_recorded_job(record: LaunchRecord) -> str | None:
    """Why the record's job id may not be cancelled (None: squeue names it as recorded)."""
    listed = run_tool(["squeue", f"--jobs={record.job_id}", "--states=all", "--noheader",
                       "--format=%j"], timeout=30)
    if listed.code != 0:
        return f"squeue could not check Slurm job {record.job_id}: {listed.last_error_line()}"
    names = listed.out.split()
    if names and names[0] != record.job_name:
        return (f"Slurm job {record.job_id} is named {names[0][:60]!r}, not the recorded "
                f"{record.job_name!r}: left alone")
    return None


class SlurmServer(LaunchedServer):
    def _launcher_state(self) -> None:
        self.job_name = f"dspark-{self.token[:16]}"
        self._located_at: str | None = None
        self._next_query = 0.0
        self._job = LaunchRecord(launcher="slurm", arm=self.arm.name, session=self.session,
                                 job_name=self.job_name)

    def _local_argv(self) -> list[str]:
        return srun_argv(self.plan.server.slurm, self.job_name, self.placement) + self.argv

    async def _submit(self) -> None:
        # Written before srun runs: a runner killed while the job waits in the queue leaves
        # its name behind, and scancel --name finds it.
        write_launch_record(self.run_dir, self._job)

    async def _located(self) -> bool:
        if self._located_at is not None:
            return True
        if time.monotonic() < self._next_query:
            return False
        self._next_query = time.monotonic() + SQUEUE_EVERY_S
        result = await asyncio.to_thread(
            run_tool, ["squeue", f"--name={self.job_name}", "--noheader", "--format=%i %T %N"],
            timeout=30)
        if result.code != 0:
            return False  # slurmctld busy: asked again at the next look
        for line in result.out.splitlines():
            fields = line.split()
            if len(fields) < 2:
                continue
            job_id, state, nodelist = fields[0], fields[1], " ".join(fields[2:])
            if self._job.job_id != job_id:
                self._job.job_id = job_id
                write_launch_record(self.run_dir, self._job)
            if state != "RUNNING":
                continue
            host = await asyncio.to_thread(first_host, nodelist)
            if host is None:
                continue
            self._located_at = self.host = self.node = host
            self._job.node, self._job.state = host, "running"
            write_launch_record(self.run_dir, self._job)
            self._emit(ServerLog(arm=self.arm.name, line=f"Slurm job {job_id} runs on {host}"))
            return True
        return False

    async def _end_remote(self) -> None:
        if self._job.state == "stopped":
            return
        done, words = await asyncio.to_thread(cancel_job, self._job)
        if not done and self.exit_code() is None:
            # Left marked as running: a resume tries again.
            self._emit(Notice(level="warning", message=f"{self.arm.name}: {words}; a resume "
                              "tries again, or cancel it by hand"))
            return
        self._job.state = "stopped"
        write_launch_record(self.run_dir, self._job)
