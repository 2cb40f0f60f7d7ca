"""Warmup and the greedy check honour server.stall_timeout_s (issue 25, item 9): a server
that stalls with /health 200 ends the wait with the reason, instead of holding it for the
bench's cell_timeout_s (30 min by default) and then being measured."""

from __future__ import annotations

import re
from pathlib import Path

from dspark_tui.engine.run.runner import Runner, prepare_run
from dspark_tui.model import load_plan
from tests.engine.helpers import Recorder, sim_plan_text

STALLED = (r"server failed to start: server stalled: no token counted for \ds with requests in "
           r"flight \(server.stall_timeout_s = 1.5\) during {}")


async def _run(tmp_path: Path, text: str) -> tuple[Runner, Recorder, str]:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    plan = load_plan(path)
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    recorder = Recorder()
    runner.subscribe(recorder)
    return runner, recorder, await runner.run()


async def test_a_server_that_stalls_during_warmup_is_not_waited_on_nor_measured(
        tmp_path: Path, port: int):
    text = sim_plan_text(port, "--stall-after-requests", "2", arms=(3,), warmup=6, speed=5,
                         stall_timeout_s=1.5)
    runner, events, status = await _run(tmp_path, text)
    assert status == "failed"
    cells, _ = runner.store.load_cells()
    assert cells and all(not c.ok for c in cells.values())
    assert all(re.fullmatch(STALLED.format("warmup"), c.error or "") for c in cells.values())
    assert not [n for n in events.of("notice") if "warmup incomplete" in n.message]


async def test_a_server_that_stalls_during_the_greedy_check_ends_it_with_the_reason(
        tmp_path: Path, port: int):
    text = sim_plan_text(port, "--stall-after-requests", "3", arms=(3,), warmup=0, speed=5,
                         stall_timeout_s=1.5).replace('driver = "native"',
                                                      'driver = "native"\ncheck_greedy = 4')
    runner, _, status = await _run(tmp_path, text)
    assert status == "failed"
    cells, _ = runner.store.load_cells()
    assert cells and all(re.fullmatch(STALLED.format("the greedy check"), c.error or "")
                         for c in cells.values())
