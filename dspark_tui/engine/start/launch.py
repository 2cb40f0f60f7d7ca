"""Starting the runner as its own process — for `--detach` and for the TUI.

The caller creates the run directory itself, so it knows the path before the runner exists,
then starts `python -m dspark_tui run --resume DIR --headless` in a new session. The directory
is locked from its creation (or, for a resume, before the runner starts) and the locked
descriptor is handed down (`--lock-fd`), so nothing can slip in between. Attached (not
detached) runners watch their parent and abort when it disappears.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dspark_tui.engine.checks.disk_budget import refuse_resume_without_room
from dspark_tui.engine.run.resume_plan import PLAN_ON_STDIN
from dspark_tui.engine.run.runner import RUNNER_PLAN_VAR, preflight, prepare_run
from dspark_tui.engine.run.verify import plan_to_run
from dspark_tui.engine.rundir.control import CONTROLS_SINCE_VAR, send_control
from dspark_tui.engine.rundir.liveness import refuse_if_alive
from dspark_tui.engine.servers.launchers import stop_orphaned_launch
from dspark_tui.engine.servers.ports import with_concrete_port
from dspark_tui.engine.servers.server_record import stop_orphaned_server
from dspark_tui.model import UserError
from dspark_tui.results import RunStore
from dspark_tui.results.run_lock import RunLock

RUNNER_LOG = "runner.log"
RESUME_NO_VERIFY = "--verify starts a new run; it cannot be combined with --resume"
RESUME_NO_FILTERS = ("--arms/--scenarios cannot be combined with --resume; a resume runs the "
                     "run's own plan")


def refused_resume(store: RunStore, refusal: UserError) -> UserError:
    """A resume refused before its runner starts (a secret not exported, no disk room): what
    the killed runner left — its server, a job or pod — is stopped first, so a refusal holds
    no port and no GPU, and the lock is let go. The refusal, saying what was stopped."""
    try:
        undone = stop_orphaned_launch(store.path)
        pids = stop_orphaned_server(store.path)
    finally:
        if store.lock is not None:
            store.lock.release()
            store.lock = None
    done = [f"stopped the server the previous runner left (pids {', '.join(map(str, pids))})"
            if pids else "", undone or ""]
    said = "; ".join(word for word in done if word)
    return UserError(f"{refusal} ({said})") if said else refusal


def runner_argv(run_dir: Path, *, lang: str, parent_pid: int | None,
                lock_fd: int | None = None) -> list[str]:
    argv = [sys.executable, "-m", "dspark_tui", "run", "--resume", str(run_dir), "--headless",
            "--quiet-runner", "--lang", lang]
    if parent_pid is not None:
        argv += ["--parent-pid", str(parent_pid)]
    if lock_fd is not None:
        argv += ["--lock-fd", str(lock_fd)]
    return argv


def _hand_over(popen: subprocess.Popen[bytes], plan_json: bytes) -> None:
    """Write the plan to the runner's stdin and close it; a runner that died first reads none."""
    assert popen.stdin is not None
    try:
        popen.stdin.write(plan_json)
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            popen.stdin.close()


class RunnerProcess:
    """A runner in another process: its run directory, its pid, and ways to control it."""

    def __init__(self, run_dir: Path, popen: subprocess.Popen[bytes]) -> None:
        self.run_dir = run_dir
        self._popen = popen

    @property
    def pid(self) -> int:
        return self._popen.pid

    @classmethod
    def start(
        cls,
        plan: str,
        *,
        results_root: Path,
        arms: list[str] | None = None,
        scenarios: list[str] | None = None,
        resume: Path | None = None,
        detach: bool = False,
        lang: str = "zh",
        plans_dir: Path | None = None,
        other_roots: list[Path] | None = None,
        verify: Path | None = None,
    ) -> RunnerProcess:
        """Validate, create (or reuse) the run directory and launch the runner in it."""
        roots = [results_root, *(other_roots or [])]
        if resume is not None:
            if arms or scenarios:
                raise UserError(RESUME_NO_FILTERS)
            if verify is not None:
                raise UserError(RESUME_NO_VERIFY)
            run_dir = Path(resume).expanduser()
            store = RunStore(run_dir)
            store.read_manifest()
            refuse_if_alive(run_dir)
            store.lock = RunLock.acquire(run_dir)
            try:
                refuse_resume_without_room(store)
            except UserError as refusal:
                raise refused_resume(store, refusal) from None
        else:
            from dspark_tui.plans import resolve_plan

            resolved, source = resolve_plan(plan, plans_dir)
            resolved, verification = plan_to_run(resolved, verify, arms, scenarios)
            resolved = with_concrete_port(resolved)
            preflight(resolved, roots, results_root=results_root, source=source)
            store = prepare_run(resolved, results_root, source, verification)
            run_dir = store.path
        env = dict(os.environ)
        handover: bytes | None = None
        if resume is None:
            # The whole plan, secrets included, goes to the runner on its stdin, never in its
            # environment (/proc/PID/environ keeps that for life); run.json masks them.
            env[RUNNER_PLAN_VAR] = PLAN_ON_STDIN
            handover = resolved.model_dump_json().encode()
        # The directory stays locked from here to the runner's end: the child gets the locked
        # descriptor itself and this process lets go of its copy only once the child has it.
        lock = store.lock
        assert lock is not None
        try:
            log = open(run_dir / RUNNER_LOG, "ab")  # noqa: SIM115 - handed to the child
            try:
                env[CONTROLS_SINCE_VAR] = repr(time.time())
                popen = subprocess.Popen(
                    runner_argv(run_dir, lang=lang, parent_pid=None if detach else os.getpid(),
                                lock_fd=lock.fd),
                    stdin=subprocess.DEVNULL if handover is None else subprocess.PIPE,
                    stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, close_fds=True, pass_fds=(lock.fd,), env=env,
                )
            finally:
                log.close()
            lock.claim(popen.pid)  # a contender refused meanwhile names the runner, not us
        finally:
            lock.release()
            store.lock = None
        if handover is not None:
            _hand_over(popen, handover)
        return cls(run_dir, popen)

    def control(self, action: str) -> None:
        send_control(self.run_dir, action)

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self._popen.wait(timeout)

    def stop(self, timeout: float = 30.0) -> int | None:
        """Abort through control.jsonl (the runner stops its server itself), then TERM, then KILL."""
        if self.poll() is None:
            try:
                self.control("abort")
            except UserError:
                pass
            if self._wait(timeout):
                return self.poll()
            self._popen.send_signal(signal.SIGTERM)
            if self._wait(timeout):
                return self.poll()
            self._popen.kill()
            self._popen.wait(5)
        stop_orphaned_launch(self.run_dir)
        stop_orphaned_server(self.run_dir)
        return self.poll()

    def _wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._popen.poll() is not None:
                return True
            time.sleep(0.1)
        return False
