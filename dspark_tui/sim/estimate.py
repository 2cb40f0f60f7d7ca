"""How long a plan against this simulator takes on the wall clock, from the model itself
(`virtual.simulate_closed_loop`): cell durations in model time divided by the plan's --speed,
plus each server start's --startup-delay. Rough: HTTP, warmup and scraping are not modelled."""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
from dataclasses import dataclass

from dspark_tui.model import Arm, Plan, UserError
from dspark_tui.sim.cli import SimUsageError, build_parser, serve_config
from dspark_tui.sim.config import ServeConfig
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")  # as model/plan.py fills them
SEED = 0  # one fixed draw of request lengths: an estimate, not a measurement
# Tokens (prompt and output) one cell's model may step through (256k: ~1 s on a loaded box). A bigger cell
# is modelled over fewer prompts (at least its concurrency) and its time scaled up; one that
# is too big even so, or a plan whose cells together take longer than DEADLINE_S to model, is
# not estimated — `plan check` must answer, whatever the numbers (10**18 tokens, 2**53 prompts).
CELL_TOKENS = 1 << 18
DEADLINE_S = 30.0


class TooLarge(Exception):
    """The plan is too large to model in time; the message says why, in a few words."""


@dataclass(frozen=True)
class WallEstimate:
    round_s: float  # one planned round: every arm's session over the whole grid
    cell_s: dict[tuple[str, str, int], float]  # (arm, scenario, concurrency) -> one measurement
    startup_s: float  # one server start (the simulator's --startup-delay)


class SimFlagError(UserError):
    """An arm's simulator command that the simulator would refuse: one line naming the key."""


def sim_config(plan: Plan, arm_name: str) -> ServeConfig | None:
    """The simulator configuration an arm's command asks for; None if it does not run the sim;
    SimFlagError when the simulator would refuse it (argparse's usage kept off the terminal)."""
    arm = plan.arm(arm_name)
    argv = plan.server_argv(arm)
    if "dspark_tui.sim" not in argv or "serve" not in argv:
        return None
    parser = build_parser()
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            args, unknown = parser.parse_known_args(argv[argv.index("serve"):])
        return serve_config(args, unknown, parser)
    except SystemExit:
        lines = said.getvalue().strip().splitlines() or ["a bad command line"]
        raise SimFlagError(_flag_problem(plan, arm, lines[-1].split(": error: ", 1)[-1])) from None
    except SimUsageError as exc:
        raise SimFlagError(_flag_problem(plan, arm, str(exc))) from None


def _flag_problem(plan: Plan, arm: Arm, message: str) -> str:
    """`arms["st=3"].vars.spec_tokens: …` when the refused flag's value comes from an arm's
    variable, else `server.command: …`."""
    key = "server.command"
    flag = re.search(r"--[A-Za-z0-9][A-Za-z0-9-]*", message)
    template = plan.server.command
    if flag:
        for i, part in enumerate(template):
            if part == flag.group() or part.startswith(flag.group() + "="):
                value = part if "=" in part else (template[i + 1] if i + 1 < len(template) else "")
                names = [n for n in _PLACEHOLDER.findall(value) if n in arm.vars]
                if names:
                    key = f"arms[{json.dumps(arm.name, ensure_ascii=False)}].vars.{names[0]}"
                break
    return f"{key}: the simulator would refuse it: {message}"


def estimate_plan(plan: Plan, deadline_s: float = DEADLINE_S) -> WallEstimate | None:
    """None: not a simulator plan. TooLarge: a simulator plan too large to model in time."""
    configs = {arm.name: sim_config(plan, arm.name) for arm in plan.arms}
    if any(config is None for config in configs.values()):
        return None
    deadline = time.monotonic() + deadline_s
    cell_s: dict[tuple[str, str, int], float] = {}
    for cell in plan.cells():
        config = configs[cell.key.arm]
        assert config is not None
        longest = min(config.engine.max_model_len, config.engine.kv_capacity_tokens)
        if cell.input_len + cell.output_len > longest:  # the model would preempt it forever
            raise TooLarge(f"{cell.key.id}: a request of up to {cell.input_len:,} + "
                           f"{cell.output_len:,} tokens exceeds the simulator's {longest:,}")
        modelled = _prompts_to_model(cell.num_prompts, cell.input_len + cell.output_len,
                                     cell.key.concurrency)
        if modelled is None:
            raise TooLarge(f"{cell.key.id}: {cell.num_prompts:,} prompts of up to "
                           f"{cell.input_len:,} + {cell.output_len:,} tokens at "
                           f"c={cell.key.concurrency:,} are too many to model")
        if time.monotonic() > deadline:
            raise TooLarge(f"its cells take more than {deadline_s:g} s to model")
        lengths = sample_lengths(cell.input_len, cell.output_len, modelled,
                                 cell.range_ratio, SEED)
        profile = config.content.profiles.get(cell.category) if cell.category else None
        result = simulate_closed_loop(config.engine, lengths, cell.key.concurrency, SEED,
                                      acceptance=profile)
        scale = cell.num_prompts / modelled  # 1 unless the cell was modelled over fewer prompts
        cell_s[(cell.key.arm, cell.key.scenario, cell.key.concurrency)] = (
            result.duration_s * scale / config.speed)
    startup = max(config.startup_delay_s for config in configs.values() if config is not None)
    round_s = len(plan.arms) * startup + plan.bench.repeats * sum(cell_s.values())
    return WallEstimate(round_s=round_s, cell_s=cell_s, startup_s=startup)


def _prompts_to_model(num_prompts: int, tokens: int, concurrency: int) -> int | None:
    """All the cell's prompts when their tokens fit CELL_TOKENS; else as many as fit, but at
    least the concurrency (a closed loop's steady state); None when even that does not fit."""
    if num_prompts * tokens <= CELL_TOKENS:
        return num_prompts
    fewest = min(num_prompts, concurrency)
    if fewest * tokens > CELL_TOKENS:
        return None
    return max(fewest, CELL_TOKENS // tokens)
