"""The schedule and the steering state on their own: pure, fast, no server."""

from __future__ import annotations

import asyncio

from dspark_tui.engine.run.steering import Steering
from dspark_tui.engine.schedule import (
    Schedule,
    SlotState,
    adaptive_round,
    planned_rounds,
    rounds_from_events,
)
from dspark_tui.model import CellKey, parse_plan
from dspark_tui.model.events import RoundPlanned
from tests.engine.helpers import sim_plan_text

GRID = ('[[scenarios]]\nname = "chat"\ninput_len = 64\noutput_len = 32\n'
        'concurrencies = [1, 4]\nnum_prompts = 4\n')


def _plan(**bench: int):
    return parse_plan(sim_plan_text(8000, arms=(3, 4, 5), cells=GRID, **bench))


def _key(arm: str, c: int) -> CellKey:
    return CellKey(arm=arm, scenario="chat", concurrency=c)


def test_rounds_alternate_the_arm_order_and_repeat_major_passes():
    plan = _plan(rounds=3, repeats=2)
    assert [r.arms for r in planned_rounds(plan)] == [
        ("st=3", "st=4", "st=5"), ("st=5", "st=4", "st=3"), ("st=3", "st=4", "st=5")]
    schedule = Schedule(plan, planned_rounds(plan), done=set())
    assert schedule.total == 3 * 2 * 2 * 3
    todo = [(cell.key.concurrency, repeat) for cell, repeat in schedule.todo(2, "st=4")]
    assert todo == [(1, 1), (4, 1), (1, 2), (4, 2)]
    assert schedule.next_session()[1] == "st=3"  # type: ignore[index]


def test_done_slots_failures_and_retry_drive_what_comes_next():
    plan = _plan(rounds=2)
    schedule = Schedule(plan, planned_rounds(plan), done={(_key("st=3", 1), 1, 1)})
    assert [c.key.concurrency for c, _ in schedule.todo(1, "st=3")] == [4]
    schedule.mark((_key("st=3", 4), 1, 1), SlotState.FAILED)
    assert schedule.todo(1, "st=3") == []
    assert schedule.next_session()[1] == "st=4"  # type: ignore[index]
    assert schedule.cell_states()[_key("st=3", 4)] == SlotState.FAILED
    assert schedule.retry() == (1, 0)
    assert schedule.next_session()[1] == "st=3"  # type: ignore[index]
    schedule.mark((_key("st=3", 4), 1, 1), SlotState.SKIPPED)  # the user skipped it: not failed
    assert schedule.cell_states()[_key("st=3", 4)] == SlotState.SKIPPED
    assert schedule.retry() == (0, 1)
    assert schedule.todo(1, "st=3")[0][0].key == _key("st=3", 4)


def test_adaptive_rounds_keep_plan_order_and_come_back_from_events():
    plan = _plan(rounds=2, adaptive_rounds=2)
    extra = adaptive_round(plan, 3, [("chat", 4), ("nope", 9)])
    assert extra.cells == (("chat", 4),) and extra.arms == ("st=3", "st=4", "st=5")
    events = [r.event() for r in planned_rounds(plan)] + [extra.event()]
    events.append(RoundPlanned(round=7, arms=["st=3"], cells=[("chat", 1)], reason="adaptive"))
    rebuilt = rounds_from_events(plan, events)
    assert rebuilt[-1] == extra and len(rebuilt) == 3  # a round out of sequence is not trusted
    schedule = Schedule(plan, rebuilt, done=set())
    assert [c.key.concurrency for c, _ in schedule.todo(3, "st=5")] == [4]
    assert schedule.extra_rounds == 1


async def test_a_skip_cuts_short_the_measurements_in_flight_not_later_ones():
    """Rounds in parallel: two measurements in flight, one skip ends both; one begun after the
    skip runs on (the old single flag was reset by any new start, losing the other's skip)."""
    steering = Steering()
    first, second = steering.begin_measurement(), steering.begin_measurement()
    waits = [asyncio.create_task(steering.until_interrupted(m)) for m in (first, second)]
    assert steering.request_skip() == 2
    steering.end_measurement()
    later = asyncio.create_task(steering.until_interrupted(steering.begin_measurement()))
    await asyncio.wait_for(asyncio.gather(*waits), 1)
    await asyncio.sleep(0.01)
    assert not later.done()
    steering.stop("done")
    await asyncio.wait_for(later, 1)


async def test_steering_pause_skip_and_stop():
    steering = Steering()
    assert not steering.request_skip()  # nothing in flight
    mark = steering.begin_measurement()
    interrupted = asyncio.create_task(steering.until_interrupted(mark))
    steering.pause()
    await asyncio.sleep(0)
    assert not interrupted.done() and steering.mode == "paused"
    assert steering.request_skip() == 1
    await asyncio.wait_for(interrupted, 1)
    steering.end_measurement()
    unpaused = asyncio.create_task(steering.until_not_paused())
    steering.stop("first")
    steering.stop("second")
    await asyncio.wait_for(unpaused, 1)
    assert steering.stopping and steering.stop_reason == "first"
