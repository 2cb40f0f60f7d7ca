"""A run whose server never started: its report says so, not that /metrics was not scraped."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.engine.run.runner import Runner, prepare_run
from dspark_tui.model import load_plan
from tests.engine.helpers import write_sim_plan


async def test_the_report_of_a_failed_start_says_the_server_did_not_start(tmp_path: Path, port: int):
    plan = load_plan(write_sim_plan(tmp_path, port, "--fail-start", arms=(3,)))
    store = prepare_run(plan, tmp_path / "results")
    assert await Runner(plan, store, gpu=None, charts=False).run() == "failed"
    en = (store.path / "report.en.md").read_text(encoding="utf-8")
    zh = (store.path / "report.md").read_text(encoding="utf-8")
    assert "- Server metrics: none (the server did not start: server exited with code" in en
    assert "- 服务端指标：无（服务没有启动：server exited with code" in zh
    for text in (en, zh):
        assert "/metrics" not in text.split("\n---\n")[1]  # the header blames no scraping
    assert "Re-run with dspark-tui scraping" not in en
    assert "- Cells: incomplete — 0 ok, " in en
