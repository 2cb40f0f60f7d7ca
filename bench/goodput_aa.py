"""A-vs-A for the goodput verdicts and the choice under an SLO (issue 24; docs/statistics.md,
"Goodput verdicts"): three equal arms (K=1, 2, 3 by name, one performance model), demo-slo's
design (2 rounds, no adaptive round, c = 4, 16, 64 with 64, 64 and 256 requests a round, a p90
TPOT limit, objective goodput), many replicate runs. Every goodput "wins" between two arms is a
false winner, and so is a choice under the SLO that rests on one arm being shown better than
another.

The noise, fixed before any result: each (arm, round) server session has a log offset
N(0, sd_s) — a slower session — shared by its cells, each (arm, round, cell) one more N(0, sd_w);
a measurement's duration and every request's TPOT scale with exp(offset), and each request's
TPOT has its own log-normal spread of 0.3 around a median at which 96 % of requests meet the
limit. So goodput (requests meeting the limit a second) moves with the session twice, through
the rate and through the share meeting the limit: its session spread is larger than Total
tok/s's (1.3x by the share's slope at 96 %, d log share / d offset = -phi(z) / (Phi(z) 0.3) =
-0.30, plus the binomial noise of which requests meet it). Processes as the throughput checks
name them: textbook (sd_s 2 %, sd_w 3 %) and session5 (5 %, 2 %). Seeds:
default_rng([20261203, crc32(process), i]).

Each run is written as a run directory (run.json of the plan, the native client's raw file of
every measurement) and judged by the report's own code: `slo_answer(analyse(run))`. The plan
states the box's session-noise prior for Total tok/s, at its true value (the paired session sd,
sqrt(2) sd_s, on 20 df): the throughput verdicts use it; the goodput verdicts, since
2026-12-03, do not (`slo.own_noise`). Counted per run:

- goodput pair-cells with a "wins" (false winners) and with an interval excluding 1, of the
  goodput verdicts as the report has them ("own") and as they were before, with the throughput
  prior lent to them ("borrowed": the same measurements, `analyse_measurements` with the plan's
  settings);
- cells whose choice under the SLO claims a difference: the chosen arm is the top of the arms
  shown to meet the SLO and its goodput is shown higher than the runner-up's (a "wins"), or a
  cheaper K is chosen on an interval shown below the top's (the K decision's "in band"); at
  the family level the choice is made at now ("family"), and for reference as it was made
  before: one comparison's level on the borrowed verdicts ("before");
- cells where one equal arm is shown to meet the SLO and another shown to fail it.

    python bench/goodput_aa.py [--runs N] [--process textbook|session5] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.decision import ratio_between, smallest_within_band
from dspark_tui.analysis.slo import slo_answer, slo_of
from dspark_tui.analysis.verdicts import (
    RunVerdicts,
    Settings,
    Verdict,
    analyse_measurements,
    family_alpha,
)
from dspark_tui.model import CellResult, ClientMetrics, Provenance, parse_plan
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.native_raw import NativeRaw, RequestTiming, write_native_raw
from tests.plan_text import scenario_table, virtual_k_sweep

KS = (1, 2, 3)
CELLS = {4: 64, 16: 64, 64: 256}  # concurrency -> requests a round (demo-slo's)
ROUNDS = 2
LIMIT_MS = 7.0
SHARE_AT_MEDIAN_OFFSET = 0.96  # of requests under the limit, in a session of offset 0
REQUEST_SD = 0.3
OUTPUT, INPUT = 128, 256
PRIOR_DF = 20


@dataclass(frozen=True)
class Process:
    name: str
    session_sd: float  # log sd of a server session's offset
    within_sd: float  # log sd of a (session, cell)'s own


PROCESSES = {p.name: p for p in (Process("textbook", math.log(1.02), math.log(1.03)),
                                 Process("session5", math.log(1.05), math.log(1.02)))}


def plan_text(process: Process) -> str:
    prior = math.sqrt(2.0) * process.session_sd
    return virtual_k_sweep(
        "goodput_aa", KS, rounds=ROUNDS,
        bench=f'session_noise_prior = {{ sd = {prior:.6f}, df = {PRIOR_DF}, '
              f'source = "the process\'s Total tok/s" }}\n',
        scenario=scenario_table("mixed", INPUT, OUTPUT, list(CELLS), 64),
        after=f'[slo]\np90_tpot_ms = {LIMIT_MS}\nobjective = "goodput"\n')


def write_replicate(folder: Path, process: Process, rng: np.random.Generator) -> list[CellResult]:
    """One run's measurements, each with its raw file under `folder`: equal arms."""
    from scipy.stats import norm

    median_ms = LIMIT_MS / math.exp(REQUEST_SD * float(norm.ppf(SHARE_AT_MEDIAN_OFFSET)))
    measured = []
    for rnd in range(1, ROUNDS + 1):
        for k in KS:
            session = rng.normal(0.0, process.session_sd)
            for c, n in CELLS.items():
                offset = session + rng.normal(0.0, process.within_sd)
                tpot_s = median_ms / 1000 * np.exp(offset + rng.normal(0.0, REQUEST_SD, n))
                ttft_s = 0.05 * math.exp(offset)
                timings = [RequestTiming(index=i, input_tokens=INPUT, requested_output_tokens=OUTPUT,
                                         output_tokens=OUTPUT, start_s=0.0, ttft_s=ttft_s,
                                         e2e_s=ttft_s + (OUTPUT - 1) * float(t), usage_reported=True,
                                         itl_count=OUTPUT - 1) for i, t in enumerate(tpot_s)]
                # c requests in flight: the measurement lasts n / c requests' time end to end.
                seconds = float(n / c * (0.05 + (OUTPUT - 1) * median_ms / 1000) * math.exp(offset))
                relative = f"raw/K_{k}__r{rnd}p1/mixed__c{c}.jsonl"
                (folder / relative).parent.mkdir(parents=True, exist_ok=True)
                write_native_raw(folder / relative, NativeRaw(timings, seconds, None, 0))
                measured.append(CellResult(
                    arm=f"K={k}", scenario="mixed", concurrency=c, round=rnd, session=f"K={k}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=n * (INPUT + OUTPUT) / seconds,
                                          duration=seconds, completed=n),
                    provenance=Provenance(driver="native", raw_output=relative)))
    return measured


