"""`plan check`'s cost lines: cell runs and server starts as planned and at most, and the rough
wall time a plan against the simulator takes."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.engine.schedule import plan_cost
from dspark_tui.model import load_plan, parse_plan
from dspark_tui.sim.estimate import estimate_plan
from tests.cli import run_cli_here
from tests.engine.helpers import sim_plan_text, write_sim_plan

TWO_CELLS = ('[[scenarios]]\nname = "chat"\ninput_len = 64\noutput_len = 32\n'
             'concurrencies = [1, 4]\nnum_prompts = 4\n')


def test_cost_counts_every_arm_cell_repeat_and_round_and_the_adaptive_most(tmp_path: Path):
    plan = load_plan(write_sim_plan(tmp_path, 8000, cells=TWO_CELLS, rounds=2, repeats=3,
                                    adaptive_rounds=2))
    cost = plan_cost(plan)
    # 2 arms x 2 cells x 3 repeats a round; 2 rounds planned, 4 at most.
    assert (cost.measurements, cost.measurements_at_most) == (24, 48)
    assert (cost.server_starts, cost.server_starts_at_most) == (4, 8)


def test_the_wall_estimate_follows_the_simulators_speed_and_startup_delay():
    slow = estimate_plan(parse_plan(sim_plan_text(8000, "--startup-delay", "2", speed=1,
                                                  cells=TWO_CELLS)))
    fast = estimate_plan(parse_plan(sim_plan_text(8000, "--startup-delay", "2", speed=10,
                                                  cells=TWO_CELLS)))
    assert slow is not None and fast is not None
    assert slow.startup_s == fast.startup_s == 2.0
    assert set(slow.cell_s) == {(f"st={k}", "chat", c) for k in (3, 5) for c in (1, 4)}
    for cell, seconds in slow.cell_s.items():
        assert seconds > 0 and abs(fast.cell_s[cell] * 10 - seconds) < 1e-9
    assert slow.round_s == 2 * 2.0 + sum(slow.cell_s.values())


def test_a_plan_for_a_real_server_gets_no_wall_estimate():
    text = sim_plan_text(8000, cells=TWO_CELLS).replace('"-m", "dspark_tui.sim", "serve"',
                                                        '"-m", "vllm.entrypoints.openai.api_server"')
    assert estimate_plan(parse_plan(text)) is None


def test_plan_check_prints_the_cost_after_the_grid(tmp_path: Path):
    plan = write_sim_plan(tmp_path, 8000, "--startup-delay", "1", cells=TWO_CELLS, rounds=2,
                          adaptive_rounds=1)
    done = run_cli_here("plan", "check", str(plan))
    assert done.returncode == 0, done.stderr
    tail = done.stdout.splitlines()[-5:]
    assert tail[0] == "4 cells"
    assert tail[1] == "rounds 2 x repeats 1, adaptive budget 1 extra round(s) for the cells still unsure"
    assert tail[2] == "cell runs: 8 planned, at most 12"
    assert tail[3].startswith("server starts: 4 planned, at most 6")
    assert tail[4].startswith("wall time (rough, from the simulator's model; no HTTP or warmup): about ")


def test_rounds_in_parallel_shorten_the_planned_wall_time_not_the_adaptive_rounds(capsys):
    """parallel = 2: four planned rounds take two rounds' time; adaptive rounds, one at a time,
    each one more."""
    from dspark_tui.commands import _print_cost

    lines = {}
    for parallel in (1, 2):
        plan = parse_plan(sim_plan_text(8000, "--startup-delay", "30", cells=TWO_CELLS, rounds=4,
                                        adaptive_rounds=2, parallel=parallel, launcher='"slurm"'))
        _print_cost(plan)
        lines[parallel] = capsys.readouterr().out.splitlines()
        estimate = estimate_plan(plan)
    assert estimate is not None
    assert lines[2][1] == ("parallel: up to 2 planned rounds at once, each on a node of its own "
                           "running every arm in turn; adaptive rounds one at a time")
    assert not any(line.startswith("parallel:") for line in lines[1])

    def seconds(text: str) -> int:
        minutes, _, secs = text.removesuffix("s").partition("m ")
        return int(minutes) * 60 + int(secs) if secs else int(minutes)

    def wall(line: str) -> tuple[int, int]:
        planned, most = line.split("about ")[1].split(" planned, at most ")
        return seconds(planned), seconds(most)

    assert wall(lines[1][-1]) == (round(4 * estimate.round_s), round(6 * estimate.round_s))
    assert wall(lines[2][-1]) == (round(2 * estimate.round_s), round(4 * estimate.round_s))
