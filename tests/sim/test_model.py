"""The performance model has the seed's shape: more drafts win alone, lose in a crowd."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest

from dspark_tui.sim.config import ModelConfig
from dspark_tui.sim.loadgen import run_closed_loop
from dspark_tui.sim.scheduler import Scheduler, SimRequest
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop
from tests.sim._client import mean_accept_length
from tests.simulator import running_sim


def _modelled(k: int, input_len: int, output_len: int, concurrency: int, prompts: int,
              config: ModelConfig | None = None):
    lengths = sample_lengths(input_len, output_len, prompts, 0.0, seed=7)
    return simulate_closed_loop(replace(config or ModelConfig(), spec_tokens=k), lengths,
                                concurrency, seed=7)


def test_modelled_k5_wins_alone_and_k3_wins_at_128():
    for input_len, output_len in ((512, 2048), (4096, 512)):
        k3 = _modelled(3, input_len, output_len, 1, 8)
        k5 = _modelled(5, input_len, output_len, 1, 8)
        assert k5.total_throughput > 1.08 * k3.total_throughput
    k3 = _modelled(3, 1024, 256, 128, 512)
    k5 = _modelled(5, 1024, 256, 128, 512)
    assert k3.total_throughput > 1.05 * k5.total_throughput
    assert k5.mean_accept_length > k3.mean_accept_length + 0.5


def test_modelled_kv_usage_and_queue_grow_with_concurrency():
    low = _modelled(3, 1024, 256, 8, 64)
    high = _modelled(3, 1024, 256, 128, 256)
    assert high.peak_kv_usage > 3 * low.peak_kv_usage
    small_cache = ModelConfig(kv_capacity_tokens=40_000)
    crowded = _modelled(3, 1024, 256, 128, 256, small_cache)
    assert crowded.peak_kv_usage > 0.9
    assert crowded.peak_waiting > 0
    assert crowded.preemptions > 0
    assert crowded.completed == 256


def test_step_acceptance_matches_the_configured_curve():
    config = ModelConfig(spec_tokens=4, acceptance=(0.8, 0.5, 0.5, 0.0))
    scheduler = Scheduler(config)
    for i in range(400):
        scheduler.add(SimRequest(f"r{i}", 16, 100_000))
    totals = [0] * 4
    drafts = 0
    now = 0.0
    for _ in range(60):
        result = scheduler.step(now)
        now += result.duration
        drafts += result.num_drafts
        totals = [a + b for a, b in zip(totals, result.accepted_per_pos, strict=True)]
    rates = [t / drafts for t in totals]
    assert abs(rates[0] - 0.8) < 0.03
    assert abs(rates[1] - 0.4) < 0.03
    assert abs(rates[2] - 0.2) < 0.03
    assert rates[3] == 0


def test_ngram_drafts_only_where_its_lookup_matches():
    """Real vLLM's ngram proposer drafted in ~15 % of decode steps (docs/vllm-cpu.md); the
    simulator drafted K at every step. With a draft rate the drafts, the draft tokens and the
    tokens emitted follow it; at rate 1 nothing changes (the same draws, the same seed golden)."""
    def run(rate: float) -> tuple[int, int, int, int]:
        scheduler = Scheduler(ModelConfig(spec_tokens=2, draft_rate=rate), rng=random.Random(5))
        for i in range(64):
            scheduler.add(SimRequest(f"r{i}", 16, 100_000))
        drafts = tokens = steps = draft_tokens = 0
        now = 0.0
        for _ in range(60):
            result = scheduler.step(now)
            now += result.duration
            drafts += result.num_drafts
            draft_tokens += result.draft_tokens
            steps += result.num_decoding
            tokens += result.generation_tokens
        return drafts, draft_tokens, steps, tokens

    drafts, draft_tokens, steps, tokens = run(0.15)
    assert 0.10 < drafts / steps < 0.20 and draft_tokens == 2 * drafts
    assert tokens < 1.3 * steps  # mostly one token a step
    always = run(1.0)
    assert always[0] == always[2] and always[3] > 2 * always[2]


def _live(k: int, prompt: int, output: int, concurrency: int, prompts: int,
          speed: float) -> tuple[float, float]:
    """Total tok/s through real HTTP streams, and the acceptance length /metrics reports."""
    with running_sim(spec_tokens=k, speed=speed) as sim:
        asyncio.run(run_closed_loop(sim.url, [(16, 16)] * 2, 2))  # warm both sides up
        result = asyncio.run(run_closed_loop(sim.url, [(prompt, output)] * prompts, concurrency))
        assert result.output_tokens == output * prompts
        return result.total_throughput, mean_accept_length(sim.metrics_text())


@pytest.mark.timing  # two live rates compared: nothing else may load the machine between them
def test_live_k5_beats_k3_at_concurrency_1():
    for prompt, output, speed in ((256, 1024, 20), (2048, 512, 10)):
        k3, accept3 = _live(3, prompt, output, 1, 2, speed)
        k5, accept5 = _live(5, prompt, output, 1, 2, speed)
        assert k5 > 1.05 * k3, (prompt, output, k3, k5)
        assert accept5 > accept3


@pytest.mark.timing
def test_live_k3_beats_k5_at_concurrency_128():
    # --speed 1: at 2 the simulator and the client can saturate a loaded 2-core machine, and a
    # CPU-bound simulator serves both K at the same capped rate (seen once: 84.7k vs 84.3k).
    k3, accept3 = _live(3, 512, 128, 128, 128, speed=1)
    k5, accept5 = _live(5, 512, 128, 128, 128, speed=1)
    assert k3 > 1.03 * k5, (k3, k5)
    assert accept5 > accept3
