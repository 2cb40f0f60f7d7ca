"""`num_speculative_tokens_per_batch_size`: the K of a step follows its running batch, in model
time and in the live server's spec-decode counters."""

from __future__ import annotations

import asyncio
import json

import pytest

from dspark_tui.sim.cli import SimUsageError, parse_schedule
from dspark_tui.sim.config import ModelConfig
from dspark_tui.sim.loadgen import run_closed_loop
from dspark_tui.sim.scheduler import Scheduler, SimRequest
from dspark_tui.sim.virtual import sample_lengths, simulate_closed_loop
from tests.sim._client import metric_sum, metric_values
from tests.simulator import refusal_line, running_sim

SMALL_5_LARGE_3 = ((1, 8, 5), (9, 256, 3))


def test_lookup_follows_vllm_inclusive_ranges_gaps_and_cap():
    config = ModelConfig(spec_tokens=4, spec_schedule=((1, 2, 6), (5, 8, 2), (20, 30, 0)))
    picks = {b: config.spec_tokens_for(b) for b in (1, 2, 3, 4, 5, 8, 9, 19, 20, 30, 31, 999)}
    # 6 capped at the largest K; a gap keeps the previous range's K; past the end, the last K
    assert picks == {1: 4, 2: 4, 3: 4, 4: 4, 5: 2, 8: 2, 9: 2, 19: 2, 20: 0, 30: 0, 31: 0, 999: 0}
    assert ModelConfig(spec_tokens=3).spec_tokens_for(100) == 3


@pytest.mark.parametrize("bad", [[], [[2, 8, 3]], [[1, 8, 3], [8, 16, 1]], [[1, 0, 3]],
                                 [[1, 8, -1]], [[1, 8]], [[1, 8, 1, 100, 3]], {"1-8": 3},
                                 [[1, 8, 2.5]]])
def test_bad_schedules_are_refused(bad):
    with pytest.raises(SimUsageError, match="num_speculative_tokens_per_batch_size"):
        parse_schedule(bad)


def test_schedule_entries_are_sorted():
    assert parse_schedule([[9, 256, 3], [1, 8, 5]]) == SMALL_5_LARGE_3


def _modelled(concurrency: int, prompts: int, **config: object):
    lengths = sample_lengths(1024, 256, prompts, 0.0, seed=3)
    return simulate_closed_loop(ModelConfig(**config), lengths, concurrency, seed=3)  # type: ignore[arg-type]


def test_schedule_matches_fixed_k_at_both_ends():
    scheduled = {"spec_tokens": 5, "spec_schedule": SMALL_5_LARGE_3}
    alone, alone5 = _modelled(1, 8, **scheduled), _modelled(1, 8, spec_tokens=5)
    assert alone.total_throughput == alone5.total_throughput
    assert alone.draft_tokens == 5 * alone.drafts
    crowd, crowd3 = _modelled(128, 512, **scheduled), _modelled(128, 512, spec_tokens=3)
    assert crowd.total_throughput == pytest.approx(crowd3.total_throughput, rel=0.01)
    assert 3 * crowd.drafts < crowd.draft_tokens < 3.1 * crowd.drafts  # K=5 only in the tail
    crowd5 = _modelled(128, 512, spec_tokens=5)
    assert crowd.total_throughput > 1.05 * crowd5.total_throughput


def test_a_step_uses_the_k_of_its_running_batch():
    scheduler = Scheduler(ModelConfig(spec_tokens=5, spec_schedule=((1, 1, 5), (2, 64, 2))))
    scheduler.add(SimRequest("a", 16, 50))
    now = 0.0
    ks = []
    for _ in range(4):
        result = scheduler.step(now)
        now += result.duration
        ks.append((result.k, result.draft_tokens))
    assert ks[1:] == [(5, 5)] * 3
    scheduler.add(SimRequest("b", 16, 50))
    admitting = scheduler.step(now)  # b joins during this step: its drafts were sized before
    assert (admitting.k, admitting.num_drafts, admitting.draft_tokens) == (5, 1, 5)
    result = scheduler.step(now + admitting.duration)
    assert (result.k, result.num_drafts, result.draft_tokens) == (2, 2, 4)
    assert result.accepted_per_pos[2:] == [0, 0, 0]


def test_live_counters_follow_the_schedule():
    spec = json.dumps({"method": "mtp", "num_speculative_tokens": 5,
                       "num_speculative_tokens_per_batch_size": [[1, 1, 5], [2, 256, 3]]})
    with running_sim("--speculative-config", spec, spec_tokens=None, speed=20) as sim:
        assert "num_speculative_tokens_per_batch_size=[[1, 1, 5], [2, 256, 3]]" in sim.log_text()
        asyncio.run(run_closed_loop(sim.url, [(32, 200)], 1))
        alone = sim.metrics_text()
        drafts = metric_sum(alone, "vllm:spec_decode_num_drafts_total")
        assert drafts > 0
        assert metric_sum(alone, "vllm:spec_decode_num_draft_tokens_total") == 5 * drafts
        asyncio.run(run_closed_loop(sim.url, [(32, 400)] * 32, 16))
        text = sim.metrics_text()
    drafts = metric_sum(text, "vllm:spec_decode_num_drafts_total")
    tokens = metric_sum(text, "vllm:spec_decode_num_draft_tokens_total")
    # every draft is K=5 or K=3: tokens = 5 n5 + 3 n3 with n5 + n3 = drafts
    n5 = (tokens - 3 * drafts) / 2
    assert n5 == int(n5) and 0 < n5 < 0.2 * drafts
    per_pos = {dict(labels)["position"]: v for (name, labels), v in metric_values(text).items()
               if name == "vllm:spec_decode_num_accepted_tokens_per_pos_total"}
    assert sorted(per_pos) == ["0", "1", "2", "3", "4"]
    assert 0 < per_pos["4"] <= per_pos["3"] <= n5 < per_pos["2"]
    assert metric_sum(text, "vllm:spec_decode_num_accepted_tokens_total") == sum(per_pos.values())


def test_a_bad_schedule_on_the_command_line_is_one_line():
    spec = json.dumps({"num_speculative_tokens": 5,
                       "num_speculative_tokens_per_batch_size": [[2, 8, 3]]})
    assert "must start at batch size 1" in refusal_line("--speculative-config", spec)


def test_model_time_reports_the_running_batch_a_schedule_sees():
    assert _modelled(1, 8, spec_tokens=3).mean_running == pytest.approx(1.0)
    crowd = _modelled(64, 1024, spec_tokens=3)
    assert 55 < crowd.mean_running <= 64  # below 64 only while the last wave drains
