"""What events.jsonl keeps: every event but CellProgress, thinned to FILE_PROGRESS_EVERY_S a
measurement, its last one always; CellProgress and MetricsSample lines shortened (file_json)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from dspark_tui.engine.run.runner import Runner, prepare_run
from dspark_tui.engine.rundir.event_sink import FILE_PROGRESS_EVERY_S, ProgressThinning
from dspark_tui.model import CellKey, load_plan
from dspark_tui.model import events as ev
from tests.engine.helpers import Recorder, write_sim_plan

LONG_CELL = """[[scenarios]]
name = "long"
input_len = 64
output_len = 1024
concurrencies = [4]
num_prompts = 20
"""
KEY = CellKey(arm="st=3", scenario="chat", concurrency=4)


def _widest_lines(key: CellKey, num_prompts: int) -> tuple[int, int]:
    """The longest CellProgress and MetricsSample lines file_json can write for this cell: every
    field set, numbers as wide as a served rate gets."""
    wide = 1234567.891234
    progress = ev.CellProgress(key=key, completed=num_prompts, total=num_prompts,
                               failed=num_prompts, output_tok_s=wide, ttft_p50_ms=wide,
                               ttft_p99_ms=wide, tpot_p50_ms=wide, tpot_p99_ms=wide, lane=9)
    names = [n for n in ev.MetricsSample.model_fields if n not in ("t", "kind", "arm", "key",
                                                                  "gap", "lane")]
    sample = ev.MetricsSample(arm=key.arm, key=key, lane=9, gap=True, **dict.fromkeys(names, wide))
    return (len(ev.file_json(progress)) + 1, len(ev.file_json(sample)) + 1)  # with the newline


async def test_events_jsonl_stays_under_its_byte_budget_and_keeps_each_last_progress(
        tmp_path: Path, port: int):
    plan = load_plan(write_sim_plan(tmp_path, port, arms=(3,), speed=1, cells=LONG_CELL))
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    seen = Recorder()
    runner.subscribe(seen)
    assert await runner.run() == "completed"
    lines = runner.store.events_path.read_bytes().splitlines(keepends=True)
    events = [ev.parse_event(line) for line in lines]

    # The budget, from the rates set: per measurement of d seconds at most d / FILE_PROGRESS_EVERY_S
    # progress lines plus the first, the final and one held back; a sample every scrape
    # interval plus the window's first and last scrape and one that straddles its start.
    started = {e.key: e.t for e in events if isinstance(e, ev.CellStarted)}
    ended = {e.result.key: e.t for e in events if isinstance(e, ev.CellFinished)}
    durations = [ended[key] - t for key, t in started.items()]
    assert min(durations) > 3, "the cell must be long enough for the rates to matter"
    spec = plan.cells()[0]
    progress_width, sample_width = _widest_lines(spec.key, spec.num_prompts)
    interval = plan.bench.scrape_interval_s
    measured = sum(durations)
    budgets = {"cell_progress": sum((math.floor(d / FILE_PROGRESS_EVERY_S) + 3) * progress_width
                                    for d in durations),
               "metrics_sample": sum((math.floor(d / interval) + 3) * sample_width
                                     for d in durations)}
    written = dict.fromkeys(budgets, 0)
    for line, event in zip(lines, events, strict=True):
        if event.kind in written and getattr(event, "key", None) is not None:
            written[event.kind] += len(line)
    per_s = {kind: f"{written[kind] / measured:.0f} <= {budgets[kind] / measured:.0f} B/s"
             for kind in budgets}
    assert all(written[kind] <= budgets[kind] for kind in budgets), per_s

    # In-process subscribers got more progress than the file keeps; its last one per
    # measurement is in the file, as file_json writes it.
    in_file = [e for e in events if isinstance(e, ev.CellProgress)]
    told = seen.of("cell_progress")
    assert len(told) > len(in_file)
    last_told = told[-1]
    assert last_told.completed + last_told.failed == last_told.total
    assert ev.file_json(in_file[-1]) == ev.file_json(last_told)
    assert [e.kind for e in seen.events if e.kind != "cell_progress"] == [
        e.kind for e in events if e.kind != "cell_progress"]  # every other event, as told


def _progress(t: float, completed: int, total: int = 100, lane: int | None = None) -> ev.CellProgress:
    return ev.CellProgress(t=t, key=KEY, completed=completed, total=total, lane=lane)


def _written(thinning: ProgressThinning, events: list[ev.Event]) -> list[ev.Event]:
    return [w for e in events for w in thinning.for_file(e)]


def test_progress_is_thinned_to_the_file_rate_with_first_and_final_kept():
    thinning = ProgressThinning()
    start = ev.CellStarted(t=0.0, key=KEY, num_prompts=100, index=1, total=1)
    ticks = [_progress(0.2 * i, i) for i in range(1, 50)]  # 5 a second for 10 s
    final = _progress(10.05, 100)
    done = ev.CellFailed(t=10.1, key=KEY, reason="x")  # any end event
    written = _written(thinning, [start, *ticks, final, done])
    progress = [e for e in written if isinstance(e, ev.CellProgress)]
    assert progress[0] is ticks[0] and progress[-1] is final
    gaps = [b.t - a.t for a, b in itertools.pairwise(progress[:-1])]  # the final may come early
    assert all(gap >= FILE_PROGRESS_EVERY_S - 1e-9 for gap in gaps)
    assert len(progress) <= 10 / FILE_PROGRESS_EVERY_S + 2
    assert written[0] is start and written[-1] is done


def test_a_measurement_cut_short_keeps_its_last_progress_before_its_end_event():
    for end in (ev.CellFailed(t=1.0, key=KEY, reason="server died"),
                ev.CellSkipped(t=1.0, key=KEY, reason="skipped"),
                ev.RunFinished(t=1.0, status="interrupted", done=0, failed=0, total=1),
                ev.CellStarted(t=1.0, key=KEY, num_prompts=100, index=2, total=2)):
        thinning = ProgressThinning()
        first, held = _progress(0.0, 1), _progress(0.3, 2)
        assert _written(thinning, [first, held, end]) == [first, held, end]


def test_lanes_are_thinned_apart_and_other_events_pass_untouched():
    thinning = ProgressThinning()
    notice = ev.Notice(t=0.1, message="x")
    one, two = _progress(0.0, 1, lane=1), _progress(0.1, 1, lane=2)
    assert _written(thinning, [one, two, notice]) == [one, two, notice]


def test_file_lines_read_back_as_the_same_kinds_and_fields():
    progress = ev.CellProgress(t=1796152216.1861327, key=KEY, completed=3, total=8, failed=0,
                               output_tok_s=1650.134453351679, tpot_p50_ms=0.5134017594915763)
    sample = ev.MetricsSample(t=5.0, arm="st=3", kv_usage=0.08061, acceptance_rate=0.751086,
                              generation_tok_s=6965.9314095090995)
    assert json.loads(ev.file_json(progress)) == {
        "t": 1796152216.186, "kind": "cell_progress", "key": KEY.model_dump(), "completed": 3,
        "total": 8, "output_tok_s": 1650.134453351679, "tpot_p50_ms": 0.51}
    assert ev.parse_event(ev.file_json(progress)).failed == 0
    assert json.loads(ev.file_json(sample)) == {
        "t": 5.0, "kind": "metrics_sample", "arm": "st=3", "kv_usage": 0.08,
        "generation_tok_s": 6965.9, "acceptance_rate": 0.7511}
    assert ev.parse_event(ev.file_json(sample)).gap is False
    notice = ev.Notice(t=1.123456789, message="x")
    assert ev.file_json(notice) == ev.event_json(notice)  # every other kind as before


def test_a_writers_first_append_ends_a_torn_last_line(tmp_path: Path):
    """A full disk (or a kill mid-write) leaves events.jsonl ending inside a line; the next
    runner's first event goes on a line of its own, so readers lose neither."""
    from dspark_tui.results import RunStore

    first = RunStore(tmp_path)
    first.append_event(ev.Notice(message="before"))
    with open(first.events_path, "ab") as handle:
        handle.write(b'{"kind": "notice", "message": "cut by a full di')
    resumed = RunStore(tmp_path)
    resumed.append_event(ev.Notice(message="resumed"))
    resumed.append_event(ev.Notice(message="again"))
    assert [e.message for e in resumed.read_events()] == ["before", "resumed", "again"]
    assert first.events_path.read_bytes().count(b"\n") == 4  # the torn line ended, no blank line


@pytest.mark.slow
def test_a_resume_after_a_torn_events_file_is_seen_by_watchers(tmp_path: Path, port: int):
    """A run cut off by a full disk mid-line, then resumed: its resume's run_started reads back
    (before, it was appended onto the torn line and both were lost)."""
    from tests.cli import run_cli

    plan = write_sim_plan(tmp_path, port, arms=(3,), warmup=0)
    results = tmp_path / "results"
    first = run_cli("run", str(plan), "--headless", "--results", str(results))
    assert first.returncode == 0, first.stdout + first.stderr
    (run_dir,) = results.iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["status"] = "interrupted"
    (run_dir / "run.json").write_text(json.dumps(manifest))
    sorted((run_dir / "cells").glob("*/*.json"))[-1].unlink()  # one measurement left to make
    events = run_dir / "events.jsonl"
    whole = events.read_bytes()
    events.write_bytes(whole[: whole.rfind(b"\n", 0, len(whole) - 1) + 20])  # cut mid-line
    resumed = run_cli("run", "--resume", str(run_dir), "--headless")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    from dspark_tui.results import RunStore

    kinds = [e.kind for e in RunStore(run_dir).read_events()]
    assert kinds.count("run_started") == 2 and kinds[-1] == "run_finished", kinds
