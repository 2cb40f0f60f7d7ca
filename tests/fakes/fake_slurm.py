"""A stand-in for Slurm's `srun`, `squeue`, `scancel` and `scontrol` on one "node": this machine
(127.0.0.1). Installed under those names by small wrapper scripts (tests/engine/test_launchers.py),
it dispatches on the name it was called by. Jobs are files in FAKE_SLURM_DIR.

- srun [options] [--] COMMAND...: a job (PENDING for FAKE_SLURM_PENDING_S, then RUNNING) whose
  task is COMMAND, started detached; srun prints the task's output as it comes and exits with
  its code, as the real srun does. Killed, srun leaves the job running (as a lost login session
  would): only scancel ends it.
- squeue [--name=N] [--jobs=ID] [--noheader] [--format=FMT]: %i %j %T %N of pending and running jobs.
- scancel ID... | --name=N: ends the job's task (TERM, then KILL), marks it CANCELLED; silent.
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

NODE = "127.0.0.1"
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
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    job_id = next_job_id()
    log_path = jobs_dir() / f"{job_id}.out"
    job = {"id": job_id, "name": args.job_name or Path(command[0]).name, "state": "PENDING",
           "node": "", "partition": args.partition, "gres": args.gres, "time": args.time,
           "account": args.account, "command": command, "srun_pid": os.getpid()}
    cluster.write_json(job_path(job_id), job)
    pending = float(os.environ.get("FAKE_SLURM_PENDING_S", "0"))
    if pending > 0:
        print(f"srun: job {job_id} queued and waiting for resources", file=sys.stderr, flush=True)
        deadline = time.monotonic() + pending
        while time.monotonic() < deadline:
            if (cluster.read_json(job_path(job_id)) or {}).get("state") == "CANCELLED":
                print(f"srun: error: Unable to allocate resources: Job {job_id} was cancelled",
                      file=sys.stderr)
                return 1
            time.sleep(0.05)
        print(f"srun: job {job_id} has been allocated resources", file=sys.stderr, flush=True)
    log_path.touch()
    task = cluster.start_server(command, log_path, {"SLURM_JOB_ID": job_id, "SLURMD_NODENAME": NODE})
    job.update(state="RUNNING", node=NODE, pid=task.pid,
               create_time=psutil.Process(task.pid).create_time())
    cluster.write_json(job_path(job_id), job)
    offset = 0
    while task.poll() is None:
        offset = cluster.follow(log_path, offset, sys.stdout.buffer)
        time.sleep(0.1)
    cluster.follow(log_path, offset, sys.stdout.buffer)
    final = cluster.read_json(job_path(job_id)) or job
    if final.get("state") == "CANCELLED":
        print(f"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
              f"slurmstepd: error: *** STEP {job_id}.0 ON {NODE} CANCELLED ***", file=sys.stderr)
    else:
        final["state"] = "COMPLETED" if task.returncode == 0 else "FAILED"
        cluster.write_json(job_path(job_id), final)
        if task.returncode:
            print(f"srun: error: {NODE}: task 0: Exited with exit code {task.returncode}",
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
    args = parser.parse_args(argv)
    fields = {"%i": "id", "%j": "name", "%T": "state", "%N": "node"}
    if not args.noheader:
        print(" ".join({"%i": "JOBID", "%j": "NAME", "%T": "STATE", "%N": "NODELIST"}.get(f, f)
                       for f in args.format.split()))
    for job in all_jobs():
        if job["state"] not in LIVE_STATES:
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


def scancel(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scancel", add_help=False)
    parser.add_argument("-n", "--name")
    parser.add_argument("-u", "--user")
    parser.add_argument("job_ids", nargs="*")
    args = parser.parse_args(argv)
    if not args.job_ids and not args.name:
        print("scancel: error: No job identification provided", file=sys.stderr)
        return 1
    code = 0
    for job_id in args.job_ids:
        if cluster.read_json(job_path(job_id)) is None:
            print(f"scancel: error: Kill job error on job id {job_id}: Invalid job id specified",
                  file=sys.stderr)
            code = 1
    for job in all_jobs():
        if job["state"] not in LIVE_STATES:
            continue
        if job["id"] in args.job_ids or (args.name and job["name"] == args.name):
            job["state"] = "CANCELLED"
            cluster.write_json(job_path(job["id"]), job)
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
