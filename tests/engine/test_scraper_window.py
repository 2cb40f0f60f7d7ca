"""Inside a cell the scraper reads the running batch every 0.25 s (quietly: the events keep the
plan's interval), so a short cell's steady state is seen (issue 21: at 1 s a c=8 cell was read
twice and its batch taken as 1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.engine.servers.scraper import WINDOW_SAMPLE_S, MetricsScraper
from dspark_tui.model import BenchConfig, CellKey, CellSpec
from dspark_tui.model.events import MetricsSample
from tests.simulator import running_sim


async def test_a_short_cell_is_read_every_quarter_second_and_its_batch_holds(tmp_path: Path):
    key = CellKey(arm="a", scenario="s", concurrency=8)
    cell = CellSpec(key=key, input_len=64, output_len=160, range_ratio=1.0, num_prompts=32)
    events: list[object] = []
    with running_sim(speed=1) as sim:
        ctx = DriverContext(base_url=sim.url, host="127.0.0.1", port=int(sim.url.rsplit(":", 1)[1]),
                            served_model_name="test-model", model_path="test-model",
                            bench=BenchConfig(driver="native", seed=1, cell_timeout_s=60),
                            raw_dir=tmp_path / "raw")
        scraper = MetricsScraper(sim.url, "a", interval_s=1.0, emit=events.append)
        await scraper.start()
        try:
            await scraper.begin_window(key)
            loop = asyncio.get_running_loop()
            started = loop.time()
            await NativeDriver().run(cell, ctx, lambda p: None)
            seconds = loop.time() - started
            summary, window = await scraper.end_window()
        finally:
            await scraper.stop()
    assert seconds >= 1.0, "the cell must outlast one plan interval for the test to mean anything"
    readings = summary.running_samples
    assert readings is not None and readings >= seconds / WINDOW_SAMPLE_S * 0.6
    assert summary.running_steady is not None and summary.running_steady >= 6  # c=8, not 1
    # The events keep the plan's 1 s pace: the window's begin and end, one a second between.
    emitted = [e for e in events if isinstance(e, MetricsSample) and e.key == key]
    assert len(emitted) == len(window) <= seconds / 1.0 + 3
    assert len(emitted) < readings
