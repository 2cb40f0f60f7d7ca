"""A run that measures each cell in rounds, replayed in the app: the screen reads the reducer's
measurement counts and names the running measurement's round and repeat."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.model import CellKey, CellResult, ClientMetrics
from dspark_tui.model.events import (
    CellFinished,
    CellStarted,
    Event,
    RoundPlanned,
    RunStarted,
    ServerStateChanged,
    SessionStarted,
)
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, manifest_for_plan
from tests.tui.eventlog import T0, append_events
from tests.tui.helpers import make_app, screen_text
from tests.tui.test_live import run_screen, wait_for

ARMS = ["st=3", "st=5"]
CELLS = [("chat_short", 1), ("chat_short", 16)]


def _events(run_dir: Path) -> list[Event]:
    """Round 1 measured by both arms; round 2 (arms in the other order) begun with st=5."""
    events: list[Event] = [
        RunStarted(t=T0, run_dir=str(run_dir), name="demo", arms=ARMS, total_cells=4),
        RoundPlanned(t=T0, round=1, arms=ARMS, cells=CELLS),
        RoundPlanned(t=T0, round=2, arms=ARMS[::-1], cells=CELLS),
    ]
    t = T0
    for round_, arms in ((1, ARMS), (2, ARMS[::-1][:1])):
        for arm in arms:
            events += [ServerStateChanged(t=t, arm=arm, state="starting"),
                       ServerStateChanged(t=t + 2, arm=arm, state="ready"),
                       SessionStarted(t=t + 2, arm=arm, round=round_, session=f"{arm}-{round_}")]
            t += 2
            for scenario, concurrency in CELLS:
                key = CellKey(arm=arm, scenario=scenario, concurrency=concurrency)
                events.append(CellStarted(t=t, key=key, num_prompts=8, index=1, total=8,
                                          round=round_))
                t += 4
                if round_ == 2:
                    return events  # mid-measurement
                events.append(CellFinished(t=t, result=CellResult(
                    arm=arm, scenario=scenario, concurrency=concurrency, round=round_,
                    metrics=ClientMetrics(total_throughput=1000.0 * concurrency))))
    return events


async def test_a_replayed_run_of_rounds_shows_measurements_and_the_current_round(tmp_path: Path):
    plan, source = resolve_plan("demo")
    store = RunStore.create(tmp_path / "results", manifest_for_plan(plan, source))
    append_events(store.path, _events(store.path))
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_replay(store.path)
        # wait_for's own patience (45 s): the replay's first draw took over 10 s under load 14
        await wait_for(pilot, lambda: "r2 p1" in screen_text(app))
        screen = run_screen(app)
        state = screen.state
        assert (state.done, state.total) == (4, 8)
        assert state.current is not None and state.current.label == "r2 p1"
        text = screen_text(app)
        assert "st=5 · chat_short · c1 r2 p1" in text
        assert "4/8" in text  # the header counts measurements
