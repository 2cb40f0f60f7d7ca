"""A first start (no run in the results folder, only the shipped sample): History's title says
how to start one, within 80 columns; once a run is there it says no more (issue 23)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.tui.helpers import history_listed, make_app, screen_text, wait_until
from tests.tui.test_snapshots import RECORDED

HINT = "no runs of yours yet: n starts one (try demo)"


async def test_a_fresh_history_says_how_to_start_a_run(tmp_path: Path):
    app = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: HINT in screen_text(app), timeout=30, what="the hint")
        assert screen_text(app).splitlines()[0].startswith(f" History — {HINT}")


async def test_history_with_a_run_of_ones_own_gives_no_hint(tmp_path: Path):
    shutil.copytree(RECORDED, tmp_path / "results" / "demo_run")
    app = make_app(tmp_path, settings={"language": "en"})
    async with app.run_test(size=(80, 24)) as pilot:
        await history_listed(pilot)
        await pilot.pause()
        assert HINT not in screen_text(app)
