"""The schedule a sweep recommends, run by the simulator's own model (sim.virtual, modelled time,
noise-free): in every cell where the sweep chose a K, the schedule serves no less than that fixed
K minus 1 % — the step's K follows the running batch, which ramps up and drains at a cell's ends,
so it may serve more — and on the demo plan's traffic it beats the best single K."""

from __future__ import annotations

import math

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.deploy import deploy_answer
from dspark_tui.plans import resolve_plan
from dspark_tui.sim.config import ModelConfig
from dspark_tui.sim.virtual import VirtualResult, sample_lengths, simulate_closed_loop
from tests.report.k_sweep_builders import k_sweep_run

TOLERANCE = 0.01


def test_the_schedule_matches_the_chosen_fixed_k_in_every_cell(tmp_path):
    plan, _ = resolve_plan("demo-k-sweep")
    (scenario,) = plan.scenarios
    ks = [int(arm.vars["spec_tokens"]) for arm in plan.arms]
    lengths = {c: sample_lengths(scenario.input_len, scenario.output_len, scenario.prompts_for(c),
                                 0.0, seed=1) for c in scenario.concurrencies}
    fixed: dict[tuple[int, int], VirtualResult] = {
        (k, c): simulate_closed_loop(ModelConfig(spec_tokens=k), lengths[c], c)
        for k in ks for c in scenario.concurrencies}
    traffic = "[traffic]\nconcurrency = { " + ", ".join(
        f"{c} = {w}" for c, w in plan.traffic.concurrency.items()) + " }\n"
    sweep = k_sweep_run(tmp_path, ks, {scenario.name: scenario.concurrencies}, noise=1e-4,
                        traffic=traffic, model=lambda k, s, c: fixed[(k, c)].total_throughput,
                        running=lambda k, s, c: fixed[(k, c)].mean_running)
    answer = deploy_answer(analyse(sweep))
    assert answer is not None and answer.schedule is not None and answer.single is not None
    ranges = answer.schedule.ranges
    assert len({k for _, _, k in ranges}) >= 2  # the check bites: K steps down with the batch
    scheduled = ModelConfig(spec_tokens=answer.schedule.max_k,
                            spec_schedule=tuple(tuple(r) for r in ranges))
    checked = 0
    log_gain = 0.0
    for c in scenario.concurrencies:
        choice = answer.decision.choice(scenario.name, c)
        result = simulate_closed_loop(scheduled, lengths[c], c)
        k_here = answer.schedule.k_at(answer.points[(scenario.name, c)][0])
        if k_here == choice.k:
            ratio = result.total_throughput / fixed[(choice.k, c)].total_throughput
            # Never more than 1 % slower. Faster is allowed: while a cell ramps up and drains,
            # its batch is small and the schedule drafts more, as vLLM would (+1.5 % at c=64,
            # +3.7 % at c=128 on this grid).
            assert ratio >= 1 - TOLERANCE, f"c={c}: schedule/K={choice.k} = {ratio:.4f}"
            checked += 1
        weight = answer.weights[(scenario.name, c)]
        log_gain += weight * math.log(result.total_throughput
                                      / fixed[(answer.single.k, c)].total_throughput)
    assert checked >= len(scenario.concurrencies) - 1
    # On the demo's traffic (it spans the crossover) the schedule beats the best single K.
    assert math.exp(log_gain) > 1 + plan.bench.tie_band
