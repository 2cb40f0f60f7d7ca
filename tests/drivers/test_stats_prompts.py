"""Our statistics and prompt draws agree with numpy as sglang uses it: same definitions, same draw order."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from dspark_tui.engine.datasets.prompts import random_id_prompts
from dspark_tui.engine.drivers.stats import RequestRecord, measured_raw
from dspark_tui.results.native_raw import native_metrics
from dspark_tui.stats.descriptive import percentile, summarize


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 1000])
def test_summary_matches_numpy(n: int):
    rng = random.Random(n)
    values = [rng.expovariate(3.0) for _ in range(n)]
    s = summarize(values)
    assert s is not None
    assert s.mean == pytest.approx(np.mean(values), rel=1e-12)
    assert s.median == pytest.approx(np.median(values), rel=1e-12)
    assert s.std == pytest.approx(np.std(values), rel=1e-9, abs=1e-15)  # population std
    for q in (90, 95, 99):
        assert getattr(s, f"p{q}") == pytest.approx(np.percentile(values, q), rel=1e-12)
    assert summarize([]) is None


@pytest.mark.parametrize("seed", [0, 1, 123, 2**32 - 1])
def test_lengths_and_ids_match_numpy_legacy_draws(seed: int):
    """sglang: np.random.seed(seed); input lens, output lens, then per-prompt id offsets."""
    np.random.seed(seed)
    in_lens = np.random.randint(max(int(512 * 0.25), 1), 513, size=40).tolist()
    out_lens = np.random.randint(max(int(256 * 0.25), 1), 257, size=40).tolist()
    offsets = np.random.randint(0, 32000, size=40).tolist()
    prompts = random_id_prompts(512, 256, 0.25, 40, seed)
    assert [p.input_len for p in prompts] == in_lens
    assert [p.output_len for p in prompts] == out_lens
    for i, (prompt, offset) in enumerate(zip(prompts, offsets, strict=True)):
        assert prompt.token_ids == [(offset + i + j) % 32000 for j in range(prompt.input_len)]
    assert all(128 <= p.input_len <= 512 for p in prompts)


def test_degenerate_range_and_bad_seed():
    assert [p.input_len for p in random_id_prompts(64, 8, 1.0, 3, 1)] == [64, 64, 64]
    with pytest.raises(ValueError):
        random_id_prompts(64, 8, 1.0, 3, -1)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_client_metrics_follow_sglang_definitions():
    records = [
        RequestRecord(index=0, input_tokens=10, requested_output_tokens=5, output_tokens=5,
                      ttft=0.1, e2e=0.5, itl=[0.1, 0.1, 0.1, 0.1]),
        RequestRecord(index=1, input_tokens=20, requested_output_tokens=3, output_tokens=3,
                      ttft=0.2, e2e=0.4, itl=[0.1, 0.1]),
        RequestRecord(index=2, input_tokens=99, requested_output_tokens=9, error="HTTP 500: boom"),
    ]
    m = native_metrics(measured_raw(records, duration_s=2.0))  # as the native driver saves them
    assert (m.completed, m.failed) == (2, 1)
    assert (m.total_input_tokens, m.total_output_tokens) == (30, 8)  # failed ones not counted
    assert m.total_throughput == pytest.approx(38 / 2.0)
    assert m.request_throughput == pytest.approx(1.0)
    assert m.mean_tpot_ms == pytest.approx(((0.4 / 4) + (0.2 / 2)) / 2 * 1000)
    assert m.mean_ttft_ms == pytest.approx(150.0)
    assert m.mean_itl_ms == pytest.approx(100.0)
    assert m.concurrency == pytest.approx(0.9 / 2.0)


def test_summaries_reproduce_what_sglang_wrote_in_its_fixture():
    """sglang 0.5.23 wrote both the per-request TTFT/ITL lists and its summaries of them."""
    fixture = Path(__file__).resolve().parent.parent / "data" / "sglang_bench_serving_0.5.23.jsonl"
    line = json.loads(fixture.read_text(encoding="utf-8").splitlines()[-1])
    for name, values in (("ttft", line["ttfts"]), ("itl", [gap for r in line["itls"] for gap in r])):
        summary = summarize(values)
        assert summary is not None
        for stat, value in summary.scaled(1000.0).items():
            assert value == pytest.approx(line[f"{stat}_{name}_ms"], rel=1e-9), (name, stat)
