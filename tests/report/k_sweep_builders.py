"""K-sweep runs for the decision tests: a plan with K = 0..7 arms (and an optional [traffic]),
measurements made in memory from a small closed-form engine model, with server counters."""

from __future__ import annotations

import atexit
import functools
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dspark_tui.model import CellResult, ClientMetrics, Provenance, ServerSummary, parse_plan
from dspark_tui.model.naming import safe_name
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.native_raw import NativeRaw, RequestTiming, write_native_raw
from dspark_tui.results.store import LoadedRun

# Conditional acceptance per draft position (the simulator's defaults).
ACCEPTANCE = (0.90, 0.85, 0.80, 0.76, 0.72, 0.68, 0.64, 0.60)


def cumulative_acceptance(k: int) -> list[float]:
    out, p = [], 1.0
    for q in ACCEPTANCE[:k]:
        p *= q
        out.append(p)
    return out


def model_throughput(k: int, concurrency: int) -> float:
    """Tokens/s of a batched engine: a step costs max(weights read, verify compute) + drafting;
    each sequence emits its accept length per step."""
    accept = 1.0 + sum(cumulative_acceptance(k))
    step = max(0.0062, 4.0e-5 * concurrency * (k + 1)) + k * (0.00015 + 1.2e-5 * concurrency)
    return 1.5 * concurrency * accept / step  # 1.5: input tokens ride along in Total tok/s


def plan_text(ks: list[int], scenarios: dict[str, list[int]], *, traffic: str = "",
              command_extra: str = "", rounds: int = 3, slo: str = "") -> str:
    lines = [
        'name = "k_sweep"',
        'model = "/models/DeepSeek-V4-Flash-DSpark"',
        'backend_label = "vllm-dspark (TP=8, FP8 KV cache)"',
        "[server]",
        'command = ["vllm", "serve", "{model}", "--port", "{port}", "--tensor-parallel-size", "8",'
        f' {command_extra} "--spec-tokens", "{{spec_tokens}}"]',
        "[bench]",
        'driver = "sglang"',
        f"rounds = {rounds}",
        "adaptive_rounds = 0",
    ]
    for k in ks:
        lines += ["[[arms]]", f'name = "K={k}"', f"vars = {{ spec_tokens = {k} }}"]
    for name, concurrencies in scenarios.items():
        lines += ["[[scenarios]]", f'name = "{name}"', "input_len = 512", "output_len = 256",
                  f"concurrencies = {concurrencies}", "num_prompts = 64"]
    return "\n".join(lines) + "\n" + traffic + slo


Model = Callable[[int, str, int], float]


def k_sweep_run(folder: Path, ks: list[int], scenarios: dict[str, list[int]], *, rounds: int = 3,
                noise: float = 0.002, server: bool = True, traffic: str = "",
                command_extra: str = "", model: Model | None = None,
                running: Callable[[int, str, int], float] | None = None, seed: int = 3,
                status: str = "completed",
                readings: Callable[[int, str, int], int] | None = None, slo: str = "") -> LoadedRun:
    """A run directory (run.json on disk) whose measurements live in memory, as in
    test_verdicts: rounds x arms x cells, a session offset per round and arm, noise per cell."""
    plan = parse_plan(plan_text(ks, scenarios, traffic=traffic, command_extra=command_extra,
                                rounds=rounds, slo=slo))
    folder.mkdir(parents=True, exist_ok=True)
    manifest = manifest_for_plan(plan, plan_source="test")
    manifest.status = status  # a finished sweep unless a test says otherwise
    RunStore(folder).write_manifest(manifest)
    run = load_run(folder)
    rng = np.random.default_rng(seed)
    truth = model or (lambda k, scenario, c: model_throughput(k, c))
    measured: list[CellResult] = []
    for rnd in range(1, rounds + 1):
        for k in ks:
            session = rng.normal(0, noise)
            for scenario, concurrencies in scenarios.items():
                for c in concurrencies:
                    total = truth(k, scenario, c) * math.exp(session + rng.normal(0, noise))
                    measured.append(_cell(k, scenario, c, rnd, total, server,
                                          running(k, scenario, c) if running else c * 0.97,
                                          readings(k, scenario, c) if readings else None))
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == rounds}
    return run


def finished_sweep(run: LoadedRun) -> Path:
    """The sweep as a finished run leaves it for `run --verify`: schedule.json written and
    run.json's status `completed`; its folder."""
    from dspark_tui.analysis.deploy import write_schedule

    assert write_schedule(run) is not None
    store = RunStore(run.path)
    manifest = store.read_manifest()
    manifest.status = "completed"
    store.write_manifest(manifest)
    return run.path


