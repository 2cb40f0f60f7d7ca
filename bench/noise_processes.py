"""Error rates of the verdicts under noise the method was not built for (issue 22).

Synthetic measurements, drawn directly on the log scale from a stated noise process, follow the
runner's schedule (rounds in alternating arm order, one server session per arm and round,
`repeats` passes, then the adaptive rounds the runner's own `cells_to_remeasure` asks for) and
are judged by the report's own `analyse_measurements`. Ground truth is known exactly: identical
arms (A vs A), or the second arm faster by a stated margin in every cell.

    python bench/noise_processes.py                 # 200 seeds per process and grid
    python bench/noise_processes.py --seeds 40      # quicker
    python bench/noise_processes.py --runs          # also seven equal arms: the best fixed K's
                                                    # gains and the per-cell choices' claims
    python bench/noise_processes.py --rounds 3      # three planned rounds instead of the plan's
    python bench/noise_processes.py --box-prior 3   # a session prior measured on the box first

The processes (fixed before any result was seen; cv = coefficient of variation of Total tok/s):

- textbook: 3 % per measurement (within), 2 % per server start (session);
- session5 / session8: 2 % within, 5 % / 8 % per server start;
- hetero: textbook, but the c = 1 cells 3x noisier within (9 %);
- group: textbook plus a second per-start offset of 3 % shared only by the c >= 64 cells;
- badcells: textbook plus, in 5 % of (server start, cell), a slowdown of 15-35 % (uniform);
- drift: textbook plus a linear slowdown of 5 % over the run's planned measurements.

Seeds: run `i` of a check uses `numpy.random.default_rng([SEED_BASE, process, grid, margin, i])`;
nothing is chosen by looking at the result.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import resource
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dspark_tui.analysis.verdicts import (
    WINS,
    RunVerdicts,
    Settings,
    analyse_measurements,
    cells_to_remeasure,
)
from dspark_tui.model import CellResult, ClientMetrics, Plan
from dspark_tui.plans import resolve_plan
from dspark_tui.stats.paired import SessionPrior

SEED_BASE = 2026_12_02
MARGINS = (0.05, 0.10, 0.15, 0.20)
WRONG_SIGN_MARGINS = (0.02, 0.05, 0.10)
GRIDS = {"demo": "demo", "seed18": "dspark-st3-vs-st5"}


def log_sd(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


@dataclass(frozen=True)
class Process:
    name: str
    within: float = 0.03  # cv of one measurement within a session
    session: float = 0.02  # cv of a server start's offset (every cell of the session)
    c1_within_factor: float = 1.0  # the c = 1 cells' within noise, times this
    group_session: float = 0.0  # cv of a second per-start offset shared by the c >= 64 cells
    group_from: int = 64
    bad_share: float = 0.0  # share of (server start, cell) that run slow ...
    bad_low: float = 0.15  # ... by this much ...
    bad_high: float = 0.35  # ... to this much (uniform)
    drift: float = 0.0  # linear slowdown over the run's planned measurements


PROCESSES = (
    Process("textbook"),
    Process("session5", within=0.02, session=0.05),
    Process("session8", within=0.02, session=0.08),
    Process("hetero", c1_within_factor=3.0),
    Process("group", group_session=0.03),
    Process("badcells", bad_share=0.05),
    Process("drift", drift=0.05),
)
PROCESS_BY_NAME = {p.name: p for p in PROCESSES}


@dataclass(frozen=True)
class Grid:
    plan: Plan
    cells: list[tuple[str, int]]

    @classmethod
    def of(cls, plan: Plan) -> Grid:
        arm = plan.arms[0].name
        return cls(plan, [(c.key.scenario, c.key.concurrency) for c in plan.cells() if c.key.arm == arm])


ROUNDS: int | None = None  # --rounds: the planned rounds instead of the plan's


def grid_of(name: str, arms: int = 2, rounds: int | None = None) -> Grid:
    """The shipped plan's grid and bench settings; `arms` arms named K=1.. (all identical unless
    an effect is given), so the plan's own arms only lend their count when it is 2."""
    plan, _ = resolve_plan(GRIDS.get(name, name))
    if arms != len(plan.arms):
        template = plan.arms[0]
        plan = plan.model_copy(update={"arms": [
            template.model_copy(update={"name": f"K={k}", "vars": {**template.vars, "spec_tokens": k}})
            for k in range(1, arms + 1)]})
    rounds = rounds if rounds is not None else ROUNDS
    if rounds is not None:
        plan = plan.model_copy(update={"bench": plan.bench.model_copy(update={"rounds": rounds})})
    return Grid.of(plan)


