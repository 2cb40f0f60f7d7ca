"""A SIGTERM with streams open stops the simulator cleanly: streams end, no traceback in the log."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import time

import httpx

from tests.sim._client import metric_sum
from tests.simulator import running_sim


def _stream_lines(url: str) -> list[str]:
    body = {"prompt": "x", "max_tokens": 5000, "ignore_eos": True, "stream": True}
    lines = []
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=20) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                lines.append(line[len("data: "):])
    return lines


def test_sigterm_with_open_streams_ends_them_and_logs_no_traceback():
    with running_sim(speed=1) as sim, concurrent.futures.ThreadPoolExecutor(4) as pool:
        streams = [pool.submit(_stream_lines, sim.url) for _ in range(4)]
        deadline = time.monotonic() + 10
        while metric_sum(sim.metrics_text(), "vllm:num_requests_running") < 4:
            assert time.monotonic() < deadline, "the streams never started"
            time.sleep(0.05)
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
