"""A SIGTERM with streams open stops the simulator cleanly: streams end, no traceback in the log."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import time
from pathlib import Path

import httpx

from dspark_tui.engine.servers.server import ServerProcess
from dspark_tui.model import Plan
from tests.conftest import free_port
from tests.sim._client import metric_sum
from tests.simulator import RunningSim, running_sim, sim_command


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


async def test_sessions_stopped_by_the_engine_log_no_traceback(tmp_path: Path):
    """The stop every run does between sessions: ServerProcess TERMs the group, then each
    tracked process, with the scraper's and the client's keep-alive connections still open."""
    for session in range(1, 5):
        port = free_port()
        plan = Plan.model_validate({
            "name": "stop", "model": "m",
            "server": {"command": sim_command(port, "--startup-delay", "0", model="m"), "port": port,
                       "startup_timeout_s": 20, "stop_timeout_s": 10},
            "arms": [{"name": "a", "vars": {}}],
            "scenarios": [{"name": "s", "input_len": 8, "output_len": 4, "concurrencies": [1]}],
        })
        log_path = tmp_path / "logs" / f"server-a-s{session}.log"
        server = ServerProcess(plan, plan.arms[0], log_path=log_path, run_dir=tmp_path,
                               emit=lambda event: None, session=f"s{session}")
        await server.start()
        try:
            async with httpx.AsyncClient(base_url=server.base_url) as client:
                await client.get("/metrics")
                body = {"model": "m", "prompt": "x", "max_tokens": 8}
                assert (await client.post("/v1/completions", json=body)).status_code == 200
                if session % 2 == 0:  # the keep-alive connection is still open at the stop
                    await server.stop()
        finally:
            await server.stop()
        log = log_path.read_text()
        assert "Application shutdown complete." in log, log
        assert "Traceback" not in log and "CancelledError" not in log, log