def _cell(k: int, scenario: str, c: int, rnd: int, total: float, server: bool,
          running: float, readings: int | None = None) -> CellResult:
    duration = 20.0
    summary = None
    if server:
        cumulative = cumulative_acceptance(k)
        steps = total / 1.5 * duration / max(running, 1.0) / (1.0 + sum(cumulative))
        drafts = steps * running if k else 0.0
        summary = ServerSummary(
            samples=40,
            drafts=drafts or None,
            draft_tokens=drafts * k if k else None,
            accepted_tokens=drafts * sum(cumulative) if k else None,
            mean_acceptance_length=1.0 + sum(cumulative) if k else None,
            acceptance_rate=sum(cumulative) / k if k else None,
            per_position_acceptance=cumulative,
            running_mean=running,
            running_peak=math.ceil(running * 1.03),
            running_samples=readings,
            kv_usage_peak=0.3,
        )
    return CellResult(arm=f"K={k}", scenario=scenario, concurrency=c, round=rnd,
                      session=f"K={k}-r{rnd}",
                      metrics=ClientMetrics(total_throughput=total, duration=duration, completed=64),
                      server=summary)


def stated_cells(truth: dict[str, dict[int, float]], scenario: str, rounds: int = 3,
                 seed: int = 3) -> list[CellResult]:
    """Measurements of a stated truth (arm -> concurrency -> Total tok/s): each arm's session
    and each cell 0.2 % log-normal noise, rounds in order, arms in the truth's order."""
    rng = np.random.default_rng(seed)
    measured = []
    for rnd in range(1, rounds + 1):
        for arm, by_c in truth.items():
            session = rng.normal(0, 0.002)
            for c, total in by_c.items():
                measured.append(CellResult(
                    arm=arm, scenario=scenario, concurrency=c, round=rnd, session=f"{arm}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=total * math.exp(session + rng.normal(0, 0.002)),
                                          duration=20.0, completed=64)))
    return measured


def stated_sweep(folder: Path, truth: dict[str, dict[int, float]], plan: str = "demo-slo",
                 scenario: str = "mixed") -> Path:
    """A completed run directory of the shipped `plan` (demo-slo: K=1, 3, 6 and "K=6
    adaptive") whose measurements are `truth`'s (stated_cells); cells the truth leaves out
    are not measured."""
    from dspark_tui.plans import resolve_plan

    folder.mkdir(parents=True)
    manifest = manifest_for_plan(resolve_plan(plan)[0], plan_source=plan)
    manifest.status = "completed"
    store = RunStore(folder)
    store.write_manifest(manifest)
    for cell in stated_cells(truth, scenario):
        store.save_cell(cell)
    return folder


REQUESTS, TOKENS = 64, 768  # a cell's requests: 512 tokens in, 256 out


# The raw files, written by the product's writer once per process and content, then copied (the
# same bytes): an SLO sweep has 144, each an atomic write with two fsyncs, and test_slo_choice's
# sweeps asked for ~4,800 fsyncs, which a busy disk made about a third of its wall time.
@functools.cache
def _cache_dir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="slo_raw_cache_"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def _raw_file(seconds: float, gap: float) -> Path:
    """A raw file of REQUESTS requests over `seconds`: each a TTFT of 0.1 s, then 255 tokens
    `gap` seconds apart."""
    timings = [RequestTiming(index=i, input_tokens=512, requested_output_tokens=256,
                             output_tokens=256, start_s=0.0, ttft_s=0.1, e2e_s=0.1 + 255 * gap,
                             usage_reported=True, itl_count=255) for i in range(REQUESTS)]
    path = _cache_dir() / f"{seconds!r}_{gap!r}.jsonl"
    write_native_raw(path, NativeRaw(timings, seconds, None, 0))
    return path


def with_native_raw(folder: Path, run: LoadedRun, tpot_ms: Callable[[str], float]) -> LoadedRun:
    """`run` with a native raw file for each measurement, as the latency and goodput answers read
    them: every request TTFT 0.1 s, then 255 tokens `tpot_ms(arm)` apart; the client's p90 TPOT
    moves with the session as Total tok/s does (the latency verdicts read it)."""
    with_raw = []
    for m in run.measurements:
        total = m.total_throughput
        assert total is not None
        seconds = REQUESTS * TOKENS / total
        gap = tpot_ms(m.arm) / 1000.0
        relative = f"raw/{safe_name(m.arm)}__r{m.round}p1/{m.scenario}__c{m.concurrency}.jsonl"
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_raw_file(seconds, gap), folder / relative)
        metrics = m.metrics.model_copy(update={"p90_tpot_ms": 5.0 * 1e5 / total})
        with_raw.append(m.model_copy(update={
            "metrics": metrics, "provenance": Provenance(driver="native", raw_output=relative)}))
    last = max(m.round for m in with_raw)
    run.measurements = with_raw
    run.cells = {m.key: m for m in with_raw if m.round == last}
    return run
