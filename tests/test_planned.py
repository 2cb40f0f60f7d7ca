"""Planned measurements per cell: one fold (model/planned.py) of the plan and the RoundPlanned
events, which the runner's schedule, RunState, the report's counting and the disk budget share."""

from __future__ import annotations

from pathlib import Path

import pytest

from dspark_tui.analysis.counting import planned_per_cell
from dspark_tui.analysis.layout import layout_of
from dspark_tui.engine.checks.disk_budget import expected_output_bytes, planned_measurements
from dspark_tui.engine.schedule import Schedule, rounds_from_events
from dspark_tui.model import CellKey, parse_plan
from dspark_tui.model import events as ev
from dspark_tui.model.planned import PlannedMeasurements, RoundPlan, adaptive_round, rounds_of
from dspark_tui.model.run_state import RunState
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from tests.report.builders import plan_text

ARMS = {"st=3": 3, "st=5": 5}
SCENARIOS = {"chat": (128, 64, [1, 8, 64])}


def _plan():
    text = plan_text(ARMS, SCENARIOS).replace("[bench]\n", "[bench]\nrounds = 2\nrepeats = 2\n")
    return parse_plan(text)


def test_every_reader_counts_the_same_planned_measurements(tmp_path: Path):
    plan = _plan()
    adaptive = adaptive_round(plan, 3, [("chat", 8)]).event()
    announced = [*(rnd.event() for rnd in rounds_of(plan, [])), adaptive,
                 adaptive]  # a resume announces the round again
    fold = PlannedMeasurements.of_rounds(rounds_of(plan, announced))
    keys = [CellKey(arm=a, scenario="chat", concurrency=c) for a in ARMS for c in (1, 8, 64)]
    expected = {key: 6 if key.concurrency == 8 else 4 for key in keys}
    assert {key: fold.count(key) for key in keys} == expected
    assert fold.total == sum(expected.values()) == 28

    schedule = Schedule(plan, rounds_from_events(plan, announced), set())
    assert schedule.total == fold.total
    assert {key: sum(1 for (k, _, _) in schedule.state if k == key) for key in keys} == expected

    state = RunState()
    state.apply_all(announced)
    assert state.schedule.total == fold.total
    assert {key: state.schedule.planned_for(key) for key in keys} == expected

    store = RunStore(tmp_path)
    store.write_manifest(manifest_for_plan(plan, plan_source="t"))
    for event in announced:
        store.append_event(event)
    planned = planned_per_cell(load_run(tmp_path))
    assert {key: planned(key) for key in keys} == expected
    assert store.read_round_plans() == [e for e in store.read_events() if isinstance(e, ev.RoundPlanned)]

    before_adaptive = PlannedMeasurements.of_rounds(rounds_of(plan, []))
    assert planned_measurements(plan) == before_adaptive.total == 24
    specs = {spec.key: spec for spec in plan.cells()}
    assert expected_output_bytes(plan) == expected_output_bytes(
        plan, [specs[k] for k in keys for _ in range(4)], len(ARMS) * 2)


def test_a_round_s_slots_run_arm_by_arm_pass_by_pass():
    rnd = RoundPlan(2, ("b", "a"), (("chat", 1), ("chat", 8)), "planned", 2)
    order = [(key.arm, key.concurrency, slot) for key, slot in rnd.slots()]
    assert order == [("b", 1, (2, 1)), ("b", 8, (2, 1)), ("b", 1, (2, 2)), ("b", 8, (2, 2)),
                     ("a", 1, (2, 1)), ("a", 8, (2, 1)), ("a", 1, (2, 2)), ("a", 8, (2, 2))]
    assert RoundPlan.of_event(rnd.event()) == rnd


def test_a_run_that_announced_no_rounds_is_one_measurement_a_cell(tmp_path: Path):
    store = RunStore(tmp_path)
    store.write_manifest(manifest_for_plan(_plan(), plan_source="t"))
    planned = planned_per_cell(load_run(tmp_path))
    assert planned(CellKey(arm="st=3", scenario="chat", concurrency=1)) == 1


def _limited_plan():
    """st=5 measures only chat c = 8 (`cells`): its other cells are not planned."""
    text = plan_text(ARMS, SCENARIOS).replace("[bench]\n", "[bench]\nrounds = 2\nrepeats = 2\n")
    return parse_plan(text.replace('name = "st=5"', 'name = "st=5"\ncells = { chat = [8] }'))


def test_an_arm_with_cells_plans_only_those_everywhere_it_is_counted(tmp_path: Path):
    plan = _limited_plan()
    assert plan.arm("st=5").cells == {"chat": [8]}
    assert [(c.key.arm, c.key.concurrency) for c in plan.cells()] == [
        ("st=3", 1), ("st=3", 8), ("st=3", 64), ("st=5", 8)]
    adaptive = adaptive_round(plan, 3, [("chat", 1), ("chat", 8)]).event()
    announced = [*(rnd.event() for rnd in rounds_of(plan, [])), adaptive]
    fold = PlannedMeasurements.of_rounds(rounds_of(plan, announced))
    expected = {CellKey(arm="st=3", scenario="chat", concurrency=1): 6,
                CellKey(arm="st=3", scenario="chat", concurrency=8): 6,
                CellKey(arm="st=3", scenario="chat", concurrency=64): 4,
                CellKey(arm="st=5", scenario="chat", concurrency=8): 6}
    assert {key: fold.count(key) for key in fold.slots} == expected
    assert fold.total == 22 and planned_measurements(plan) == 16

    schedule = Schedule(plan, rounds_from_events(plan, announced), set())
    assert schedule.total == fold.total
    assert [c.key.concurrency for c, _ in schedule.todo(3, "st=5")] == [8, 8]
    state = RunState()
    state.apply_all(announced)  # a watcher knows from the events alone
    assert state.schedule.total == fold.total
    assert RoundPlan.of_event(adaptive) == adaptive_round(plan, 3, [("chat", 1), ("chat", 8)])

    store = RunStore(tmp_path)
    store.write_manifest(manifest_for_plan(plan, plan_source="t"))
    for event in announced:
        store.append_event(event)
    run = load_run(tmp_path)
    planned = planned_per_cell(run)
    assert {key: planned(key) for key in expected} == expected
    assert layout_of(run).expected == list(expected)


def test_scenarios_narrowing_keeps_an_arm_s_cells_in_the_scenarios_kept():
    from dspark_tui.engine.checks.setup import filter_plan
    from dspark_tui.model import UserError

    text = plan_text(ARMS, {"chat": (128, 64, [1, 8]), "rag": (512, 64, [1, 8])})
    plan = parse_plan(text.replace('name = "st=5"', 'name = "st=5"\ncells = { chat = [8], rag = [1] }'))
    assert filter_plan(plan, None, ["rag"]).arm("st=5").cells == {"rag": [1]}
    only_chat = parse_plan(text.replace('name = "st=5"', 'name = "st=5"\ncells = { chat = [8] }'))
    with pytest.raises(UserError, match=r"arm 'st=5'.*measures only cells of scenarios left out"):
        filter_plan(only_chat, None, ["rag"])
