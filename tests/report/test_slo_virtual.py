"""The choice under an SLO against the simulator's own model, in modelled time (no HTTP, no box):
each request's TTFT and E2E come from the scheduler (`sim.scheduler`) on demo-slo's workload —
a fifth of the prompts chat that accepts almost no draft, the rest nearly all, a slow drafter —
and are written as the native client's raw files, so analysis/slo.py reads them as it reads a
run's. The model's truth per cell is each K's Total tok/s and the share of its requests under
the p90 TPOT limit over many more requests; the check: wherever that truth is clear (every share
at least 5 points from 90 %, and the fastest K meeting the SLO more than the tie band ahead of
the next one that does), the choice is the model's optimum, and a K the model says fails it is
never chosen."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.slo import slo_answer
from dspark_tui.model import CellResult, ClientMetrics, Provenance, parse_plan
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.native_raw import NativeRaw, RequestTiming, read_native_raw, write_native_raw
from dspark_tui.results.store import LoadedRun
from tests.closed_loop import closed_loop as model_loop
from tests.plan_text import scenario_table, virtual_k_sweep

KS = (0, 1, 3, 6)
CONCURRENCIES = (4, 16)
LIMIT_MS = 7.0
LEVEL = 0.90
ROUNDS = 2
PROMPTS = 64  # a round's requests per cell (demo-slo's)


@cache  # the same 24 loops for every test here (the model has no objective): run once a process
def closed_loop(k: int, c: int, n: int, seed: int) -> tuple[tuple[RequestTiming, ...], float]:
    """n requests (256 in, 128 out) kept c at a time; each request's timing in modelled seconds."""
    requests, now = model_loop(k, c, n, seed)
    timings = tuple(RequestTiming(index=i, input_tokens=256, requested_output_tokens=128,
                                  output_tokens=r.generated, start_s=r.arrival,
                                  ttft_s=r.first_token_time - r.arrival,
                                  e2e_s=r.last_token_time - r.arrival,
                                  usage_reported=True, itl_count=max(0, r.generated - 1))
                    for i, r in enumerate(requests))
    return timings, now


def tpot_ms(t: RequestTiming) -> float:
    return (t.e2e_s - t.ttft_s) / (t.output_tokens - 1) * 1000


def plan_text(objective: str) -> str:
    return virtual_k_sweep("slo_virtual", KS, rounds=ROUNDS,
                           scenario=scenario_table("mixed", 256, 128, CONCURRENCIES, PROMPTS),
                           after=f'[slo]\np90_tpot_ms = {LIMIT_MS}\nobjective = "{objective}"\n')


Truth = dict[tuple[int, int], tuple[float, float]]


def virtual_run(tmp_path: Path, objective: str) -> tuple[LoadedRun, Truth]:
    """The run on disk (raw files) and in memory, and the model's truth per (K, c): (Total
    tok/s or goodput, the share under the limit)."""
    plan = parse_plan(plan_text(objective))
    RunStore(tmp_path).write_manifest(manifest_for_plan(plan, plan_source="test"))
    rng = np.random.default_rng(20261203)
    measured: list[CellResult] = []
    truth: dict[tuple[int, int], tuple[float, float]] = {}
    for c in CONCURRENCIES:
        for k in KS:
            many, seconds = closed_loop(k, c, 8 * PROMPTS, seed=99)
            share = sum(tpot_ms(t) <= LIMIT_MS for t in many) / len(many)
            rate = (sum(t.input_tokens + t.output_tokens for t in many) if objective == "throughput"
                    else len(many) * share) / seconds
            truth[(k, c)] = (rate, share)
            for rnd in range(1, ROUNDS + 1):
                timings, seconds = closed_loop(k, c, PROMPTS, seed=rnd * 1000 + k * 10 + c)
                offset = math.exp(rng.normal(0.0, 0.01))  # a session 1 % slower or faster
                timings = [RequestTiming(t.index, t.input_tokens, t.requested_output_tokens,
                                         t.output_tokens, t.start_s * offset, t.ttft_s * offset,
                                         t.e2e_s * offset, True, t.itl_count) for t in timings]
                seconds *= offset
                relative = f"raw/K_{k}__r{rnd}p1/mixed__c{c}.jsonl"
                (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
                write_native_raw(tmp_path / relative, NativeRaw(timings, seconds, None, 0))
                tokens = sum(t.input_tokens + t.output_tokens for t in timings)
                measured.append(CellResult(
                    arm=f"K={k}", scenario="mixed", concurrency=c, round=rnd, session=f"K={k}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=tokens / seconds, duration=seconds,
                                          completed=len(timings)),
                    provenance=Provenance(driver="native", raw_output=relative)))
    run = load_run(tmp_path)
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == ROUNDS}
    return run, truth


