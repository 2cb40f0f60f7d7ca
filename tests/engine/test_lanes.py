"""Lanes (engine/run/lanes.py): which round a lane takes and where its sessions go, without a
server — the rules rounds in parallel rest on (docs/launchers.md)."""

from __future__ import annotations

from dspark_tui.engine.run.lanes import Lanes
from dspark_tui.engine.schedule import Schedule, planned_rounds
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.model import parse_plan
from tests.engine.helpers import sim_plan_text


def _schedule(rounds: int, parallel: int = 2) -> Schedule:
    plan = parse_plan(sim_plan_text(8000, rounds=rounds, parallel=parallel, launcher='"slurm"'))
    return Schedule(plan, planned_rounds(plan), done=set())


def test_a_lane_on_its_rounds_node_avoids_nothing_and_the_others_keep_off_it():
    lanes, schedule = Lanes(2), _schedule(2)
    one, two = lanes.lanes
    assert lanes.claim(one, schedule).round == 1 and lanes.claim(two, schedule).round == 2
    assert lanes.placement(one) == Placement()  # nothing held yet
    one.locating = lambda: "node07"  # its first server was located, not yet ready
    assert lanes.placement(two) == Placement(avoid=("node07",))
    lanes.placed(one, "node07")
    assert lanes.placement(one) == Placement(node="node07")  # never --nodelist=X --exclude=X


def test_a_round_whose_node_another_lane_holds_waits_for_a_later_claim():
    """Resumed rounds 1 and 3 both ran on node07: lane 2 must not be told node07 and to avoid
    node07 at once (a request no scheduler grants); it takes round 2 and round 3 comes later."""
    lanes = Lanes(2, known={1: "node07", 3: "node07", 2: "node08"})
    schedule = _schedule(4)
    one, two = lanes.lanes
    assert lanes.claim(one, schedule).round == 1 and one.node == "node07"
    second = lanes.claim(two, schedule)
    assert second.round == 2 and lanes.placement(two) == Placement(node="node08")
    two.node = None  # lane 2 off node08 (its round done) and lane 1 on round 4's node elsewhere
    lanes.release(one)
    assert lanes.claim(one, schedule).round == 4  # the other arm order first (round 1 was A B)
    lanes.release(one)
    assert lanes.claim(one, schedule).round == 3 and one.node == "node07"  # node07 free again


def test_a_lane_takes_the_other_arm_order_next_so_a_node_serves_both():
    lanes, schedule = Lanes(2), _schedule(6, parallel=2)
    one, two = lanes.lanes
    assert [lanes.claim(one, schedule).round, lanes.claim(two, schedule).round] == [1, 2]
    lanes.release(two)
    assert lanes.claim(two, schedule).round == 3  # after B A (round 2): A B
    lanes.release(one)
    assert lanes.claim(one, schedule).round == 4  # after A B (round 1): B A, not round 5


def test_one_lane_runs_the_rounds_in_order():
    lanes, schedule = Lanes(1), _schedule(4, parallel=1)
    (lane,) = lanes.lanes
    taken = []
    while (rnd := lanes.claim(lane, schedule)) is not None:
        taken.append(rnd.round)
        lanes.release(lane)
    assert taken == [1, 2, 3, 4]


def test_a_start_that_fails_on_the_rounds_node_moves_the_round_off_it_once():
    lanes, schedule = Lanes(2, known={1: "node07"}), _schedule(2)
    one = lanes.lanes[0]
    lanes.claim(one, schedule)
    assert lanes.move_off(one) and lanes.placement(one) == Placement()
    lanes.placed(one, "node09")
    assert not lanes.move_off(one)  # once a round: a second failure fails its cells