BOX_PRIOR_RUNS = 0  # --box-prior: a session-noise prior measured on the box before each run
BOX_PRIOR_ROUNDS = 4


def box_prior(grid_name: str, process: Process, seed: int, runs: int) -> SessionPrior:
    """The session-noise prior a user would state after `runs` A-vs-A runs of BOX_PRIOR_ROUNDS
    rounds on the same box (the same process), pooled as `dspark-tui noise` pools them
    (analysis/noise_prior.py: each pair's session variance weighted by its R - 1)."""
    grid = grid_of(grid_name, rounds=BOX_PRIOR_ROUNDS)
    total = df = 0.0
    for i in range(runs):
        verdicts = simulate(grid, process, [0.0, 0.0], rng_for("prior", process.name, grid_name, seed, i))
        for noise in verdicts.noise:
            if noise.session_sd is None or noise.rounds < 2:
                continue
            total += (noise.rounds - 1) * noise.session_sd**2
            df += noise.rounds - 1
    return SessionPrior(math.sqrt(total / df), int(df))


def settings_for(grid: Grid, grid_name: str, process: Process, seed: int) -> Settings | None:
    """None (the plan's own settings) unless --box-prior asks for a prior measured first."""
    if BOX_PRIOR_RUNS <= 0:
        return None
    prior = box_prior(grid_name, process, seed, BOX_PRIOR_RUNS)
    return dataclasses.replace(Settings.of_plan(grid.plan), prior=prior)


Remeasure = Callable[[Sequence[CellResult], Plan, int], list[tuple[str, int]]]


def simulate(grid: Grid, process: Process, effects: Sequence[float], rng: np.random.Generator,
             remeasure: Remeasure = cells_to_remeasure,
             settings: Settings | None = None) -> RunVerdicts:
    """One run: `effects[i]` is arm i's true log speed-up over the first arm (0 for A vs A)."""
    plan = grid.plan
    bench = plan.bench
    arms = [a.name for a in plan.arms]
    index = {key: i for i, key in enumerate(grid.cells)}
    conc = np.array([c for _, c in grid.cells])
    within = np.full(len(grid.cells), log_sd(process.within))
    within[conc == 1] = log_sd(process.within * process.c1_within_factor)
    in_group = conc >= process.group_from
    planned_total = bench.rounds * len(arms) * bench.repeats * len(grid.cells)
    s_sd, g_sd = log_sd(process.session), log_sd(process.group_session)
    measurements: list[CellResult] = []
    todo = list(grid.cells)
    round_no = look = 0
    total_rounds = bench.rounds
    clock = 0
    start = 0
    while todo:
        round_no += 1
        order = range(len(arms)) if round_no % 2 == 1 else range(len(arms) - 1, -1, -1)
        cells = np.array([index[key] for key in todo])
        for arm in order:
            start += 1
            offset = s_sd * rng.standard_normal() + g_sd * rng.standard_normal() * in_group[cells]
            bad = rng.random(len(cells)) < process.bad_share
            slow = np.where(bad, np.log1p(rng.uniform(process.bad_low, process.bad_high, len(cells))), 0.0)
            for repeat in range(1, bench.repeats + 1):
                t = (clock + np.arange(len(cells))) / planned_total
                clock += len(cells)
                log_value = (math.log(1000.0) + effects[arm] + offset - slow
                             - process.drift * t + within[cells] * rng.standard_normal(len(cells)))
                for (scenario, concurrency), value in zip(todo, np.exp(log_value), strict=True):
                    measurements.append(_measurement(arms[arm], scenario, int(concurrency), round_no,
                                                     repeat, f"s{start}", float(value)))
        if round_no < total_rounds:
            continue
        if look >= bench.adaptive_rounds:
            break
        look += 1
        todo = remeasure(measurements, plan, look)
        total_rounds += 1
    return analyse_measurements(measurements, arms, settings or Settings.of_plan(plan))


# A measurement is a copy of these with its own values: the same objects as model_construct
# makes (the same fields set), at a quarter of its cost, which was a third of a seven-arm run's.
_METRICS = ClientMetrics.model_construct()
_MEASUREMENT = CellResult.model_construct(arm="", scenario="", concurrency=1, round=1, repeat=1,
                                          session=None, node=None, status="ok", metrics=_METRICS)