@pytest.mark.parametrize("objective", ["throughput", "goodput"])
def test_the_choice_under_the_slo_is_the_models_optimum(tmp_path: Path, objective: str):
    """By Total tok/s, and by goodput (requests a second meeting the SLO: the model's request
    rate times its share), the plan's objective; the goodput choice by its paired verdicts."""
    run, truth = virtual_run(tmp_path, objective)
    answer = slo_answer(analyse(run))
    assert answer is not None
    clear = 0
    for choice in answer.choices:
        c = choice.concurrency
        meeting = sorted((k for k in KS if truth[(k, c)][1] >= LEVEL),
                         key=lambda k: truth[(k, c)][0], reverse=True)
        assert all(abs(truth[(k, c)][1] - LEVEL) > 0.05 for k in KS), (c, truth)
        chosen = int(choice.choice.split("=")[1]) if choice.choice else None
        assert chosen is None or truth[(chosen, c)][1] >= LEVEL, f"c={c}: K={chosen} fails in the model"
        if len(meeting) >= 2 and truth[(meeting[0], c)][0] / truth[(meeting[1], c)][0] - 1 > 0.02:
            assert chosen == meeting[0], (c, chosen, meeting, truth)
            clear += 1
        if objective == "throughput":
            fastest = max(KS, key=lambda k: truth[(k, c)][0])
            assert truth[(fastest, c)][1] < LEVEL  # the fastest K fails the SLO in the model
    assert clear == len(CONCURRENCIES)  # the check bites in every cell


def test_goodput_is_compared_paired_by_round_as_throughput_is(tmp_path: Path):
    """Each pair's goodput verdict is the throughput verdicts' analysis of each measurement's
    requests meeting the SLO a second: its ratio is the mean over rounds of the log ratio of
    the two arms' sessions of one round, recomputed here from the raw files by hand; where the
    model's goodput differs far beyond the band, the verdict names the higher arm."""
    run, truth = virtual_run(tmp_path, "goodput")
    answer = slo_answer(analyse(run))
    assert answer is not None and answer.goodput is not None

    def by_hand(arm: str, c: int, rnd: int) -> float:
        m = next(m for m in run.measurements
                 if (m.arm, m.concurrency, m.round) == (arm, c, rnd))
        raw = read_native_raw(tmp_path / m.provenance.raw_output)
        met = sum(1 for t in raw.requests if t.output_tokens <= 1 or tpot_ms(t) <= LIMIT_MS)
        return max(met, 0.5) / raw.duration_s

    pairs = {(p.scenario, p.concurrency, p.a, p.b): p for p in answer.goodput.pairs}
    assert len(pairs) == len(CONCURRENCIES) * len(KS) * (len(KS) - 1) // 2
    for c in CONCURRENCIES:
        pair = pairs[("mixed", c, "K=1", "K=6")]
        logs = [math.log(by_hand("K=6", c, r) / by_hand("K=1", c, r)) for r in range(1, ROUNDS + 1)]
        assert pair.ratio == pytest.approx(math.exp(sum(logs) / len(logs)), rel=1e-9)
        assert pair.ci_low is not None and pair.ci_low < pair.ratio < pair.ci_high
        # The model: K=1 meets the SLO with (nearly) every request, K=6 with about 80 % of
        # them at a lower request rate: K=1's goodput 17 % and 26 % higher at c=4 and 16.
        assert truth[(1, c)][0] / truth[(6, c)][0] > 1.15
        assert (pair.verdict, pair.winner) == ("wins", "K=1"), pair
    document = answer.to_json()["goodput_verdicts"]
    assert {(g["concurrency"], g["a"], g["b"], g["verdict"], g["higher"]) for g in document} == {
        (p.concurrency, p.a, p.b, str(p.verdict), p.winner) for p in answer.goodput.pairs}
