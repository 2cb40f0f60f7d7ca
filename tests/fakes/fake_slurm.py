"""A stand-in for Slurm's `srun`, `squeue`, `scancel` and `scontrol` on "nodes" that are this
machine: FAKE_SLURM_NODES="127.0.0.2,127.0.0.3" names them, each a loopback address (default:
127.0.0.1 alone). Installed under those names by small wrapper scripts
(tests/engine/test_launchers.py), it dispatches on the name it was called by. Jobs are files in
FAKE_SLURM_DIR.

- srun [options] [--] COMMAND...: a job (PENDING for FAKE_SLURM_PENDING_S, then until a node is
  free, then RUNNING) whose task is COMMAND, started detached; srun prints the task's output as
  it comes and exits with its code, as the real srun does. Killed, srun leaves the job running
  (as a lost login session would): only scancel ends it. A node runs one job at a time (as
  `--gres=gpu:8` takes a whole node), and until its task has exited after a cancel. The node is
  `-w/--nodelist`'s (the job waits while that node is busy), else the first free one not in
  `-x/--exclude`. A plan's `--host {host}` binds the node's address, as `--host 0.0.0.0` would
  on a real node: the task's `--host` value is replaced by it.
- squeue [--name=N] [--jobs=ID] [--states=all] [--noheader] [--format=FMT]: %i %j %T %N of
  pending and running jobs (every state with --states=all); an id it never had is an error.
- scancel ID... | --name=N: ends the job's task (TERM, then KILL), marks it CANCELLED; silent.
  FAKE_SCANCEL_FAILS=N: the first N calls fail as with slurmctld unreachable.
- scontrol show hostnames LIST: one host a line (only `a,b` lists; brackets are not faked).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run by path, not as a package
import fake_cluster as cluster

LIVE_STATES = ("PENDING", "RUNNING")


def jobs_dir() -> Path:
    path = cluster.state_dir("FAKE_SLURM_DIR") / "jobs"
    path.mkdir(exist_ok=True)
    return path


def next_job_id() -> str:
    counter = cluster.state_dir("FAKE_SLURM_DIR") / "next_id"
    with open(counter, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        job_id = int(handle.read().strip() or "1000") + 1
        handle.seek(0)
        handle.truncate()
        handle.write(str(job_id))
    return str(job_id)


def job_path(job_id: str) -> Path:
    return jobs_dir() / f"{job_id}.json"


def all_jobs() -> list[dict]:
    found = [cluster.read_json(p) for p in sorted(jobs_dir().glob("*.json"))]
    return [j for j in found if j is not None]


def node_request(nodelist: str | None, exclude: str | None) -> list[str] | str:
    """The nodes a job may run on, in order; or srun's error when the request cannot be met."""
    known = cluster.nodes("FAKE_SLURM_NODES")
    wanted = [n for n in (nodelist or "").split(",") if n]
    avoided = [n for n in (exclude or "").split(",") if n]
    if set(wanted + avoided) - set(known):
        return "Invalid node name specified"
    if len(wanted) > 1:
        return "Requested node configuration is not available"  # one node a job here
    candidates = [n for n in (wanted or known) if n not in avoided]
    return candidates or "Requested node configuration is not available"


def busy_nodes() -> set[str]:
    """Nodes whose job's task runs (a cancelled one's, too, until it has exited) or is about
    to start (taken, no task yet)."""
    return {job["node"] for job in all_jobs() if job.get("node") and (
        (job["state"] == "RUNNING" and not job.get("pid"))
        or cluster.process(job.get("pid"), job.get("create_time")))}


def claim_node(job_id: str, candidates: list[str]) -> str | None:
    """The first free candidate, taken for the job (RUNNING there) in one locked step."""
    with cluster.locked(jobs_dir()):
        job = cluster.read_json(job_path(job_id)) or {}
        if job.get("state") != "PENDING":
            return None
        free = [n for n in candidates if n not in busy_nodes()]
        if not free:
            return None
        job.update(state="RUNNING", node=free[0])
        cluster.write_json(job_path(job_id), job)
        return free[0]


