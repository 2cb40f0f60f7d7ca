"""Each fault switch does to a supervisor what the real failure would."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import socket
import subprocess
import time

import httpx
import psutil
import pytest

from tests.sim._client import metric_sum
from tests.simulator import running_sim, stop_process_group


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float = 10) -> int:
    return proc.wait(timeout)


def _complete(url: str, tokens: int = 5) -> httpx.Response:
    return httpx.post(url + "/v1/completions", json={"prompt": "x", "max_tokens": tokens}, timeout=5)


def test_fail_start_exits_1_with_a_vllm_like_error():
    with running_sim("--fail-start", wait=False) as sim:
        assert _wait_exit(sim.proc) == 1
        log = sim.log_text()
        assert "EngineCore failed to start" in log
        assert "RuntimeError: Engine core initialization failed" in log
        assert not _port_open(sim.port)


def test_startup_delay_keeps_the_port_closed_until_ready():
    start = time.monotonic()
    with running_sim("--startup-delay", "1.0", wait=False) as sim:
        time.sleep(0.5)
        assert sim.proc.poll() is None
        assert not _port_open(sim.port)
        assert "Application startup complete." not in sim.log_text()
        deadline = time.monotonic() + 10
        while not _port_open(sim.port):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert time.monotonic() - start >= 1.0
        assert httpx.get(sim.url + "/health").status_code == 200
        assert "Application startup complete." in sim.log_text()


def test_hang_startup_never_opens_the_port_but_stops_on_sigterm():
    with running_sim("--hang-startup", wait=False) as sim:
        time.sleep(1.0)
        assert sim.proc.poll() is None
        assert not _port_open(sim.port)
        assert "Starting to load model" in sim.log_text()
        os.killpg(sim.proc.pid, signal.SIGTERM)
        assert _wait_exit(sim.proc, 5) != 0


@pytest.mark.parametrize("code", [0, 3])
def test_crash_after_requests_exits_with_the_given_code(code):
    with running_sim("--crash-after-requests", "2", "--crash-exit-code", str(code)) as sim:
        assert _complete(sim.url).status_code == 200
        assert sim.proc.poll() is None
        assert _complete(sim.url).status_code == 200
        assert _wait_exit(sim.proc, 5) == code
        assert not _port_open(sim.port)
        assert "fatal error" in sim.log_text()


def test_ignore_sigterm_keeps_serving_until_killed():
    with running_sim("--ignore-sigterm", stop_timeout=1) as sim:
        sim.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert sim.proc.poll() is None
        assert _complete(sim.url).status_code == 200
        assert "ignoring" in sim.log_text()
        sim.proc.kill()
        assert _wait_exit(sim.proc) == -signal.SIGKILL


def test_spawned_workers_outlive_a_sigkill_of_the_parent_but_not_of_the_group():
    with running_sim("--spawn-workers", "2") as sim:
        workers = psutil.Process(sim.pid).children()
        assert len(workers) == 2
        assert all(os.getpgid(w.pid) == os.getpgid(sim.pid) for w in workers)
        sim.proc.kill()
        sim.proc.wait(5)
        time.sleep(0.3)
        assert all(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
        stop_process_group(sim.proc, 2)
        _, alive = psutil.wait_procs(workers, timeout=5)
        assert not alive


def test_graceful_stop_takes_the_workers_along():
    with running_sim("--spawn-workers", "1") as sim:
        worker = psutil.Process(sim.pid).children()[0]
        sim.proc.send_signal(signal.SIGTERM)
        assert _wait_exit(sim.proc, 5) == 0
        _, alive = psutil.wait_procs([worker], timeout=5)
        assert not alive


def test_log_flood_writes_at_the_requested_rate_and_still_serves():
    with running_sim("--log-flood", "200000") as sim:
        size_before = sim.log_path.stat().st_size
        time.sleep(1.0)
        grown = sim.log_path.stat().st_size - size_before
        assert 100_000 < grown < 600_000
        assert _complete(sim.url).status_code == 200


def test_stall_after_requests_keeps_health_but_generation_hangs():
    with running_sim("--stall-after-requests", "1") as sim:
        assert _complete(sim.url).status_code == 200
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            hung = pool.submit(httpx.post, sim.url + "/v1/completions",
                               json={"prompt": "x", "max_tokens": 5}, timeout=1.5)
            time.sleep(0.5)
            assert httpx.get(sim.url + "/health").status_code == 200
            assert metric_sum(sim.metrics_text(), "vllm:num_requests_waiting") == 1
            with pytest.raises(httpx.ReadTimeout):
                hung.result()
