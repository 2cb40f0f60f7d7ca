"""How long a plan against this simulator takes on the wall clock, from the model itself
(`virtual.simulate_closed_loop`): cell durations in model time divided by the plan's --speed,
plus each server start's --startup-delay. Rough: HTTP, warmup and scraping are not modelled."""

from __future__ import annotations

from dataclasses import dataclass

from dspark_tui.model import Plan
from dspark_tui.sim.cli import SimUsageError, build_parser, serve_config
from dspark_tui.sim.config import ServeConfig
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop

SEED = 0  # one fixed draw of request lengths: an estimate, not a measurement


@dataclass(frozen=True)
class WallEstimate:
    round_s: float  # one planned round: every arm's session over the whole grid
    cell_s: dict[tuple[str, str, int], float]  # (arm, scenario, concurrency) -> one measurement
    startup_s: float  # one server start (the simulator's --startup-delay)


def sim_config(plan: Plan, arm_name: str) -> ServeConfig | None:
    """The simulator configuration an arm's command asks for; None if it does not run the sim."""
    argv = plan.server_argv(plan.arm(arm_name))
    if "dspark_tui.sim" not in argv or "serve" not in argv:
        return None
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv[argv.index("serve"):])
    try:
        return serve_config(args, unknown, parser)
    except SimUsageError:
        return None


def estimate_plan(plan: Plan) -> WallEstimate | None:
    configs = {arm.name: sim_config(plan, arm.name) for arm in plan.arms}
    if any(config is None for config in configs.values()):
        return None
    cell_s: dict[tuple[str, str, int], float] = {}
    for cell in plan.cells():
        config = configs[cell.key.arm]
        assert config is not None
        lengths = sample_lengths(cell.input_len, cell.output_len, cell.num_prompts,
                                 cell.range_ratio, SEED)
        profile = config.content.profiles.get(cell.category) if cell.category else None
        result = simulate_closed_loop(config.engine, lengths, cell.key.concurrency, SEED,
                                      acceptance=profile)
        cell_s[(cell.key.arm, cell.key.scenario, cell.key.concurrency)] = result.duration_s / config.speed
    startup = max(config.startup_delay_s for config in configs.values() if config is not None)
    round_s = len(plan.arms) * startup + plan.bench.repeats * sum(cell_s.values())
    return WallEstimate(round_s=round_s, cell_s=cell_s, startup_s=startup)