def wait_for_node(job_id: str, candidates: list[str]) -> str | None:
    """PENDING for FAKE_SLURM_PENDING_S, then until a candidate is free; None: cancelled."""
    deadline = time.monotonic() + float(os.environ.get("FAKE_SLURM_PENDING_S", "0"))
    queued = False
    while True:
        if (cluster.read_json(job_path(job_id)) or {}).get("state") == "CANCELLED":
            return None
        if time.monotonic() >= deadline:
            node = claim_node(job_id, candidates)
            if node is not None:
                if queued:
                    print(f"srun: job {job_id} has been allocated resources", file=sys.stderr,
                          flush=True)
                return node
        if not queued:
            print(f"srun: job {job_id} queued and waiting for resources", file=sys.stderr,
                  flush=True)
            queued = True
        time.sleep(0.05)


def srun(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="srun", add_help=False)
    parser.add_argument("-J", "--job-name", default="")
    parser.add_argument("-N", "--nodes", default="1")
    parser.add_argument("-n", "--ntasks", default="1")
    parser.add_argument("-p", "--partition")
    parser.add_argument("--gres")
    parser.add_argument("-t", "--time")
    parser.add_argument("-A", "--account")
    parser.add_argument("-q", "--qos")
    parser.add_argument("-C", "--constraint")
    parser.add_argument("-c", "--cpus-per-task")
    parser.add_argument("--mem")
    parser.add_argument("--exclusive", action="store_true")
    parser.add_argument("-w", "--nodelist")
    parser.add_argument("-x", "--exclude")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    candidates = node_request(args.nodelist, args.exclude)
    if isinstance(candidates, str):
        print(f"srun: error: Unable to allocate resources: {candidates}", file=sys.stderr)
        return 1
    job_id = next_job_id()
    log_path = jobs_dir() / f"{job_id}.out"
    job = {"id": job_id, "name": args.job_name or Path(command[0]).name, "state": "PENDING",
           "node": "", "partition": args.partition, "gres": args.gres, "time": args.time,
           "account": args.account, "nodelist": args.nodelist, "exclude": args.exclude,
           "command": command, "srun_pid": os.getpid()}
    cluster.write_json(job_path(job_id), job)
    node = wait_for_node(job_id, candidates)
    if node is None:
        print(f"srun: error: Unable to allocate resources: Job {job_id} was cancelled",
              file=sys.stderr)
        return 1
    log_path.touch()
    task = cluster.start_server(cluster.bind_to(command, node), log_path,
                                {"SLURM_JOB_ID": job_id, "SLURMD_NODENAME": node})
    with cluster.locked(jobs_dir()):  # a scancel since the claim found no task to end: end it here
        job = cluster.read_json(job_path(job_id)) or job
        job.update(pid=task.pid, create_time=psutil.Process(task.pid).create_time())
        cluster.write_json(job_path(job_id), job)
    if job["state"] == "CANCELLED":
        cluster.stop_server(job["pid"], job["create_time"])
    offset = 0
    while task.poll() is None:
        offset = cluster.follow(log_path, offset, sys.stdout.buffer)
        time.sleep(0.1)
    cluster.follow(log_path, offset, sys.stdout.buffer)
    with cluster.locked(jobs_dir()):  # its end, not a scancel's CANCELLED written meanwhile
        final = cluster.read_json(job_path(job_id)) or job
        if final.get("state") != "CANCELLED":
            final["state"] = "COMPLETED" if task.returncode == 0 else "FAILED"
            cluster.write_json(job_path(job_id), final)
    if final.get("state") == "CANCELLED":
        print(f"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
              f"slurmstepd: error: *** STEP {job_id}.0 ON {node} CANCELLED ***", file=sys.stderr)
    elif task.returncode:
        print(f"srun: error: {node}: task 0: Exited with exit code {task.returncode}",
              file=sys.stderr)
    return task.returncode if task.returncode >= 0 else 128 - task.returncode


