"""The importers on the real outputs of sglang.bench_serving 0.5.23 and vllm bench serve 0.33.0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dspark_tui.model import ClientMetrics, UserError
from dspark_tui.results.importers import import_result_file, import_sglang_jsonl, import_vllm_json
from tests.conftest import FIXTURES

SGLANG = FIXTURES / "sglang_bench_serving_0.5.23.jsonl"
VLLM = FIXTURES / "vllm_bench_serve_0.33.0.json"


def _last_sglang_line() -> dict:
    return json.loads(SGLANG.read_text().splitlines()[-1])


def test_sglang_takes_the_last_line_and_every_metric_it_has():
    imported = import_sglang_jsonl(SGLANG)
    raw = _last_sglang_line()
    m = imported.metrics
    for name in ClientMetrics.field_names():
        if name in raw:
            assert getattr(m, name) == raw[name], name
    assert m.completed == 4 and m.total_input_tokens == 135 and m.total_output_tokens == 45
    assert m.total_throughput == pytest.approx(2988.955262330708)
    assert m.p95_itl_ms == pytest.approx(2.844756999991205)
    assert m.failed == 0  # from its per-request `errors`, all empty
    assert m.accept_length is None  # null in the file: missing, not zero
    assert imported.provenance.input_len == 64 and imported.provenance.range_ratio == 0.0


def test_sglang_skips_a_truncated_last_line(tmp_path: Path):
    lines = SGLANG.read_text().splitlines()
    path = tmp_path / "out.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    imported = import_sglang_jsonl(path)
    assert imported.metrics.completed == 8  # the first, complete line
    assert imported.raw["max_concurrency"] == 4


def test_sglang_rates_an_older_version_left_out_are_derived(tmp_path: Path):
    """sglang 0.5.3 writes no total_throughput; it follows from tokens and duration."""
    raw = _last_sglang_line()
    for key in ("total_throughput", "input_throughput"):
        del raw[key]
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(raw) + "\n")
    m = import_sglang_jsonl(path).metrics
    assert m.total_throughput == pytest.approx((135 + 45) / raw["duration"])
    assert m.total_throughput == pytest.approx(2988.955262330708)
    assert m.input_throughput == pytest.approx(2241.716446748031)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "empty result file"),
        ('{"completed": 3, "dur', "no complete JSON result line"),
        ('{"hello": 1}\n', "not a sglang.bench_serving result"),
    ],
)
def test_sglang_bad_files_are_one_line_errors(tmp_path: Path, content: str, expected: str):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(UserError) as info:
        import_sglang_jsonl(path)
    message = str(info.value)
    assert expected in message and str(path) in message and "\n" not in message


def test_missing_file_names_it(tmp_path: Path):
    with pytest.raises(UserError, match="no such result file"):
        import_sglang_jsonl(tmp_path / "nope.jsonl")


def test_vllm_maps_its_names_and_derives_e2e_from_latencies():
    imported = import_vllm_json(VLLM)
    raw = json.loads(VLLM.read_text())
    m = imported.metrics
    assert m.total_throughput == raw["total_token_throughput"]
    assert m.completed == 4 and m.failed == 0
    assert m.mean_ttft_ms == raw["mean_ttft_ms"] and m.p99_itl_ms == raw["p99_itl_ms"]
    assert m.p90_ttft_ms is None  # vllm was asked for p99 only: absent, not invented
    latencies = raw["latencies"]
    assert m.mean_e2e_latency_ms == pytest.approx(sum(latencies) / 4 * 1000)
    assert m.median_e2e_latency_ms == pytest.approx((0.028229886999952214 + 0.028406489000076363) / 2 * 1000)
    assert m.input_throughput == pytest.approx(28 / raw["duration"])
    assert m.concurrency == pytest.approx(sum(latencies) / raw["duration"])
    assert m.accept_length is None and imported.spec_decode == {}
    assert imported.provenance.num_prompts == 4


def test_vllm_spec_decode_keys_become_accept_length(tmp_path: Path):
    raw = json.loads(VLLM.read_text())
    raw.update({"spec_decode_num_drafts": 100, "spec_decode_accepted_tokens": 186,
                "spec_decode_draft_tokens": 300, "spec_decode_acceptance_rate": 62.0})
    path = tmp_path / "r.json"
    path.write_text(json.dumps(raw))
    imported = import_vllm_json(path)
    assert imported.metrics.accept_length == pytest.approx(2.86)
    assert "acceptance rate 62.00%" in imported.provenance.notes[0]
    raw["spec_decode_acceptance_length"] = 2.5
    path.write_text(json.dumps(raw))
    assert import_vllm_json(path).metrics.accept_length == 2.5


def test_vllm_appended_results_take_the_last_complete(tmp_path: Path):
    raw = json.loads(VLLM.read_text())
    second = dict(raw, completed=3)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(raw) + "\n" + json.dumps(second) + "\n" + json.dumps(raw)[:40])
    assert import_vllm_json(path).metrics.completed == 3


@pytest.mark.parametrize(
    ("content", "expected"),
    [("", "empty result file"), ("[1, 2]", "expected one JSON object"),
     ('{"date": "x"}', "not a vllm bench serve result"), ('{"dur', "no complete JSON")],
)
def test_vllm_bad_files_are_one_line_errors(tmp_path: Path, content: str, expected: str):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(UserError) as info:
        import_vllm_json(path)
    assert expected in str(info.value) and str(path) in str(info.value)


def test_import_result_file_tells_the_formats_apart():
    assert import_result_file(SGLANG).provenance.driver == "sglang"
    assert import_result_file(VLLM).provenance.driver == "vllm"