class Counts(Counter[str]):
    """What the runs counted, by name: runs, pair_cells, wins_/excluded_ (own noise, borrowed
    prior), runs_with_win_*, choice_cells (two or more arms shown to meet the SLO), claims_* and
    runs_claiming_* (family level, before), cells, meet_and_fail; cpu_s is set once at the end."""

    cpu_s: float = 0.0

    def rate(self, part: str, whole: str) -> str:
        n, d = self[part], self[whole]
        return f"{n}/{d} = {100 * n / d:.2f} %" if d else f"{n}/0"


def _claims(paired: RunVerdicts, key: tuple[str, int], meeting: list[str], speed: dict[str, float],
            alpha: float | None, floor: float) -> tuple[str, bool]:
    """The choice among `meeting` (the K rule, at `alpha`; None: one comparison's level) and
    whether it rests on one arm shown better than another."""
    top = max(meeting, key=lambda a: speed[a])
    vs_top = {a: r for a in meeting if (r := ratio_between(paired, key[0], key[1], a, top, alpha))
              is not None and (a == top or r.has_interval)}
    k_of = {a: int(a.split("=")[1]) for a in meeting}
    choice = smallest_within_band(sorted(meeting, key=lambda a: k_of[a]), vs_top, top, floor)
    if choice != top:  # taken within the band; a claim only if shown below the top as well
        high = vs_top[choice].high
        return choice, high is not None and high < 1.0
    runner_up = max((a for a in meeting if a != top), key=lambda a: speed[a])
    ratio = ratio_between(paired, key[0], key[1], top, runner_up, alpha)
    return choice, ratio is not None and ratio.verdict == Verdict.WINS


