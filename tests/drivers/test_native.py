"""The native driver against the real simulator subprocess: numbers, concurrency, failures."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest

from dspark_tui.engine.datasets.prompts import random_id_prompts
from dspark_tui.engine.drivers import CellError, DriverContext
from dspark_tui.engine.drivers.native import NativeDriver, warmup
from dspark_tui.model import BenchConfig, CellKey, CellSpec
from dspark_tui.model.events import CellProgress
from tests.simulator import running_sim

_RUNNING = re.compile(r"^vllm:num_requests_running\{[^}]*\} ([0-9.e+]+)$", re.M)
_PROMPT_TOKENS = re.compile(r"^vllm:prompt_tokens_total\{[^}]*\} ([0-9.e+]+)$", re.M)


def _ctx(url: str, tmp_path: Path, model: str = "test-model", timeout: float = 60) -> DriverContext:
    port = int(url.rsplit(":", 1)[1])
    return DriverContext(
        base_url=url, host="127.0.0.1", port=port, served_model_name=model, model_path=model,
        bench=BenchConfig(driver="native", seed=11, cell_timeout_s=timeout),
        raw_dir=tmp_path / "run" / "raw" / "st_3",
    )  # fmt: skip


def _cell(concurrency: int, prompts: int, input_len: int = 256, output_len: int = 48,
          ratio: float = 0.5) -> CellSpec:
    return CellSpec(key=CellKey(arm="st=3", scenario="chat_short", concurrency=concurrency),
                    input_len=input_len, output_len=output_len, range_ratio=ratio,
                    num_prompts=prompts)  # fmt: skip


async def _gauge_peak(url: str, stop: asyncio.Event) -> float:
    peak = 0.0
    async with httpx.AsyncClient() as client:
        while not stop.is_set():
            text = (await client.get(url + "/metrics")).text
            peak = max([peak, *(float(v) for v in _RUNNING.findall(text))])
            await asyncio.sleep(0.01)
    return peak


def _counter(url: str, pattern: re.Pattern[str]) -> float:
    return sum(float(v) for v in pattern.findall(httpx.get(url + "/metrics").text))


async def test_cell_numbers_are_exact_and_concurrency_is_respected(tmp_path: Path):
    cell = _cell(concurrency=4, prompts=24)
    expected = random_id_prompts(256, 48, 0.5, 24, seed=11)
    with running_sim(speed=20) as sim:
        ctx = _ctx(sim.url, tmp_path)
        prompt_tokens_before = _counter(sim.url, _PROMPT_TOKENS)
        progress: list[CellProgress] = []
        stop = asyncio.Event()
        watcher = asyncio.create_task(_gauge_peak(sim.url, stop))
        result = await NativeDriver().run(cell, ctx, progress.append)
        stop.set()
        peak = await watcher
        server_prompt_tokens = _counter(sim.url, _PROMPT_TOKENS) - prompt_tokens_before

    m = result.metrics
    assert result.ok and m.completed == 24 and m.failed == 0
    # exact token counts: what we drew is what the server saw and generated (ignore_eos)
    assert m.total_input_tokens == sum(p.input_len for p in expected) == server_prompt_tokens
    assert m.total_output_tokens == sum(p.output_len for p in expected)
    assert m.total_throughput == pytest.approx((m.total_input_tokens + m.total_output_tokens) / m.duration)
    assert m.output_throughput == pytest.approx(m.total_output_tokens / m.duration)
    assert 0 < m.mean_ttft_ms < m.mean_e2e_latency_ms
    assert m.p99_e2e_latency_ms >= m.median_e2e_latency_ms > 0
    assert m.mean_tpot_ms > 0 and m.mean_itl_ms > 0
    assert 1 <= peak <= 4  # the server never ran more than the concurrency
    assert m.concurrency <= 4.0 + 1e-9
    # the raw records: one line a request, in-flight intervals never overlap more than 4
    header, *lines = [json.loads(x) for x in
                      (tmp_path / "run/raw/st_3/chat_short__c4.jsonl").read_text().splitlines()]
    assert header["format"] == "dspark-tui native raw" and header["duration_s"] == m.duration
    assert len(lines) == 24 and all(x["usage_reported"] for x in lines)
    assert [x["output_tokens"] for x in lines] == [p.output_len for p in expected]
    events = sorted([(x["start_s"], 1) for x in lines] + [(x["start_s"] + x["e2e_s"], -1) for x in lines],
                    key=lambda e: (e[0], e[1]))
    in_flight = 0
    for _, step in events:
        in_flight += step
        assert in_flight <= 4
    assert result.provenance.raw_output == "raw/st_3/chat_short__c4.jsonl"
    # live progress: throttled, monotonic, ending complete with rolling percentiles
    assert progress and progress[-1].completed == 24 and progress[-1].ttft_p50_ms is not None
    assert [p.completed for p in progress] == sorted(p.completed for p in progress)
    assert len(progress) <= m.duration * 4 + 2


async def test_a_server_error_on_every_request_is_a_cell_error(tmp_path: Path):
    with running_sim(speed=50) as sim:
        ctx = _ctx(sim.url, tmp_path, model="no-such-model")
        with pytest.raises(CellError) as info:
            await NativeDriver().run(_cell(2, 4), ctx, lambda p: None)
    message = str(info.value)
    assert "every request failed (4)" in message and "HTTP 404" in message and "no-such-model" in message


async def test_no_server_is_a_cell_error_naming_the_connection(tmp_path: Path, port: int):
    ctx = _ctx(f"http://127.0.0.1:{port}", tmp_path)
    with pytest.raises(CellError, match="ConnectError"):
        await NativeDriver().run(_cell(2, 3), ctx, lambda p: None)


async def test_a_crash_mid_cell_counts_failed_requests(tmp_path: Path):
    with running_sim("--crash-after-requests", "5", speed=2) as sim:
        ctx = _ctx(sim.url, tmp_path)
        cell = _cell(2, 12, output_len=64, ratio=1.0)
        result = await NativeDriver().run(cell, ctx, lambda p: None)
    m = result.metrics
    assert 0 < m.completed < 12 and m.failed == 12 - m.completed
    assert any("requests failed" in note for note in result.provenance.notes)


async def test_a_stalled_server_hits_the_cell_timeout(tmp_path: Path):
    with running_sim("--stall-after-requests", "1", speed=50) as sim:
        ctx = _ctx(sim.url, tmp_path, timeout=1.5)
        with pytest.raises(CellError, match=r"timed out after 1.5s .* of 6 requests done"):
            await NativeDriver().run(_cell(2, 6), ctx, lambda p: None)


async def test_cancellation_releases_every_stream(tmp_path: Path):
    with running_sim(speed=2) as sim:
        ctx = _ctx(sim.url, tmp_path)
        cell = _cell(3, 30, output_len=400, ratio=1.0)
        task = asyncio.create_task(NativeDriver().run(cell, ctx, lambda p: None))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if _counter(sim.url, _RUNNING) >= 3:
                break
        assert _counter(sim.url, _RUNNING) >= 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):  # the server sees the disconnects and aborts the requests
            if _counter(sim.url, _RUNNING) == 0:
                break
            await asyncio.sleep(0.05)
        assert _counter(sim.url, _RUNNING) == 0


async def test_warmup_succeeds_and_fails_loudly(tmp_path: Path):
    with running_sim(speed=50) as sim:
        await warmup(_ctx(sim.url, tmp_path), 20)
        with pytest.raises(CellError, match=r"warmup: 3 of 3 requests failed; first: HTTP 404"):
            await warmup(_ctx(sim.url, tmp_path, model="wrong"), 3)


async def test_cell_times_are_local_like_the_runs_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A cell's started_at/finished_at share the zone of run.json's times (results.manifest)."""
    import time

    from dspark_tui.results.manifest import now_iso

    monkeypatch.setenv("TZ", "CST-8")  # POSIX rule, no tzdata needed: UTC+8, no DST
    time.tzset()
    try:
        with running_sim(speed=50) as sim:
            result = await NativeDriver().run(_cell(concurrency=1, prompts=1), _ctx(sim.url, tmp_path),
                                              lambda p: None)
        assert now_iso().endswith("+08:00")
        assert result.provenance.started_at.endswith("+08:00"), result.provenance.started_at
        assert result.provenance.finished_at.endswith("+08:00"), result.provenance.finished_at
        # the raw file is written atomically: the file itself, no temporary left beside it
        assert [p.name for p in (tmp_path / "run/raw/st_3").iterdir()] == ["chat_short__c1.jsonl"]
    finally:
        monkeypatch.undo()
        time.tzset()
