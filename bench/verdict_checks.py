"""Statistical checks of the verdicts, in modelled time: hundreds of simulated runs in seconds.

Each simulated run follows the runner's schedule (rounds in alternating arm order, one server
session per arm and round, `repeats` passes, then adaptive rounds chosen by the runner's own
`cells_to_remeasure`), draws every measurement from the simulator's noise model applied to the
noise-free `sim.virtual` result of the same prompts, and judges it with the report's own
`analyse_measurements`. Ground truth is the noise-free ratio.

    python bench/verdict_checks.py            # 200 seeds per check, the tables for the note
    python bench/verdict_checks.py --quick    # 40 seeds (the CI test runs the checks itself)

Checks (issue 11): A-vs-A false intervals and wins; K=3 vs K=5 wrong-sign wins and the share
of big-margin cells decided; decided rate against true margin; adaptive vs the full design
(every cell at Rmax): contradictions, share decided, cell runs and server starts.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dspark_tui.analysis.verdicts import (
    UNSURE,
    WINS,
    RunVerdicts,
    Settings,
    analyse_measurements,
    cells_to_remeasure,
)
from dspark_tui.model import CellResult, ClientMetrics, Plan
from dspark_tui.plans import resolve_plan
from dspark_tui.sim.config import ModelConfig, NoiseParams
from dspark_tui.sim.estimate import sim_config
from dspark_tui.sim.noise import SessionNoise, measure
from dspark_tui.sim.virtual import VirtualResult, sample_lengths, simulate_closed_loop


def noise_of(plan: Plan) -> NoiseParams:
    """The noise the plan's simulator command asks for (its first arm's, as the simulator's
    own parser reads it); none for a plan that does not run the simulator."""
    config = sim_config(plan, plan.arms[0].name)
    return config.noise if config is not None else NoiseParams()


# Acceptance draws differ from pass to pass on the live server even without noise (and so does
# the last wave): each measurement picks one of these noise-free results.
ACCEPTANCE_SEEDS = 4
WARMUP_GAP_S = 2.0  # modelled seconds between a session's start and its first cell


@dataclass(frozen=True)
class Cell:
    scenario: str
    concurrency: int
    input_len: int
    output_len: int
    num_prompts: int
    range_ratio: float


def grid_of(plan: Plan) -> list[Cell]:
    arm = plan.arms[0].name
    return [Cell(c.key.scenario, c.key.concurrency, c.input_len, c.output_len, c.num_prompts,
                 c.range_ratio) for c in plan.cells() if c.key.arm == arm]


@functools.lru_cache(maxsize=512)
def clean_results(cell: Cell, spec_tokens: int, seed: int) -> tuple[VirtualResult, ...]:
    """The noise-free model on the prompts the run would send (same seed, same lengths), once
    per acceptance seed."""
    lengths = sample_lengths(cell.input_len, cell.output_len, cell.num_prompts, cell.range_ratio, seed)
    config = ModelConfig(spec_tokens=spec_tokens)
    return tuple(simulate_closed_loop(config, lengths, cell.concurrency, seed + i)
                 for i in range(ACCEPTANCE_SEEDS))


@dataclass
class World:
    """Arms (name -> spec tokens, and an optional true-effect multiplier), the grid, the noise."""

    plan: Plan
    spec_tokens: dict[str, int]
    noise: NoiseParams
    effect: dict[str, float] = field(default_factory=dict)

    def clean(self, arm: str, cell: Cell) -> tuple[VirtualResult, ...]:
        return clean_results(cell, self.spec_tokens[arm], self.plan.bench.seed)

    def true_log_ratio(self, cell: Cell, a: str, b: str) -> float:
        """The noise-free ratio on the same prompts (geometric mean over acceptance seeds)."""
        def level(arm: str) -> float:
            runs = self.clean(arm, cell)
            return (sum(math.log(r.total_throughput) for r in runs) / len(runs)
                    + math.log(self.effect.get(arm, 1.0)))
        return level(b) - level(a)


@dataclass
class Outcome:
    verdicts: RunVerdicts
    cell_runs: int
    server_starts: int


Remeasure = Callable[[Sequence[CellResult], Plan, int], list[tuple[str, int]]]


def simulate_run(world: World, plan: Plan, seed: int,
                 remeasure: Remeasure = cells_to_remeasure) -> Outcome:
    """One run of `plan` in modelled time, scheduled as the runner schedules it."""
    rng = np.random.default_rng(seed)
    grid = grid_of(plan)
    arms = [a.name for a in plan.arms]
    measurements: list[CellResult] = []
    starts = 0
    todo = [(c.scenario, c.concurrency) for c in grid]
    by_key = {(c.scenario, c.concurrency): c for c in grid}
    round_no, look = 0, 0
    total_rounds = plan.bench.rounds
    while todo:
        round_no += 1
        order = arms if round_no % 2 == 1 else list(reversed(arms))
        for arm in order:
            session = SessionNoise(world.noise, rng.spawn(1)[0])  # a server start
            starts += 1
            gap = WARMUP_GAP_S
            for repeat in range(1, plan.bench.repeats + 1):
                for key in todo:
                    clean = world.clean(arm, by_key[key])
                    value = (measure(clean, session, gap_s=gap).total_throughput
                             * world.effect.get(arm, 1.0))
                    gap = 0.0
                    measurements.append(CellResult(
                        arm=arm, scenario=key[0], concurrency=key[1], round=round_no,
                        repeat=repeat, session=f"s{starts}",
                        metrics=ClientMetrics(total_throughput=value)))
        if round_no < total_rounds:
            continue
        if look >= plan.bench.adaptive_rounds:
            break
        look += 1
        todo = remeasure(measurements, plan, look)
        total_rounds += 1
    verdicts = analyse_measurements(measurements, arms, Settings.of_plan(plan))
    return Outcome(verdicts, len(measurements), starts)


def plan_with(plan: Plan, **bench: object) -> Plan:
    return plan.model_copy(update={"bench": plan.bench.model_copy(update=bench)})


def demo_world(noise: NoiseParams | None = None, *, same: bool = False,
               effect: float = 1.0, plan_name: str = "demo") -> World:
    """The demo's grid and noise (or another plan's grid, e.g. the seed's, with the demo's
    noise); arms K=3 and K=5, or two identical K=5 arms (A vs A), optionally with a known true
    effect multiplied onto the second arm."""
    plan, _ = resolve_plan(plan_name)
    noise = noise or noise_of(plan)
    if not noise.enabled:  # a real server's plan: assume the demo's box
        noise = noise_of(resolve_plan("demo")[0])
    arms = [a.name for a in plan.arms]
    tokens = {arms[0]: 5 if same else 3, arms[1]: 5}
    return World(plan, tokens, noise, {arms[1]: effect} if effect != 1.0 else {})


# -- the checks -------------------------------------------------------------------------------

def a_vs_a(seeds: int, plan: Plan | None = None) -> dict[str, float]:
    world = demo_world(same=True)
    plan = plan or world.plan
    excluded = wins = total = 0
    for seed in range(seeds):
        for p in simulate_run(world, plan, seed).verdicts.pairs:
            total += 1
            if p.ci_low is not None and p.ci_high is not None and (p.ci_low > 1 or p.ci_high < 1):
                excluded += 1
            wins += p.verdict == WINS
    return {"verdicts": total, "interval_excludes_1": excluded / total, "wins": wins / total}


def k3_vs_k5(seeds: int, plan: Plan | None = None) -> dict[str, float]:
    world = demo_world()
    plan = plan or world.plan
    grid = {(c.scenario, c.concurrency): c for c in grid_of(plan)}
    wrong = total = big = big_right = 0
    for seed in range(seeds):
        for p in simulate_run(world, plan, seed).verdicts.pairs:
            truth = world.true_log_ratio(grid[p.key], p.a, p.b)
            total += 1
            right = p.verdict == WINS and (p.winner == p.b) == (truth > 0)
            wrong += p.verdict == WINS and not right
            if abs(truth) >= math.log(1.15):
                big += 1
                big_right += right
    return {"verdicts": total, "wrong_sign_wins": wrong / total,
            "big_margin_cells": big / max(seeds, 1),
            "big_margin_decided": big_right / big if big else float("nan")}


def decided_by_margin(seeds: int, margins: Sequence[float] = (0.05, 0.10, 0.15, 0.20),
                      plan: Plan | None = None) -> dict[float, float]:
    """Identical arms but the second made `m` faster: the share of cells that end `wins` for it."""
    out = {}
    for m in margins:
        world = demo_world(same=True, effect=1.0 + m)
        chosen = plan or world.plan
        right = total = 0
        for seed in range(seeds):
            for p in simulate_run(world, chosen, seed).verdicts.pairs:
                total += 1
                right += p.verdict == WINS and p.winner == p.b
        out[m] = right / total
    return out


def cost_of_certainty(seeds: int, plan: Plan | None = None,
                      plan_name: str = "demo") -> dict[str, float]:
    """Adaptive against every cell at Rmax (same seeds): contradictions, share decided, cost."""
    world = demo_world(plan_name=plan_name)
    adaptive_plan = plan or world.plan
    rmax = adaptive_plan.bench.rounds + adaptive_plan.bench.adaptive_rounds
    full_plan = plan_with(adaptive_plan, rounds=rmax, adaptive_rounds=0)
    contradictions = decided_full = decided_both = 0
    runs = [0, 0]
    starts = [0, 0]
    for seed in range(seeds):
        adaptive = simulate_run(world, adaptive_plan, seed)
        full = simulate_run(world, full_plan, seed)
        for i, outcome in enumerate((adaptive, full)):
            runs[i] += outcome.cell_runs
            starts[i] += outcome.server_starts
        for f in full.verdicts.pairs:
            a = adaptive.verdicts.pair(f.scenario, f.concurrency, f.a, f.b)
            assert a is not None
            decided = {f.verdict, a.verdict} - {UNSURE}
            if f.verdict != UNSURE:
                decided_full += 1
                decided_both += a.verdict == f.verdict and a.winner == f.winner
            if len(decided) == 2 or (decided and f.verdict == a.verdict == WINS
                                     and a.winner != f.winner):
                contradictions += 1
    return {"contradictions": contradictions,
            "decided_share_of_full": decided_both / decided_full if decided_full else float("nan"),
            "cell_runs_adaptive": runs[0] / seeds, "cell_runs_full": runs[1] / seeds,
            "server_starts_adaptive": starts[0] / seeds, "server_starts_full": starts[1] / seeds,
            "cost_ratio": runs[0] / runs[1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 seeds instead of 200")
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--seed-grid", action="store_true",
                        help="also the cost of certainty on the seed's 18-cell grid (slower)")
    args = parser.parse_args(argv)
    seeds = args.seeds or (40 if args.quick else 200)
    world = demo_world()
    base = world.plan
    print(f"demo grid, noise cv {world.noise.noise_cv:g} / session cv {world.noise.session_cv:g}, "
          f"rounds {base.bench.rounds} + adaptive {base.bench.adaptive_rounds}, {seeds} seeds")
    print("A vs A:", _fmt(a_vs_a(seeds)))
    print("K=3 vs K=5:", _fmt(k3_vs_k5(seeds)))
    print("decided (right sign) by true margin:",
          ", ".join(f"{m:.0%}: {v:.1%}" for m, v in decided_by_margin(seeds).items()))
    print("adaptive vs full design:", _fmt(cost_of_certainty(max(seeds // 2, 20))))
    if args.seed_grid:
        print("adaptive vs full design, the seed's grid (dspark-st3-vs-st5, demo noise):",
              _fmt(cost_of_certainty(max(seeds // 4, 20), plan_name="dspark-st3-vs-st5")))
    return 0


def _fmt(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items())


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["World", "a_vs_a", "cost_of_certainty", "decided_by_margin", "k3_vs_k5"]
