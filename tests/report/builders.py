"""Small run builders for the report tests: real files through RunStore, synthetic numbers."""

from __future__ import annotations

import math
from pathlib import Path

from dspark_tui.model import CellResult, CellStatus, ClientMetrics, ServerSummary, parse_plan
from dspark_tui.results import RunStore, manifest_for_plan
from dspark_tui.results.manifest import RunManifest


def plan_text(arms: dict[str, int], scenarios: dict[str, tuple[int, int, list[int]]]) -> str:
    lines = [
        'name = "synthetic"',
        'model = "/models/test-model"',
        'backend_label = "vllm-dspark (TP=8, FP8 KV cache)"',
        "[server]",
        'command = ["vllm", "serve", "{model}", "--port", "{port}", "--spec-tokens", "{spec_tokens}"]',
        "[bench]",
        'driver = "sglang"',
        "warmup_requests = 10",
    ]
    for name, value in arms.items():
        lines += ["[[arms]]", f'name = "{name}"', f"vars = {{ spec_tokens = {value} }}"]
    for name, (input_len, output_len, concurrencies) in scenarios.items():
        lines += [
            "[[scenarios]]",
            f'name = "{name}"',
            f"input_len = {input_len}",
            f"output_len = {output_len}",
            f"concurrencies = {concurrencies}",
            "num_prompts = 64",
        ]
    return "\n".join(lines) + "\n"


def manifest(arms: dict[str, int], scenarios: dict[str, tuple[int, int, list[int]]]) -> RunManifest:
    return manifest_for_plan(parse_plan(plan_text(arms, scenarios)), plan_source="test")


def model_cell(
    arm: str,
    spec_tokens: int,
    scenario: str,
    concurrency: int,
    *,
    server: bool = False,
    bias: float = 1.0,
) -> CellResult:
    """A made-up but self-consistent cell: more speculative tokens help at low concurrency
    and hurt at high concurrency (as in the seed), scaled by `bias`."""
    base = 1000.0 * concurrency ** 0.8
    effect = 1.0 + 0.02 * (spec_tokens - 3) * (4.0 - math.log2(concurrency)) / 4.0
    total = base * effect * bias
    metrics = ClientMetrics(
        duration=20.0,
        completed=64,
        request_throughput=3.2,
        output_throughput=total / 3,
        total_throughput=total,
        mean_e2e_latency_ms=1000.0 / effect,
        p95_e2e_latency_ms=1500.0 / effect,
        p99_e2e_latency_ms=2000.0 / effect,
        mean_ttft_ms=100.0,
        p99_ttft_ms=300.0,
        mean_tpot_ms=10.0 / effect,
        p99_tpot_ms=20.0 / effect,
    )
    summary = None
    if server:
        summary = ServerSummary(
            samples=20,
            mean_acceptance_length=1.0 + 0.55 * spec_tokens,
            acceptance_rate=0.55,
            kv_usage_peak=min(0.99, 0.01 * concurrency * spec_tokens / 3),
            preemptions=float(max(0, concurrency - 64) * (spec_tokens - 2)),
            running_peak=float(concurrency),
            waiting_peak=0.0,
        )
    return CellResult(arm=arm, scenario=scenario, concurrency=concurrency, metrics=metrics,
                      server=summary)


def failed_cell(arm: str, scenario: str, concurrency: int, reason: str) -> CellResult:
    return CellResult(arm=arm, scenario=scenario, concurrency=concurrency,
                      status=CellStatus.FAILED, error=reason)


def write_run(
    folder: Path,
    arms: dict[str, int],
    scenarios: dict[str, tuple[int, int, list[int]]],
    *,
    server: bool = False,
    skip: set[tuple[str, str, int]] = frozenset(),  # type: ignore[assignment]
) -> RunStore:
    store = RunStore(folder)
    folder.mkdir(parents=True, exist_ok=True)
    store.write_manifest(manifest(arms, scenarios))
    for arm, value in arms.items():
        for name, (_, _, concurrencies) in scenarios.items():
            for c in concurrencies:
                if (arm, name, c) not in skip:
                    store.save_cell(model_cell(arm, value, name, c, server=server))
    return store