def replicate(folder: Path, process: Process, seed: int, counts: Counts) -> None:
    plan = parse_plan(plan_text(process))
    RunStore(folder).write_manifest(manifest_for_plan(plan, plan_source="bench"))
    rng = np.random.default_rng([20261203, zlib.crc32(process.name.encode()), seed])
    measured = write_replicate(folder, process, rng)
    run = load_run(folder)
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == ROUNDS}
    analysis = analyse(run)
    answer = slo_answer(analysis)
    slo = slo_of(run)
    assert answer is not None and answer.goodput is not None and analysis.verdicts is not None
    assert slo is not None and answer.choice_alpha is not None
    settings = analysis.verdicts.settings
    assert settings.prior is not None and answer.goodput.settings.prior is None
    # The same rated measurements as the answer's goodput verdicts (slo.goodput_rated's).
    borrowed = analyse_measurements(answer.goodput_measurements, analysis.arms, settings)
    counts["runs"] += 1
    win_own = win_borrowed = claim_family = claim_before = False
    for own, lent in zip(answer.goodput.pairs, borrowed.pairs, strict=True):
        assert (own.key, own.a, own.b) == (lent.key, lent.a, lent.b)
        counts["pair_cells"] += 1
        for pair, prefix in ((own, "own"), (lent, "borrowed")):
            wins = pair.verdict == Verdict.WINS
            excluded = pair.ci_low is not None and pair.ci_high is not None and not (
                pair.ci_low <= 1.0 <= pair.ci_high)
            counts[f"wins_{prefix}"] += wins
            counts[f"excluded_{prefix}"] += excluded
        win_own |= own.verdict == Verdict.WINS
        win_borrowed |= lent.verdict == Verdict.WINS
    floor = settings.band.floor
    for choice in answer.choices:
        counts["cells"] += 1
        statuses = {c.status for c in choice.cells.values()}
        counts["meet_and_fail"] += {"meets", "fails"} <= statuses
        meeting = [a for a, c in choice.cells.items() if c.status == "meets"]
        if len(meeting) < 2:
            continue
        counts["choice_cells"] += 1
        speed = {a: choice.cells[a].goodput or 0.0 for a in meeting}
        chosen, family = _claims(answer.goodput, choice.key, meeting, speed, answer.choice_alpha, floor)
        assert chosen == choice.choice, (chosen, choice)  # the report's own choice, re-made here
        _, before = _claims(borrowed, choice.key, meeting, speed, None, floor)
        counts["claims_family"] += family
        counts["claims_before"] += before
        claim_family |= family
        claim_before |= before
    counts["runs_with_win_own"] += win_own
    counts["runs_with_win_borrowed"] += win_borrowed
    counts["runs_claiming_family"] += claim_family
    counts["runs_claiming_before"] += claim_before


def run_process(process: Process, runs: int) -> Counts:
    counts = Counts()
    start = time.process_time()
    with tempfile.TemporaryDirectory(prefix="goodput-aa-") as tmp:
        for seed in range(runs):
            replicate(Path(tmp) / f"run{seed}", process, seed, counts)
    counts.cpu_s = time.process_time() - start
    return counts


def nominal(process: Process) -> dict[str, float]:
    """The levels the counts are read against: the look's two-sided alpha (an interval
    excluding 1) and the family level of a best among the arms (a choice's comparisons)."""
    look = Settings.of_plan(parse_plan(plan_text(process))).look_alpha
    return {"look_alpha": look, "family_alpha": family_alpha(look, len(KS))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--process", choices=sorted(PROCESSES), action="append")
    parser.add_argument("--quick", action="store_true", help="20 runs of textbook noise")
    args = parser.parse_args()
    names = ["textbook"] if args.quick else (args.process or sorted(PROCESSES))
    runs = 20 if args.quick else args.runs
    for name in names:
        process = PROCESSES[name]
        counts = run_process(process, runs)
        levels = nominal(process)
        print(f"{name}: {counts['runs']} runs, {counts.cpu_s:.1f} s CPU; look alpha "
              f"{levels['look_alpha']:.4f}, family alpha {levels['family_alpha']:.4f}")
        for label, part in (("goodput false winners, own noise", "wins_own"),
                            ("goodput false winners, borrowed prior", "wins_borrowed")):
            runs_part = "runs_with_win_" + part.split("_")[1]
            print(f"  {label}: {counts.rate(part, 'pair_cells')} of pair-cells; "
                  f"runs with one {counts.rate(runs_part, 'runs')}")
        for label, part in (("own", "excluded_own"), ("borrowed", "excluded_borrowed")):
            print(f"  goodput intervals excluding 1, {label}: {counts.rate(part, 'pair_cells')}")
        for label, part in (("family level", "family"), ("before", "before")):
            print(f"  SLO choices claiming a difference, {label}: "
                  f"{counts.rate('claims_' + part, 'choice_cells')} of cells with two arms meeting; "
                  f"runs {counts.rate('runs_claiming_' + part, 'runs')}")
        print(f"  cells where one equal arm meets the SLO and another fails it: "
              f"{counts.rate('meet_and_fail', 'cells')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