def _measurement(arm: str, scenario: str, concurrency: int, round_no: int, repeat: int,
                 session: str, total_throughput: float) -> CellResult:
    metrics = _METRICS.model_copy(update={"total_throughput": total_throughput})
    return _MEASUREMENT.model_copy(update={
        "arm": arm, "scenario": scenario, "concurrency": concurrency, "round": round_no,
        "repeat": repeat, "session": session, "metrics": metrics})


def rng_for(*keys: object) -> np.random.Generator:
    return np.random.default_rng([SEED_BASE, *(zlib.crc32(str(k).encode()) for k in keys)])


# -- per-cell error rates ---------------------------------------------------------------------

@dataclass
class CellRates:
    process: str
    grid: str
    seeds: int
    pair_cells: int = 0
    false_wins: int = 0
    excluded: int = 0
    wrong_sign: dict[float, float] = field(default_factory=dict)
    power: dict[float, float] = field(default_factory=dict)
    # Run level, A vs A (two arms): runs with some cell winning, and the band rules' answers.
    runs_any_win: int = 0
    band_rules: dict[str, int] = field(default_factory=dict)
    cpu_s: float = 0.0
    # Per run (A vs A): its pair-cells and false winners. A run's cells share its sessions, so
    # they are not independent: the standard error of a rate is the runs' (`false_win_se`).
    run_cells: list[int] = field(default_factory=list)
    run_false_wins: list[int] = field(default_factory=list)

    @property
    def false_win_rate(self) -> float:
        return self.false_wins / self.pair_cells

    @property
    def exclusion_rate(self) -> float:
        return self.excluded / self.pair_cells

    @property
    def false_win_se(self) -> float:
        """The standard error of false_win_rate over runs (a ratio estimator's, runs as the
        sampled units): cells of one run win together when its sessions mislead."""
        runs = len(self.run_cells)
        if runs < 2:
            return 0.0
        cells = np.asarray(self.run_cells, dtype=float)
        wins = np.asarray(self.run_false_wins, dtype=float)
        residual = wins - self.false_win_rate * cells
        return float(np.sqrt(np.sum(residual**2) / (runs - 1) / runs) / cells.mean())


def cell_rates(process: Process, grid_name: str, seeds: int, *, margins: Sequence[float] = MARGINS,
               wrong_margins: Sequence[float] = WRONG_SIGN_MARGINS) -> CellRates:
    grid = grid_of(grid_name)
    out = CellRates(process.name, grid_name, seeds)
    cpu = time.process_time()
    for seed in range(seeds):
        verdicts = simulate(grid, process, [0.0, 0.0], rng_for(process.name, grid_name, 0.0, seed),
                            settings=settings_for(grid, grid_name, process, seed))
        wins = 0
        for p in verdicts.pairs:
            out.pair_cells += 1
            wins += p.verdict == WINS
            if p.ci_low is not None and p.ci_high is not None and (p.ci_low > 1 or p.ci_high < 1):
                out.excluded += 1
        out.false_wins += wins
        out.runs_any_win += wins > 0
        out.run_cells.append(len(verdicts.pairs))
        out.run_false_wins.append(wins)
        for rule, says in band_answers(verdicts).items():
            out.band_rules[rule] = out.band_rules.get(rule, 0) + says
    for m in sorted(set(margins) | set(wrong_margins)):
        right = wrong = total = 0
        for seed in range(seeds):
            rng = rng_for(process.name, grid_name, m, seed)
            verdicts = simulate(grid, process, [0.0, math.log1p(m)], rng,
                                settings=settings_for(grid, grid_name, process, seed))
            for p in verdicts.pairs:
                total += 1
                right += p.verdict == WINS and p.winner == p.b
                wrong += p.verdict == WINS and p.winner == p.a
        if m in margins:
            out.power[m] = right / total
        if m in wrong_margins:
            out.wrong_sign[m] = wrong / total
    out.cpu_s = time.process_time() - cpu
    return out


# -- run level: the summary's band lines ------------------------------------------------------

BANDS = ((1, 1), (2, 32), (33, 64), (65, 10**9))  # analysis/frames.BANDS: c=1, 2-32, 33-64, >=65


