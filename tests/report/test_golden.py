"""The sample run renders the seed's tables character for character, and matches the seed."""

from __future__ import annotations

import json

import pytest

from dspark_tui.report.markdown import render_report
from dspark_tui.results import load_run
from tests.conftest import SAMPLE_RUN, SEED_REPORT
from tests.report.make_sample_run import build
from tests.report.markdown_tables import cells_of, table_after
from tests.report.seed_import import SEED_ORIGINAL_DIR, completed_requests


@pytest.fixture(scope="module")
def seed() -> str:
    return SEED_REPORT.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rendered() -> str:
    run = load_run(SAMPLE_RUN)
    assert run.problems == []
    return render_report(run)


def test_core_metrics_table_is_the_seeds(seed: str, rendered: str):
    expected = table_after(seed, lambda line: line == "## 核心指标对比")
    assert len(expected) == 2 + 36
    assert table_after(rendered, lambda line: line == "## 核心指标对比") == expected


def test_winner_table_is_the_seeds(seed: str, rendered: str):
    expected = table_after(seed, lambda line: line == "## 吞吐 winner 统计")
    assert len(expected) == 2 + 18
    assert table_after(rendered, lambda line: line == "## 吞吐 winner 统计") == expected
    assert "| stress_standard | 128 | st=3 | 15225.66" not in rendered
    assert "| stress_standard | 128 | st=3 | 29828.36 | 22700.92 | 31.40% |" in rendered


def test_stress_standard_gap_table_is_the_seeds(seed: str, rendered: str):
    expected = table_after(seed, lambda line: line.startswith("`stress_standard` 随并发增加"))
    assert expected[-1] == "| 128 | 29828.36 | 22700.92 | st=3 高 31.4% |"
    # The report picks stress_standard itself, as the scenario whose gap moves most.
    ours = table_after(rendered, lambda line: line.startswith("### ") and "stress_standard" in line)
    assert ours == expected


def test_committed_report_is_what_the_code_renders(rendered: str):
    assert (SAMPLE_RUN / "report.md").read_text(encoding="utf-8") == rendered


def test_sample_run_is_rebuilt_byte_for_byte_from_the_seed(tmp_path):
    out = build(SEED_REPORT, tmp_path / "rebuilt")
    committed = sorted(p.relative_to(SAMPLE_RUN) for p in SAMPLE_RUN.rglob("*") if p.is_file())
    rebuilt = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert rebuilt == committed
    assert len([p for p in committed if p.parts[0] == "cells"]) == 36
    for rel in committed:
        assert (out / rel).read_bytes() == (SAMPLE_RUN / rel).read_bytes(), rel


def test_run_json_keeps_the_seeds_header_facts():
    data = json.loads((SAMPLE_RUN / "run.json").read_text(encoding="utf-8"))
    assert data["original_dir"] == SEED_ORIGINAL_DIR
    assert data["model"] == "/data/models/DeepSeek-V4-Flash-DSpark"
    assert data["backend_label"] == "vllm-dspark (TP=8, FP8 KV cache)"
    assert data["warmup_requests"] == 100
    assert data["client"] == "sglang.bench_serving --backend vllm"
    assert data["driver"] == "sglang"
    assert data["arms"] == [
        {"name": "st=3", "vars": {"spec_tokens": 3}},
        {"name": "st=5", "vars": {"spec_tokens": 5}},
    ]
    assert data["compared"][0]["var"] == "spec_tokens"
    assert data["compared"][0]["flag"] == "--spec-tokens"
    assert data["total_cells"] == 36


def test_cells_hold_only_what_the_seed_gives():
    cell = json.loads((SAMPLE_RUN / "cells/st_3/stress_standard__c128__r1p1.json").read_text("utf-8"))
    metrics = cell["metrics"]
    assert metrics["total_throughput"] == 29828.36
    assert metrics["completed"] == 1024
    # Not in the seed, so not in the cell.
    for absent in ("median_ttft_ms", "p90_e2e_latency_ms", "mean_itl_ms", "total_input_tokens",
                   "input_throughput", "failed", "accept_length"):
        assert metrics[absent] is None, absent
    assert cell["server"] is None
    assert "transcribed from the hand-made report" in cell["provenance"]["source"]


def test_completed_is_an_exact_request_count(seed: str):
    rows = table_after(seed, lambda line: line == "## 核心指标对比")[2:]
    counts = {(cells_of(r)[0], int(cells_of(r)[1])): completed_requests(
        float(cells_of(r)[3]), float(cells_of(r)[4])) for r in rows}
    assert counts[("chat_short", 1)] == 32
    assert counts[("stress_standard", 96)] == 768
    assert set(counts.values()) <= {32, 128, 256, 512, 768, 1024}
    with pytest.raises(Exception, match="not a request count"):
        completed_requests(12.80, 2.54)


def test_results_csv_has_one_row_per_cell_with_its_concurrency():
    import csv

    with open(SAMPLE_RUN / "results.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 36
    assert {(r["arm"], r["scenario"], r["concurrency"]) for r in rows} >= {
        ("st=3", "stress_standard", "128"), ("st=5", "chat_short", "1")}
    assert rows[0]["total_throughput"] == "1002.3"
    assert rows[0]["median_ttft_ms"] == ""  # absent in the seed, so empty, not zero
