"""Start the simulator as a real subprocess for a test, and always stop its whole group.

    with running_sim("--startup-delay", "1", spec_tokens=5, speed=50) as sim:
        httpx.get(sim.url + "/health")

The server runs in its own session (so stopping it reaches its workers too), logs to a file
(`sim.log_path`, `sim.log_text()`; a temporary folder, removed after a block that passed,
kept after one that failed, unless `log_dir` is given), and is stopped with SIGTERM, a wait,
then SIGKILL of the process group on exit, whatever the test did to it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.conftest import free_port

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0


@dataclass
class RunningSim:
    proc: subprocess.Popen[bytes]
    port: int
    host: str
    log_path: Path
    model: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def metrics_text(self) -> str:
        return httpx.get(self.url + "/metrics", timeout=5).text


def refusal_line(*flags: str) -> str:
    """`python -m dspark_tui.sim serve m FLAGS` refused: exit 2 and one line on stderr, which
    is returned for the test to read."""
    result = subprocess.run([sys.executable, "-m", "dspark_tui.sim", "serve", "m", *flags],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def sim_command(port: int, *extra_args: str, model: str = "test-model", spec_tokens: int | None = 3,
                speed: float | None = 50, host: str = "127.0.0.1") -> list[str]:
    """The argv that `running_sim` starts (useful to hand to an engine under test)."""
    argv = [sys.executable, "-m", "dspark_tui.sim", "serve", model, "--host", host,
            "--port", str(port)]
    if spec_tokens is not None:
        argv += ["--spec-tokens", str(spec_tokens)]
    if speed is not None:
        argv += ["--speed", str(speed)]
    return argv + list(extra_args)


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the group, wait, then SIGKILL the group (workers included), and reap."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout)


def wait_ready(proc: subprocess.Popen[bytes], url: str, timeout: float, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    # One client for every probe: httpx.get makes a client a call, each loading the CA bundle
    # (~70 ms of CPU), twenty a second while the simulator starts.
    with httpx.Client(timeout=1) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"simulator exited with {proc.returncode} before ready:\n"
                                   + log_path.read_text(errors="replace")[-2000:])
            try:
                if client.get(url + "/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise TimeoutError(f"simulator not ready after {timeout}s:\n"
                       + log_path.read_text(errors="replace")[-2000:])


@contextlib.contextmanager
def running_sim(*extra_args: str, spec_tokens: int | None = 3, speed: float | None = 50,
                model: str = "test-model", port: int | None = None, wait: bool = True,
                ready_timeout: float = READY_TIMEOUT_S, log_dir: Path | None = None,
                env: dict[str, str] | None = None,
                stop_timeout: float = STOP_TIMEOUT_S) -> Iterator[RunningSim]:
    """A started simulator; `wait=False` returns at once (for startup-failure tests)."""
    port = port or free_port()
    host = "127.0.0.1"
    own_folder = log_dir is None
    folder = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="dspark-sim-"))
    log_path = folder / f"sim-{port}.log"
    argv = sim_command(port, *extra_args, model=model, spec_tokens=spec_tokens, speed=speed,
                       host=host)
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, **(env or {})})
    sim = RunningSim(proc=proc, port=port, host=host, log_path=log_path, model=model)
    try:
        if wait:
            wait_ready(proc, sim.url, ready_timeout, log_path)
        yield sim
    except BaseException:
        own_folder = False  # keep the log of a failed test
        raise
    finally:
        stop_process_group(proc, stop_timeout)
        if own_folder:
            shutil.rmtree(folder, ignore_errors=True)


def demo_plan_text(speed: str, *, single_pass: bool = True, quiet: bool = True) -> str:
    """The shipped demo plan at another simulator speed; by default one pass without noise,
    for tests about progress and control rather than about rounds and verdicts."""
    from dspark_tui.plans import shipped_plan_text

    text = shipped_plan_text("demo")
    replaced = text.replace('"--speed", "4"', f'"--speed", "{speed}"')
    assert replaced != text or speed == "4", "the demo plan's --speed changed"
    if quiet:
        replaced = replaced.replace(',\n           "--noise-cv", "0.03", "--session-cv", "0.02"]', "]")
        assert "--noise-cv" not in replaced, "the demo plan's noise flags changed"
    if single_pass:
        for key, value in (("rounds", "1"), ("repeats", "1"), ("adaptive_rounds", "0")):
            before = replaced
            replaced = "\n".join(f"{key} = {value}" if line.startswith(f"{key} = ") else line
                                 for line in replaced.splitlines()) + "\n"
            assert f"\n{key} = {value}\n" in replaced or before == replaced
    return replaced