def band_answers(verdicts: RunVerdicts) -> dict[str, bool]:
    """Does some concurrency band of a two-arm run name an arm? Under each candidate rule:

    - `decided-majority` (the summary before issue 22, analysis/frames.band_frame on the
      decided cells): an arm that wins more than half of the band's decided cells;
    - `all-majority`: an arm that wins more than half of ALL the band's cells;
    - `band-interval`: the band's own verdict (verdicts.group_verdict), the interval of the
      band's mean log ratio over its cells, beyond the tie band;
    - `summary` (the summary now, analysis/bands.py): `all-majority` for an arm that the band's
      interval also shows faster (bands.band_interval_against)."""
    from dspark_tui.analysis.bands import band_interval_against
    from dspark_tui.analysis.verdicts import group_verdict

    out = {"decided-majority": False, "all-majority": False, "band-interval": False, "summary": False}
    a, b = verdicts.arms[:2]
    for low, high in BANDS:
        pairs = [p for p in verdicts.pairs if low <= p.concurrency <= high]
        if not pairs:
            continue
        wins = {p.winner: 0 for p in pairs if p.verdict == WINS}
        for p in pairs:
            if p.verdict == WINS:
                wins[p.winner] += 1
        decided = sum(p.verdict in (WINS, "tie") for p in pairs)
        ties = decided - sum(wins.values())
        top = max(wins.values(), default=0)
        if decided and ties * 2 < decided and top * 2 > decided:
            out["decided-majority"] = True
        keys = [p.key for p in pairs]
        if top * 2 > len(pairs):
            out["all-majority"] = True
            arm = max(wins, key=lambda w: wins[w])
            if band_interval_against(verdicts, keys, arm, verdicts.arms) is None:
                out["summary"] = True
        group = group_verdict(verdicts, keys, a, b)
        out["band-interval"] |= group is not None and group.verdict == WINS
    return out


# -- run level: seven equal arms, the best fixed K --------------------------------------------

def fixed_k_exclusion(grid_name: str, process: Process, seeds: int, arms: int = 7) -> dict[str, float]:
    """Seven identical arms: does the gain of the best fixed K (the arm with the highest mean log
    throughput over the cells, every cell weighing the same) over some other K have an interval
    that excludes 1? The gain and its interval are analysis/schedule.combine_ratios of the
    cells' ratios, as the K decision computes them: at the family level of the comparisons
    behind a best (decision.family_alpha, the K decision's), and for reference at the look's
    level of a single comparison (`..._per_comparison`, the K decision before issue 22)."""
    from dspark_tui.analysis.decision import family_alpha, ratio_between
    from dspark_tui.analysis.schedule import combine_ratios

    grid = grid_of(grid_name, arms)
    names = [a.name for a in grid.plan.arms]
    counts = {"top": 0, "any": 0, "top_per_comparison": 0, "any_per_comparison": 0}
    for seed in range(seeds):
        verdicts = simulate(grid, process, [0.0] * arms, rng_for("fixed-k", process.name, grid_name, seed))
        level = {arm: 0.0 for arm in names}
        for c in verdicts.cells:
            level[c.arm] += math.log(c.mean)
        top = max(names, key=lambda arm: level[arm])
        for suffix, alpha in (("", family_alpha(verdicts.settings.look_alpha, arms)),
                              ("_per_comparison", None)):
            hit_top = hit_any = False
            for x in names:
                for y in names:
                    if x == y:
                        continue
                    ratios = [(1.0, r) for s, c in grid.cells
                              if (r := ratio_between(verdicts, s, c, x, y, alpha)) is not None]
                    gain = combine_ratios(ratios)
                    if gain is None or gain.low is None or gain.high is None:
                        continue
                    if gain.low > 1 or gain.high < 1:
                        hit_any = True
                        hit_top |= x == top
            counts["top" + suffix] += hit_top
            counts["any" + suffix] += hit_any
    return {"runs": seeds, "top_gain_excludes_1": counts["top"] / seeds,
            "some_gain_excludes_1": counts["any"] / seeds,
            "top_gain_excludes_1_per_comparison": counts["top_per_comparison"] / seeds,
            "some_gain_excludes_1_per_comparison": counts["any_per_comparison"] / seeds}


