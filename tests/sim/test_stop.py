"""A SIGTERM with streams open stops the simulator cleanly: streams end, no traceback in the log."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import time

import httpx

from tests.sim._client import metric_sum
from tests.simulator import RunningSim, running_sim


def _stream_lines(url: str) -> list[str]:
    body = {"prompt": "x", "max_tokens": 5000, "ignore_eos": True, "stream": True}
    lines = []
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=20) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                lines.append(line[len("data: "):])
    return lines


def _wait_running(sim: RunningSim, count: int) -> None:
    deadline = time.monotonic() + 10
    while metric_sum(sim.metrics_text(), "vllm:num_requests_running") < count:
        assert time.monotonic() < deadline, "the streams never started"
        time.sleep(0.05)


def test_sigterm_with_open_streams_ends_them_and_logs_no_traceback():
    with running_sim(speed=1) as sim, concurrent.futures.ThreadPoolExecutor(4) as pool:
        streams = [pool.submit(_stream_lines, sim.url) for _ in range(4)]
        _wait_running(sim, 4)
        sim.proc.send_signal(signal.SIGTERM)
        assert sim.proc.wait(10) == 0
        for future in streams:
            lines = future.result(10)
            assert lines[-1] == "[DONE]"
            assert json.loads(lines[-2])["choices"][0]["finish_reason"] == "abort"
        log = sim.log_text()
    assert "Shutting down" in log
    assert "Traceback" not in log and "CancelledError" not in log
    assert "Exception in ASGI application" not in log


def test_the_supervisors_double_sigterm_is_a_graceful_stop():
    """The engine TERMs the process group, then each tracked process: two SIGTERMs."""
    with running_sim(speed=1) as sim, concurrent.futures.ThreadPoolExecutor(1) as pool:
        stream = pool.submit(_stream_lines, sim.url)
        _wait_running(sim, 1)
        sim.proc.send_signal(signal.SIGTERM)
        # the second signal must come after the first was handled, or the kernel merges them
        deadline = time.monotonic() + 10
        while "Shutting down" not in sim.log_text():
            assert time.monotonic() < deadline, "the first SIGTERM was not handled"
            time.sleep(0.01)
        sim.proc.send_signal(signal.SIGTERM)
        assert sim.proc.wait(10) == 0
        assert stream.result(10)[-1] == "[DONE]"
        log = sim.log_text()
    assert "Application shutdown complete." in log
    assert "Traceback" not in log and "CancelledError" not in log


def test_a_second_ctrl_c_forces_the_exit_without_a_traceback():
    with running_sim(speed=1) as sim, concurrent.futures.ThreadPoolExecutor(1) as pool:
        stream = pool.submit(_stream_lines, sim.url)
        _wait_running(sim, 1)
        sim.proc.send_signal(signal.SIGINT)
        sim.proc.send_signal(signal.SIGINT)
        sim.proc.wait(10)
        stream.result(10)
        log = sim.log_text()
    assert "Traceback" not in log and "CancelledError" not in log