def squeue(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="squeue", add_help=False)
    parser.add_argument("-n", "--name")
    parser.add_argument("-j", "--jobs")
    parser.add_argument("-h", "--noheader", action="store_true")
    parser.add_argument("-o", "--format", default="%i %j %T %N")
    parser.add_argument("-u", "--user")
    parser.add_argument("--me", action="store_true")
    parser.add_argument("-t", "--states", default="")
    args = parser.parse_args(argv)
    states = LIVE_STATES if args.states.lower() != "all" else None
    jobs = all_jobs()
    if args.jobs and not any(job["id"] in args.jobs.split(",") for job in jobs):
        print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
        return 1
    fields = {"%i": "id", "%j": "name", "%T": "state", "%N": "node"}
    if not args.noheader:
        print(" ".join({"%i": "JOBID", "%j": "NAME", "%T": "STATE", "%N": "NODELIST"}.get(f, f)
                       for f in args.format.split()))
    for job in jobs:
        if states is not None and job["state"] not in states:
            continue
        if args.name and job["name"] not in args.name.split(","):
            continue
        if args.jobs and job["id"] not in args.jobs.split(","):
            continue
        line = args.format
        for code, key in fields.items():
            line = line.replace(code, str(job.get(key) or ""))
        print(line)
    return 0


def _controller_down() -> bool:
    """FAKE_SCANCEL_FAILS=N: the first N scancel calls find slurmctld unreachable."""
    fails = int(os.environ.get("FAKE_SCANCEL_FAILS", "0"))
    if fails <= 0:
        return False
    with cluster.locked(jobs_dir()):
        counter = cluster.state_dir("FAKE_SLURM_DIR") / "scancel_calls"
        calls = int(counter.read_text() or "0") if counter.exists() else 0
        counter.write_text(str(calls + 1))
    return calls < fails


def scancel(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scancel", add_help=False)
    parser.add_argument("-n", "--name")
    parser.add_argument("-u", "--user")
    parser.add_argument("job_ids", nargs="*")
    args = parser.parse_args(argv)
    if not args.job_ids and not args.name:
        print("scancel: error: No job identification provided", file=sys.stderr)
        return 1
    if _controller_down():
        print("scancel: error: Kill job error on job id "
              f"{','.join(args.job_ids) or args.name}: Unable to contact slurm controller "
              "(connect failure)", file=sys.stderr)
        return 1
    code = 0
    for job_id in args.job_ids:
        if cluster.read_json(job_path(job_id)) is None:
            print(f"scancel: error: Kill job error on job id {job_id}: Invalid job id specified",
                  file=sys.stderr)
            code = 1
    cancelled = []
    with cluster.locked(jobs_dir()):
        for job in all_jobs():
            if job["state"] not in LIVE_STATES:
                continue
            if job["id"] in args.job_ids or (args.name and job["name"] == args.name):
                job["state"] = "CANCELLED"
                cluster.write_json(job_path(job["id"]), job)
                cancelled.append(job)
    for job in cancelled:  # a task not started yet is ended by its srun
        cluster.stop_server(job.get("pid"), job.get("create_time"))
    return code


def scontrol(argv: list[str]) -> int:
    if argv[:2] != ["show", "hostnames"] or len(argv) != 3:
        print("scontrol: error: only `scontrol show hostnames LIST` is faked", file=sys.stderr)
        return 1
    print("\n".join(argv[2].split(",")))
    return 0


def main() -> int:
    tool = os.environ.get("FAKE_SLURM_TOOL") or Path(sys.argv[0]).name
    commands = {"srun": srun, "squeue": squeue, "scancel": scancel, "scontrol": scontrol}
    if tool not in commands:
        sys.exit(f"fake_slurm: called as {tool!r}; expected one of {', '.join(commands)}")
    return commands[tool](sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
