"""/metrics parsing and per-cell summaries, on vLLM 0.33.0's real page and over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import csv
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from dspark_tui.engine.servers.scraper import (
    MetricsScraper,
    MetricsSnapshot,
    parse_metrics,
    summarize_window,
    write_series,
)
from dspark_tui.engine.servers.server import ServerProcess
from dspark_tui.model import CellKey
from dspark_tui.model.events import MetricsSample, Notice
from tests.conftest import FIXTURES
from tests.engine.helpers import fake_server_plan

PAGE = FIXTURES / "vllm_0.33.0_metrics_spec3.txt"


def test_parses_the_real_vllm_page():
    snap = parse_metrics(PAGE.read_text(), t=0.0)
    assert snap.counters["drafts"] == 5704
    assert snap.counters["draft_tokens"] == 17112
    assert snap.counters["accepted_tokens"] == 10616
    assert snap.counters["generation_tokens"] == 16384
    assert snap.counters["prompt_tokens"] == 35467
    assert snap.counters["preemptions"] == 0
    assert snap.per_position == {0: 4518, 1: 3482, 2: 2616}
    assert snap.gauges == {"running": 16, "waiting": 0, "kv_usage": pytest.approx(0.0734)}


def test_summary_is_made_of_counter_deltas_over_the_window():
    end = parse_metrics(PAGE.read_text(), t=10.0)
    start = MetricsSnapshot(t=0.0, counters={k: 0.0 for k in end.counters},
                            per_position={p: 0.0 for p in end.per_position},
                            gauges={"running": 4.0, "waiting": 2.0, "kv_usage": 0.5})
    summary = summarize_window([start, end], gaps=1)
    assert summary.samples == 2 and summary.scrape_gaps == 1 and summary.counter_resets == 0
    assert summary.acceptance_rate == pytest.approx(10616 / 17112)
    assert summary.mean_acceptance_length == pytest.approx(1 + 10616 / 5704)
    assert summary.per_position_acceptance == pytest.approx([4518 / 5704, 3482 / 5704, 2616 / 5704])
    assert summary.generation_tokens == 16384
    assert summary.kv_usage_peak == 0.5
    assert summary.kv_usage_mean == pytest.approx((0.5 + 0.0734) / 2)
    assert summary.running_peak == 16 and summary.running_mean == 10
    assert summary.waiting_peak == 2


def test_a_counter_reset_counts_the_new_value_as_the_delta():
    a = MetricsSnapshot(t=0, counters={"generation_tokens": 1000.0, "drafts": 100.0})
    b = MetricsSnapshot(t=1, counters={"generation_tokens": 1500.0, "drafts": 150.0})
    restarted = MetricsSnapshot(t=2, counters={"generation_tokens": 200.0, "drafts": 20.0})
    summary = summarize_window([a, b, restarted])
    assert summary.counter_resets == 1
    assert summary.generation_tokens == 700
    assert summary.drafts == 70


def test_empty_window_has_no_numbers():
    summary = summarize_window([], gaps=3)
    assert summary.samples == 0 and summary.scrape_gaps == 3
    assert summary.acceptance_rate is None and summary.kv_usage_peak is None


def _server(tmp_path: Path, port: int, *flags: str) -> ServerProcess:
    """The fake server, used as the engine may: `async with` starts it ready and stops it."""
    plan = fake_server_plan(port, *flags)
    return ServerProcess(plan, plan.arms[0], log_path=tmp_path / "server.log", run_dir=tmp_path,
                         emit=lambda e: None)


def _scraper(server: ServerProcess) -> MetricsScraper:
    return MetricsScraper(server.base_url, "a=1", interval_s=0.1, emit=lambda e: None)


async def test_scrapes_a_live_server_and_saves_the_series(tmp_path: Path, port: int):
    key = CellKey(arm="a=1", scenario="s", concurrency=1)
    async with _server(tmp_path, port) as server, _scraper(server) as scraper:
        await scraper.begin_window(key)
        await asyncio.sleep(0.6)
        summary, window = await scraper.end_window()
        idle = scraper.seconds_without_progress()
    assert summary.samples >= 4 and summary.scrape_gaps == 0
    assert summary.generation_tokens is not None and summary.generation_tokens >= 30
    assert summary.running_peak == 1
    assert all(s.key == key for s in window)
    assert any(s.generation_tok_s and s.generation_tok_s > 0 for s in window)
    assert idle is not None and idle < 1.0
    path = tmp_path / "series" / "a_1" / "s__c1.csv"
    write_series(path, window)
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == len(window)
    assert rows[0]["elapsed_s"] == "0.0" and rows[-1]["running"] == "1.0"


async def test_a_dead_endpoint_is_a_gap_not_an_error(port: int):
    samples: list[MetricsSample] = []
    scraper = MetricsScraper(f"http://127.0.0.1:{port}", "a", interval_s=0.1, emit=samples.append)
    await scraper.start()
    await scraper.begin_window(CellKey(arm="a", scenario="s", concurrency=1))
    await asyncio.sleep(0.35)
    summary, window = await scraper.end_window()
    await scraper.stop()
    assert summary.samples == 0 and summary.scrape_gaps >= 3
    assert window and all(s.gap for s in window)
    assert scraper.seconds_without_progress() is None



async def test_scrapes_the_real_vllm_page_over_http(tmp_path: Path, port: int):
    async with (_server(tmp_path, port, "--metrics-file", str(PAGE)) as server,
                _scraper(server) as scraper):
        await scraper.begin_window(CellKey(arm="a=1", scenario="s", concurrency=16))
        await asyncio.sleep(0.3)
        summary, window = await scraper.end_window()
    # A page that does not change: gauges as printed, counters moved by nothing.
    assert summary.kv_usage_peak == pytest.approx(0.0734) and summary.running_mean == 16
    assert summary.drafts == 0 and summary.generation_tokens == 0
    assert summary.mean_acceptance_length is None  # no drafts in the window: unknown, not 1.0
    assert window[-1].kv_usage == pytest.approx(0.0734) and window[-1].generation_tok_s == 0


TWO_ENGINES = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="1",model_name="m"} 2
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1
vllm:num_requests_waiting{engine="1",model_name="m"} 4
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.6
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.8
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.6
vllm:gpu_cache_usage_perc{engine="1",model_name="m"} 0.8
"""


