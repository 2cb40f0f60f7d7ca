"""Rounds in parallel on the run screen (issue 15 item 3): the header shows a line a lane — its
node, round, arm, server state and the cell it measures — and the cell panel counts the others
in flight; at 80x24."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.model.events import CellProgress, CellStarted, ServerStateChanged, SessionStarted
from dspark_tui.plans import resolve_plan
from tests.tui.eventlog import T0, append_events, write_run
from tests.tui.helpers import replayed, until_shown

CELLS = [cell.key for cell in resolve_plan("demo")[0].cells()]


async def test_the_header_shows_every_node_with_its_round_arm_and_cell(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", live=True, stop_after=0)
    first, other = CELLS[0], CELLS[-1]  # st=3 chat_short c1 / st=5 stress_standard c128
    append_events(run_dir, [
        *(event for lane, arm, node in ((1, "st=3", "node07"), (2, "st=5", "node08"))
          for event in (ServerStateChanged(t=T0 + 1, arm=arm, state="ready", lane=lane, round=lane),
                        SessionStarted(t=T0 + 1, arm=arm, round=lane, session=f"s{lane}",
                                       node=node, lane=lane))),
        CellStarted(t=T0 + 2, key=first, num_prompts=32, index=1, total=20, round=1, lane=1),
        CellStarted(t=T0 + 3, key=other, num_prompts=1024, index=2, total=20, round=2, lane=2),
        CellProgress(t=T0 + 4, key=first, completed=12, total=32, lane=1),
        CellProgress(t=T0 + 4, key=other, completed=300, total=1024, lane=2),
    ])
    async with replayed(tmp_path, run_dir, "lane 2", lang="en") as (pilot, app, _):
        text = await until_shown(pilot, app, "stress_standard c128 300/1024")
        lines = text.splitlines()
        assert any("lane 1 · node07 · r1 · st=3: ready  chat_short c1 12/32" in line
                   for line in lines), text
        assert any("lane 2 · node08 · r2 · st=5: ready  stress_standard c128 300/1024" in line
                   for line in lines), text
        # The panel shows the cell that started last and counts the other one.
        assert "st=5 · stress_standard · c128 r2 p1   +1 in flight" in text
