"""The command line as a user runs it, for the tests that drive it as a subprocess.

One copy of what many test files carried their own of: the argv, a run of it with the
developer's own config pointed nowhere, a poll for a condition, a started one reaped, and the
plan snippet of cells slow enough to act on while one is in flight.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.plan_text import scenario_table

CLI = [sys.executable, "-m", "dspark_tui"]
# Where no config lives, so that a developer's own settings never change what a test sees.
NO_CONFIG = "/nonexistent-dspark-config"


def cli_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ with the config dir pointed nowhere, then `env` over both."""
    return {**os.environ, "DSPARK_CONFIG_DIR": NO_CONFIG, **(env or {})}


def run_cli(*args: str, timeout: float = 90, env: Mapping[str, str] | None = None,
            cwd: Path | None = None, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """`dspark-tui ARGS` to its end, output captured, stdin closed; `prefix` goes before the
    interpreter (e.g. to run it as another user)."""
    return subprocess.run([*prefix, *CLI, *args], capture_output=True, text=True,
                          timeout=timeout, env=cli_env(env), cwd=cwd,
                          stdin=subprocess.DEVNULL, check=False)


@contextlib.contextmanager
def reaped(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """The process killed and waited for if it still runs when the block ends (an assertion
    failed, a wait timed out): no test leaves a runner behind."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class Done:
    """What run_cli_here saw: run_cli's CompletedProcess, less the process."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli_here(*args: str, env: Mapping[str, str] | None = None) -> Done:
    """`dspark-tui ARGS` in this process, for a command that refuses or answers at once: the
    main() the console script calls, with the environment run_cli gives its child (restored
    after), stdout and stderr captured at their file descriptors, and Python's own warning
    filters, so that a warning a user would see lands on stderr as it would. No Python start
    (~0.3-0.8 s of CPU each). What it cannot see is the interpreter's own end (a line printed at
    exit); the tests whose subject is the process (signals, detaching, pipes, SIGPIPE, a plan
    that must not hang the caller) keep run_cli.
    """
    from dspark_tui.cli import main

    with _environment({"DSPARK_CONFIG_DIR": NO_CONFIG, **(env or {})}), \
            _captured_fds() as seen, _pythons_warnings():
        try:
            code: object = main(list(args))
        except SystemExit as exc:  # argparse's usage errors, as the interpreter ends on them
            code = exc.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    return Done(list(args), code or 0, seen["stdout"], seen["stderr"])


@contextlib.contextmanager
def _captured_fds() -> Iterator[dict[str, str]]:
    """File descriptors 1 and 2 pointed at two files while the command runs, sys.stdout and
    sys.stderr writing to them as a child's do (UTF-8; stderr backslash-escapes), so that a
    write past sys.stdout (a library's, or a stream opened on the descriptor) is seen too."""
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        seen: dict[str, str] = {}  # filled once the command is done
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                yield seen
        finally:
            stdout.close()  # flushes; the descriptor stays
            stderr.close()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            for name, file in (("stdout", out), ("stderr", err)):
                file.seek(0)
                seen[name] = file.read().decode()


@contextlib.contextmanager
def _environment(changes: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(changes)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _pythons_warnings() -> Iterator[None]:
    """The filters of a plain `python` (no -W, no -X dev), shown on sys.stderr as it shows them."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: object = None, line: str | None = None) -> None:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in (("ignore", ResourceWarning, ""),
                                         ("ignore", ImportWarning, ""),
                                         ("ignore", PendingDeprecationWarning, ""),
                                         ("ignore", DeprecationWarning, ""),
                                         ("default", DeprecationWarning, "__main__")):
            warnings.filterwarnings(action, category=category, module=module)  # type: ignore[arg-type]
        warnings.showwarning = show
        yield


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def slow_cells(concurrencies: Sequence[int] = (1, 2, 3, 4), output_len: int = 512) -> str:
    """A `[[scenarios]]` "slow" of cells of about a second each at --speed 2 (at 512 tokens),
    so that a test can act while one is in flight."""
    return scenario_table("slow", 64, output_len, concurrencies, 2, range_ratio=1.0)


def hold_paused(run_dir: Path, timeout: float = 30.0) -> None:
    """Pause a run and wait until its runner says so: held between cells, running for as long as
    a test takes to act on it (a signal, a kill, an attach). Left going, a short run's last few
    seconds were the window, which a loaded box can spend before the action lands."""
    from dspark_tui.engine.rundir.control import send_control

    send_control(run_dir, "pause")
    events = run_dir / "events.jsonl"
    wait_for(lambda: "paused; resume to go on" in events.read_text(), timeout, what="the pause")


def attach_and_resume(run_dir: Path, env: Mapping[str, str] | None = None,
                      timeout: float = 90) -> Done:
    """`dspark-tui attach --headless` (no directory: it finds the newest running run) to a run
    held paused (`hold_paused`): once attach prints its first line (it picked a run and replays
    its events) the run is resumed, and attach followed to its end. What it printed is its first
    line and the rest; `env` as run_cli's."""
    from dspark_tui.engine.rundir.control import send_control

    argv = [*CLI, "attach", "--headless"]
    attach = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, env=cli_env(env))
    with reaped(attach):
        assert attach.stdout is not None
        first = attach.stdout.readline()
        send_control(run_dir, "resume")
        rest, err = attach.communicate(timeout=timeout)
    return Done(argv, attach.returncode, first + rest, err)