def cell_choice_claims(grid_name: str, process: Process, seeds: int, arms: int = 7) -> dict[str, float]:
    """Seven identical arms: does a cell's K choice (decision's per-cell rule) claim a
    difference — the top shown faster than the runner-up ("wins"), or the cheaper K shown slower
    than the top by less than the band ("in band")? Any such claim is false here. At the family
    level of the comparisons behind the choice (the K decision now) and, for reference, at one
    comparison's level (`..._per_comparison`, the per-cell choice before). Rates: of cells, and
    of runs with some cell claiming."""
    from types import SimpleNamespace

    from dspark_tui.analysis import decision as dm

    grid = grid_of(grid_name, arms)
    names = [a.name for a in grid.plan.arms]
    k_of = {name: i for i, name in enumerate(names)}
    counts = {"cells": 0, "runs": 0, "cells_per_comparison": 0, "runs_per_comparison": 0}
    total_cells = 0
    for seed in range(seeds):
        verdicts = simulate(grid, process, [0.0] * arms, rng_for("choice", process.name, grid_name, seed))
        means: dict[tuple[str, int], dict[int, float]] = {}
        for c in verdicts.cells:
            means.setdefault((c.scenario, c.concurrency), {})[k_of[c.arm]] = c.mean
        total_cells += len(means)
        for suffix, per_comparison in (("", False), ("_per_comparison", True)):
            decision = dm.KDecision(SimpleNamespace(verdicts=verdicts), k_of,  # type: ignore[arg-type]
                                    verdicts.settings.band, per_comparison=per_comparison)
            claims = sum(choice.verdict in ("wins", "in band")
                         for key, throughput in means.items()
                         if (choice := dm._choose(decision, key[0], key[1], throughput)) is not None)
            counts["cells" + suffix] += claims
            counts["runs" + suffix] += claims > 0
    return {"runs": seeds, "cells_claiming": counts["cells"] / total_cells,
            "runs_claiming": counts["runs"] / seeds,
            "cells_claiming_per_comparison": counts["cells_per_comparison"] / total_cells,
            "runs_claiming_per_comparison": counts["runs_per_comparison"] / seeds}


def schedule_gain_exclusion(grid_name: str, process: Process, seeds: int, arms: int = 7) -> dict[str, float]:
    """Seven identical arms: does the schedule's gain over the best fixed K (deploy.py's
    `schedule_gain`, equal traffic weights) have an interval that excludes 1? The schedule keyed
    on the client's concurrency (no server counters here): cells of one concurrency share one K
    (schedule._anchor, as overlapping batches do), others keep their own choice. At the family
    level (now) and, for reference, with every comparison at one comparison's level."""
    from types import SimpleNamespace

    from dspark_tui.analysis import decision as dm
    from dspark_tui.analysis import schedule as sm

    grid = grid_of(grid_name, arms)
    names = [a.name for a in grid.plan.arms]
    k_of = {name: i for i, name in enumerate(names)}
    counts = {"": 0, "_per_comparison": 0}
    for seed in range(seeds):
        verdicts = simulate(grid, process, [0.0] * arms, rng_for("schedule", process.name, grid_name, seed))
        means: dict[tuple[str, int], dict[int, float]] = {}
        for c in verdicts.cells:
            means.setdefault((c.scenario, c.concurrency), {})[k_of[c.arm]] = c.mean
        for suffix in counts:
            decision = dm.KDecision(SimpleNamespace(verdicts=verdicts), k_of,  # type: ignore[arg-type]
                                    verdicts.settings.band, per_comparison=bool(suffix))
            decision.choices = [choice for key, throughput in means.items()
                                if (choice := dm._choose(decision, key[0], key[1], throughput))]
            weights = {c.key: 1.0 / len(decision.choices) for c in decision.choices}
            points = {c.key: (float(c.concurrency),) * 3 for c in decision.choices}
            k_for = {}
            for concurrency in {c.concurrency for c in decision.choices}:
                cells = [c for c in decision.choices if c.concurrency == concurrency]
                anchor = sm._anchor(decision, cells, points, weights)
                k_for.update(dict.fromkeys((c.key for c in cells), anchor.k))
            single = sm.best_single_k(decision, weights)
            if single is None:
                continue
            gain = sm.weighted_gain(decision, weights, k_for, dict.fromkeys(weights, single.k))
            if gain is not None and gain.low is not None and gain.high is not None:
                counts[suffix] += gain.low > 1 or gain.high < 1
    return {"runs": seeds, "schedule_gain_excludes_1": counts[""] / seeds,
            "schedule_gain_excludes_1_per_comparison": counts["_per_comparison"] / seeds}


# -- the tables ---------------------------------------------------------------------------------

LIMITS = {"false_wins": 0.03, "exclusion": 0.07, "wrong_sign": 0.01, "power10_textbook": 0.75}


