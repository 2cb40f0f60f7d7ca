"""A deterministic run directory built from the typed events, for replay and snapshot tests.

It stands in for a recorded run: fixed times, fixed numbers, the demo plan's grid, so two
builds produce byte-identical files and snapshots never flicker.
"""

from __future__ import annotations

import os
from pathlib import Path

from dspark_tui.model import CellResult, ClientMetrics, ServerSummary
from dspark_tui.model.events import (
    CellFailed,
    CellFinished,
    CellProgress,
    CellStarted,
    Event,
    MetricsSample,
    RunFinished,
    RunStarted,
    ServerLog,
    ServerStateChanged,
)
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, manifest_for_plan

T0 = 1_780_000_000.0


def _throughput(arm: str, concurrency: int) -> float:
    # st=5 wins at low concurrency, st=3 at high: the seed's shape.
    base = 900.0 * concurrency ** 0.8
    bonus = 1.12 if concurrency < 32 else 0.88
    return round(base * (bonus if arm == "st=5" else 1.0), 2)


def build_events(run_dir: Path, *, stop_after: int | None = None, fail_index: int | None = None,
                 finish: bool = True) -> list[Event]:
    """Events of the demo plan; `stop_after` cells then silence (a live run mid-way)."""
    plan, _ = resolve_plan("demo")
    cells = plan.cells()
    arms = [a.name for a in plan.arms]
    t = T0
    events: list[Event] = [RunStarted(t=t, run_dir=str(run_dir), name=plan.name, arms=arms,
                                      total_cells=len(cells))]
    current_arm = None
    for index, cell in enumerate(cells):
        if stop_after is not None and index >= stop_after:
            break
        key = cell.key
        if key.arm != current_arm:
            if current_arm is not None:
                events.append(ServerStateChanged(t=t, arm=current_arm, state="stopped"))
            current_arm = key.arm
            events.append(ServerStateChanged(t=t, arm=key.arm, state="starting", pid=4242))
            for pct in (25, 50, 100):
                t += 0.5
                events.append(ServerLog(t=t, arm=key.arm,
                                        line=f"Loading safetensors checkpoint shards: {pct}% Completed"))
            events.append(ServerStateChanged(t=t, arm=key.arm, state="warming_up"))
            t += 1
            events.append(ServerStateChanged(t=t, arm=key.arm, state="ready"))
        events.append(CellStarted(t=t, key=key, num_prompts=cell.num_prompts, index=index + 1,
                                  total=len(cells)))
        tok = _throughput(key.arm, key.concurrency)
        for step in range(1, 5):
            t += 1
            done = cell.num_prompts * step // 4
            events.append(CellProgress(t=t, key=key, completed=done, total=cell.num_prompts,
                                       output_tok_s=tok * 0.3 * (0.8 + 0.05 * step),
                                       ttft_p50_ms=40.0 + step, ttft_p99_ms=90.0 + step,
                                       tpot_p50_ms=2.0 + 0.1 * step, tpot_p99_ms=4.0 + 0.1 * step))
            events.append(MetricsSample(t=t, arm=key.arm, key=key, running=min(key.concurrency, 8 * step),
                                        waiting=max(0, key.concurrency - 64), kv_usage=0.1 * step,
                                        acceptance_length=2.0 + 0.1 * step, generation_tok_s=tok * 0.3))
        if fail_index is not None and index == fail_index:
            events.append(CellFailed(t=t, key=key, reason="bench client exited 1: connection reset"))
            continue
        result = CellResult(
            arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
            metrics=ClientMetrics(duration=4.0, completed=cell.num_prompts, total_throughput=tok,
                                  output_throughput=round(tok * 0.3, 2), p99_ttft_ms=95.5,
                                  mean_tpot_ms=2.25, mean_ttft_ms=44.0, request_throughput=2.0),
            server=ServerSummary(samples=4, mean_acceptance_length=2.4 if key.arm == "st=3" else 3.1,
                                 kv_usage_peak=0.4),
        )
        events.append(CellFinished(t=t, result=result))
    else:
        if finish:
            events.append(ServerStateChanged(t=t, arm=current_arm or arms[-1], state="stopped"))
            failed = 1 if fail_index is not None else 0
            events.append(RunFinished(t=t, status="completed", done=len(cells) - failed,
                                      failed=failed, total=len(cells)))
    return events


def write_run(root: Path, *, live: bool = False, started_at: str = "2026-11-29T12:00:00+00:00",
              **kwargs: object) -> Path:
    """A run directory under `root` with run.json, events.jsonl and the finished cells' files.

    `live`: the run claims this test process as its runner (pid + fresh heartbeat), so
    watchers treat it as running while the test appends events.
    """
    plan, source = resolve_plan("demo")
    manifest = manifest_for_plan(plan, source)
    manifest.started_at = started_at
    if live:
        manifest.runner_pid = os.getpid()
    store = RunStore.create(root, manifest)
    if live:
        (store.path / "heartbeat").touch()
    events = build_events(store.path, **kwargs)  # type: ignore[arg-type]
    for event in events:
        store.append_event(event)
        if isinstance(event, CellFinished):
            store.save_cell(event.result)
        if isinstance(event, RunFinished):
            manifest.status = event.status
            store.write_manifest(manifest)
    if not live:
        # A run nobody is writing any more: its log is old, so scans call it interrupted.
        old = T0 - 3600
        os.utime(store.events_path, (old, old))
    return store.path


def append_events(run_dir: Path, events: list[Event]) -> None:
    store = RunStore(run_dir)
    for event in events:
        store.append_event(event)
        if isinstance(event, CellFinished):
            store.save_cell(event.result)
