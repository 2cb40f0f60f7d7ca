"""Command-line options: vLLM's flags accepted and applied, the simulator's own knobs."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import time

import httpx
import pytest

from tests.sim._client import metric_sum, stream
from tests.simulator import refusal_line, running_sim


def test_real_command_template_flags_are_accepted_and_applied():
    spec = '{"method": "mtp", "num_speculative_tokens": 5}'
    with running_sim("--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8",
                     "--speculative-config", spec, "--spec-method", "mtp",
                     "--gpu-memory-utilization", "0.9", "--trust-remote-code",
                     "--max-model-len", "32768", "--served-model-name", "dspark", "extra",
                     "--some-future-flag", "7", "--api-key", "sk-SECRET1",
                     "--hf-token", "hf_SECRET2", spec_tokens=None) as sim:
        assert httpx.get(sim.url + "/v1/models").json()["data"][0]["id"] == "dspark"
        stream(sim.url, "/v1/completions",
               {"model": "dspark", "prompt": "x", "max_tokens": 30, "stream": True})
        text = sim.metrics_text()
        assert 'position="4"' in text and 'position="5"' not in text
        assert 'cache_dtype="fp8"' in text
        log = sim.log_text()
        assert "Ignoring unknown arguments: --some-future-flag 7" in log
        assert "SECRET" not in log


def test_max_num_seqs_queues_the_rest():
    with running_sim("--max-num-seqs", "2", speed=1) as sim, httpx.Client(timeout=10) as client:
        body = {"prompt": "x", "max_tokens": 400, "ignore_eos": True}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(client.post, sim.url + "/v1/completions", json=body)
                       for _ in range(4)]
            # Until the server holds all four (a fixed 0.3 s was too short on a loaded box:
            # the posting threads had not all sent). 400 tokens at --speed 1 take seconds.
            deadline = time.monotonic() + 10
            while True:
                text = sim.metrics_text()
                held = (metric_sum(text, "vllm:num_requests_running")
                        + metric_sum(text, "vllm:num_requests_waiting"))
                if held >= 4 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert metric_sum(text, "vllm:num_requests_running") == 2
            assert metric_sum(text, "vllm:num_requests_waiting") == 2
            assert all(f.result().status_code == 200 for f in futures)


def test_bad_command_line_is_one_line_and_exit_2():
    assert "--speculative-config" in refusal_line("--speculative-config", "{nope")


def test_k_0_in_a_speculative_config_is_refused_as_vllm_refuses_it():
    """vLLM 0.32: `"num_speculative_tokens": 0` is "Input should be greater than 0"; K = 0 is no
    speculative flag at all. The simulator took it as no speculation (issue 21)."""
    line = refusal_line("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 0}')
    assert "num_speculative_tokens must be greater than 0" in line, line


def test_a_port_out_of_range_is_one_line_and_exit_2():
    result = subprocess.run([sys.executable, "-m", "dspark_tui", "sim", "serve", "m", "--port", "99999"],
                            capture_output=True, text=True, timeout=20)
    assert (result.returncode, result.stderr) == (
        2, "dspark-tui sim: error: --port must be 0-65535, got 99999\n")


def test_eos_ends_requests_early_unless_ignored():
    with running_sim("--eos-mean-tokens", "5") as sim:
        body = {"prompt": "x", "max_tokens": 300}
        early = [httpx.post(sim.url + "/v1/completions", json=body).json() for _ in range(5)]
        assert all(r["choices"][0]["finish_reason"] == "stop" for r in early)
        assert all(r["usage"]["completion_tokens"] < 300 for r in early)
        full = httpx.post(sim.url + "/v1/completions", json={**body, "ignore_eos": True}).json()
        assert full["usage"]["completion_tokens"] == 300
        assert full["choices"][0]["finish_reason"] == "length"


def test_dspark_tui_sim_entry_point_reaches_the_simulator():
    result = subprocess.run(
        [sys.executable, "-m", "dspark_tui", "sim", "serve", "m", "--port", "1", "--fail-start"],
        capture_output=True, text=True, timeout=20)
    assert result.returncode == 1
    assert "EngineCore failed to start" in result.stdout


def test_spec_tokens_0_is_a_plain_decoder():
    with running_sim(spec_tokens=0) as sim:
        result = stream(sim.url, "/v1/completions",
                        {"prompt": "x", "max_tokens": 12, "stream": True, "ignore_eos": True})
        assert len(result.content_chunks) >= 2
        text = sim.metrics_text()
        assert metric_sum(text, "vllm:generation_tokens_total") == 12
        assert metric_sum(text, "vllm:spec_decode_num_drafts_total") == 0


def test_a_config_field_without_its_flag_fails_at_start_not_by_its_default():
    """The configs take each field from the flag of its name (sim/cli._from_flags): a flag
    renamed away from its field would serve the default in silence, so it fails (review)."""
    import argparse
    import dataclasses

    from dspark_tui.sim import cli

    @dataclasses.dataclass
    class Costs:
        max_num_seqs: int = 1
        renamed_away: float = 0.5

    args = argparse.Namespace(max_num_seqs=8)
    with pytest.raises(AttributeError, match=r"Costs\.renamed_away has no --renamed-away flag"):
        cli._from_flags(Costs, args)
    assert cli._from_flags(Costs, args, renamed_away=0.25) == Costs(8, 0.25)
