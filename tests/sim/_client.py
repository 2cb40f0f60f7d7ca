"""Small HTTP helpers for the simulator tests: read SSE streams the way clients do."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families


@dataclass
class Streamed:
    events: list[str] = field(default_factory=list)

    @property
    def payloads(self) -> list[dict]:
        return [json.loads(e) for e in self.events if e != "[DONE]"]

    @property
    def content_chunks(self) -> list[dict]:
        return [p for p in self.payloads if p["choices"]]


def stream(url: str, path: str, body: dict, timeout: float = 10) -> Streamed:
    result = Streamed()
    with httpx.stream("POST", url + path, json=body, timeout=timeout) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                result.events.append(line[len("data: "):])
            else:
                assert line == "", line
    return result


def metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return values


def metric_sum(text: str, name: str) -> float:
    return sum(v for (n, _), v in metric_values(text).items() if n == name)


def mean_accept_length(text: str) -> float:
    drafts = metric_sum(text, "vllm:spec_decode_num_drafts_total")
    accepted = metric_sum(text, "vllm:spec_decode_num_accepted_tokens_total")
    return 1 + accepted / drafts