def test_two_engines_sum_requests_but_kv_usage_is_the_fullest_engine():
    snap = parse_metrics(TWO_ENGINES, t=0.0)
    assert snap.gauges["running"] == 5 and snap.gauges["waiting"] == 5
    # Neither summed over engines nor counted twice under the pre-0.10 name: a fraction.
    assert snap.gauges["kv_usage"] == pytest.approx(0.8)


def test_the_old_kv_name_alone_is_read_and_the_new_one_wins_when_both_differ():
    old_only = "\n".join(line for line in TWO_ENGINES.splitlines() if "kv_cache_usage" not in line)
    assert parse_metrics(old_only, t=0.0).gauges["kv_usage"] == pytest.approx(0.8)
    both = TWO_ENGINES.replace('gpu_cache_usage_perc{engine="1",model_name="m"} 0.8',
                               'gpu_cache_usage_perc{engine="1",model_name="m"} 0.95')
    assert parse_metrics(both, t=0.0).gauges["kv_usage"] == pytest.approx(0.8)


def _page(running: int, waiting: int) -> str:
    return (f"vllm:generation_tokens_total{{engine=\"0\"}} 100\n"
            f"vllm:prompt_tokens_total{{engine=\"0\"}} 50\n"
            f"vllm:num_requests_running{{engine=\"0\"}} {running}\n"
            f"vllm:num_requests_waiting{{engine=\"0\"}} {waiting}\n")