def table(rows: Sequence[CellRates]) -> str:
    head = ("| process | grid | false wins | excl. 1 | wrong sign 2/5/10 % | power 5/10/15/20 % "
            "| runs with a win | band: decided-maj / all-maj / band-int / summary | CPU s |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        bands = " / ".join(f"{r.band_rules.get(k, 0) / r.seeds:.1%}"
                           for k in ("decided-majority", "all-majority", "band-interval", "summary"))
        lines.append(
            f"| {r.process} | {r.grid} | {r.false_win_rate:.2%} ± {r.false_win_se:.2%} "
            f"| {r.exclusion_rate:.2%} "
            f"| {' / '.join(f'{v:.2%}' for v in r.wrong_sign.values())} "
            f"| {' / '.join(f'{v:.0%}' for v in r.power.values())} "
            f"| {r.runs_any_win / r.seeds:.1%} | {bands} | {r.cpu_s:.0f} |")
    return "\n".join(lines)


def breaches(r: CellRates) -> list[str]:
    out = []
    if r.false_win_rate > LIMITS["false_wins"]:
        out.append(f"false wins {r.false_win_rate:.2%}")
    if r.exclusion_rate > LIMITS["exclusion"]:
        out.append(f"exclusion {r.exclusion_rate:.2%}")
    if max(r.wrong_sign.values(), default=0.0) > LIMITS["wrong_sign"]:
        out.append(f"wrong sign {max(r.wrong_sign.values()):.2%}")
    if r.process == "textbook" and r.power.get(0.10, 1.0) < LIMITS["power10_textbook"]:
        out.append(f"power at 10 % {r.power[0.10]:.1%}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--process", action="append", choices=list(PROCESS_BY_NAME))
    parser.add_argument("--grid", action="append", choices=list(GRIDS))
    parser.add_argument("--runs", action="store_true", help="also seven equal arms (best fixed K)")
    parser.add_argument("--method", help="(experiments) stats.paired.SESSION_METHOD")
    parser.add_argument("--groups", help="(experiments) analysis.verdicts.GROUPS")
    parser.add_argument("--rounds", type=int, help="planned rounds instead of the plan's")
    parser.add_argument("--box-prior", type=int, default=0, metavar="RUNS",
                        help="(experiments) before each run, a session-noise prior pooled from RUNS "
                             f"A-vs-A runs of {BOX_PRIOR_ROUNDS} rounds of the same process")
    args = parser.parse_args(argv)
    if args.box_prior:
        global BOX_PRIOR_RUNS
        BOX_PRIOR_RUNS = args.box_prior
    if args.rounds:
        global ROUNDS
        ROUNDS = args.rounds
    if args.groups:
        from dspark_tui.analysis import verdicts as v
        v.GROUPS = args.groups
    if args.method:
        from dspark_tui.stats import paired
        paired.SESSION_METHOD = args.method
    processes = [PROCESS_BY_NAME[n] for n in args.process] if args.process else list(PROCESSES)
    grids = args.grid or list(GRIDS)
    rows = []
    for grid in grids:
        for process in processes:
            row = cell_rates(process, grid, args.seeds)
            rows.append(row)
            flags = breaches(row)
            print(f"{process.name:9s} {grid:7s} false {row.false_win_rate:.2%} "
                  f"(se {row.false_win_se:.2%}) excl "
                  f"{row.exclusion_rate:.2%} wrong {max(row.wrong_sign.values()):.2%} "
                  f"power10 {row.power[0.10]:.1%} runs-with-win {row.runs_any_win / row.seeds:.1%} "
                  f"bands {row.band_rules} cpu {row.cpu_s:.0f}s "
                  f"{'BREACH ' + ', '.join(flags) if flags else ''}",
                  flush=True)
    print()
    print(table(rows))
    if args.runs:
        for process in processes:
            print(f"7 equal arms, seed grid, {process.name}:",
                  fixed_k_exclusion("seed18", process, max(args.seeds // 2, 20)), flush=True)
            print(f"7 equal arms, seed grid, {process.name}, cell choices:",
                  cell_choice_claims("seed18", process, max(args.seeds // 2, 20)), flush=True)
            print(f"7 equal arms, seed grid, {process.name}, schedule gain:",
                  schedule_gain_exclusion("seed18", process, max(args.seeds // 2, 20)), flush=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"CPU {usage.ru_utime + usage.ru_stime:.0f} s, {args.seeds} seeds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