@contextlib.asynccontextmanager
async def serving_metrics(port: int, page: Callable[[object], Awaitable[object]]) -> AsyncIterator[str]:
    """An aiohttp server answering /metrics on `port` with `page` (a handler), its url while the
    block runs."""
    from aiohttp import web

    app = web.Application()
    app.router.add_get("/metrics", page)  # type: ignore[arg-type]
    http = web.AppRunner(app, shutdown_timeout=0.1)
    await http.setup()
    await web.TCPSite(http, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await http.cleanup()


async def test_no_stall_verdict_on_a_failed_scrape_or_an_idle_server(port: int):
    """Frozen counters mean a stall only while the latest scrape shows requests in flight."""
    from aiohttp import web

    page = {"status": 200, "text": _page(2, 1)}

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(status=page["status"], text=page["text"])

    async with serving_metrics(port, metrics) as url:
        scraper = MetricsScraper(url, "a", interval_s=60, emit=lambda s: None)
        await scraper.start()  # one scrape now, the next one in a minute: each step is explicit
        try:
            await scraper.scrape_once()
            await asyncio.sleep(0.3)
            await scraper.scrape_once()  # same counters, requests in flight: idle time grows
            idle = scraper.seconds_without_progress()
            assert idle is not None and idle >= 0.3
            page["status"] = 500  # the scrape fails: the progress time is frozen, no verdict
            await scraper.scrape_once()
            assert scraper.seconds_without_progress() is None
            page.update(status=200, text=_page(0, 0))  # an idle server has nothing to progress on
            await scraper.scrape_once()
            assert scraper.seconds_without_progress() is None
            await asyncio.sleep(0.3)
            page["text"] = _page(0, 1)  # a request arrives: the clock starts now, not when the
            await scraper.scrape_once()  # counters last moved before the idle spell
            idle = scraper.seconds_without_progress()
            assert idle is not None and idle < 0.3
            await asyncio.sleep(0.3)
            await scraper.scrape_once()  # still waiting, counters still frozen: that is a stall
            idle = scraper.seconds_without_progress()
            assert idle is not None and idle >= 0.3
        finally:
            await scraper.stop()


@pytest.mark.parametrize(("status", "text", "delay", "reason"), [
    (200, "<html>it works</html>\n", 0.0,
     "has no vLLM metric (no vllm:* counter or gauge on the page)"),
    (200, 'vllm:num_requests_running{engine="0" 3\n', 0.0, "is not a Prometheus page (parse error: "),
    (503, "busy", 0.0, "answered HTTP 503"),
    (200, _page(1, 0), 1.5, "timed out after 0.5s"),
])
async def test_missing_server_evidence_is_told_once_with_its_reason(
        port: int, status: int, text: str, delay: float, reason: str):
    from aiohttp import web

    async def metrics(_request: web.Request) -> web.Response:
        await asyncio.sleep(delay)
        return web.Response(status=status, text=text)

    events: list[object] = []
    async with serving_metrics(port, metrics) as url:
        # A scrape waits at most its interval, between 0.5 s and 2 s: here 0.5 s for the slow page.
        scraper = MetricsScraper(url, "st=3", interval_s=0.5 if delay else 60, emit=events.append)
        await scraper.start()
        try:
            for _ in range(3):
                await scraper.scrape_once()
        finally:
            await scraper.stop()
    notices = [e for e in events if isinstance(e, Notice) and e.level == "warning"]
    assert len(notices) == 1, notices
    message = notices[0].message
    assert message.startswith(f"server evidence incomplete for st=3 (first failure: "
                              f"http://127.0.0.1:{port}/metrics {reason}")
    assert "\n" not in message


async def test_missing_evidence_is_told_once_an_arm_and_counted_at_each_sessions_end(port: int):
    """Three sessions of one arm (rounds), the page failing now and then: one warning, and each
    session with gaps says how many."""
    from aiohttp import web

    failing = {"next": 0}  # how many of the coming scrapes fail

    async def metrics(_request: web.Request) -> web.Response:
        failing["next"] -= 1
        return web.Response(status=503 if failing["next"] >= 0 else 200, text=_page(1, 0))

    events: list[object] = []
    told: set[str] = set()
    async with serving_metrics(port, metrics) as base:
        for fails in (1, 2, 0):
            failing["next"] = fails
            scraper = MetricsScraper(base, "st=3", interval_s=60, emit=events.append, told=told)
            await scraper.start()
            try:  # its own first scrape, then three
                for _ in range(3):
                    await scraper.scrape_once()
            finally:
                await scraper.stop()
    notices = [(e.level, e.message) for e in events if isinstance(e, Notice)]
    url = f"http://127.0.0.1:{port}/metrics"
    assert notices == [
        ("warning", f"server evidence incomplete for st=3 (first failure: {url} answered HTTP "
                    "503); cells without it report server metrics as not measured (told once "
                    "an arm)"),
        ("info", f"st=3: 1 of 4 scrapes of {url} brought no server evidence this session"),
        ("info", f"st=3: 2 of 4 scrapes of {url} brought no server evidence this session"),
    ]


async def test_a_good_page_gives_no_notice(port: int):
    from aiohttp import web

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=_page(1, 0))

    events: list[object] = []
    async with serving_metrics(port, metrics) as url:
        scraper = MetricsScraper(url, "st=3", interval_s=60, emit=events.append)
        await scraper.start()
        try:
            await scraper.scrape_once()
        finally:
            await scraper.stop()
    assert events and not [e for e in events if isinstance(e, Notice)]
