"""Preflight's disk check: the plan's expected output against the free space, in one line."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dspark_tui.engine.checks.disk_budget import (
    check_disk,
    expected_output_bytes,
    planned_measurements,
    raw_bytes,
)
from dspark_tui.model import Plan
from dspark_tui.plans import load_plan, resolve_plan
from dspark_tui.results.run_size import run_size_bytes
from tests.cli import run_cli
from tests.disks import small_tmpfs
from tests.engine.helpers import write_sim_plan


def _demo(**bench: object) -> Plan:
    plan, _ = resolve_plan("demo")
    return plan.model_copy(update={"bench": plan.bench.model_copy(update=bench)})


def test_the_estimate_grows_with_what_the_plan_measures():
    base = expected_output_bytes(_demo())
    assert expected_output_bytes(_demo(rounds=4)) > 1.8 * base - 200_000
    assert expected_output_bytes(_demo(keep_itl=True)) > base  # the kept gaps
    assert expected_output_bytes(_demo(driver="sglang")) > base  # its ITLs and texts as JSON
    assert planned_measurements(_demo()) == 10 * 2 * 2  # cells x rounds x repeats


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB filesystem of our own."""
    with small_tmpfs(tmp_path, "4m") as mount:
        yield mount


def test_a_plan_too_big_for_the_disk_is_one_line_saying_needed_and_free(small_disk: Path):
    root = small_disk / "results" / "not-yet"  # created by the run: measured where it will be
    [line] = check_disk(_demo(), root)
    needed = expected_output_bytes(_demo()) / 1e6
    assert line == (f"not enough disk space: the plan writes about {needed:.1f} MB (40 measurements, "
                    f"logs included) and {small_disk} has 4.2 MB free")
    small, _ = resolve_plan("demo")
    small = small.model_copy(update={"arms": small.arms[:1], "scenarios": small.scenarios[:1],
                                     "bench": small.bench.model_copy(update={"rounds": 1})})
    assert expected_output_bytes(small) < 4_000_000
    assert check_disk(small, root) == []


def test_the_estimate_bounds_a_real_run_and_its_raw_part_is_close(tmp_path: Path, port: int):
    plan_path = write_sim_plan(tmp_path, port, speed=8, warmup=0, rounds=2)
    plan = load_plan(plan_path)
    results = tmp_path / "results"
    done = run_cli("run", str(plan_path), "--headless", "--results", str(results), timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run_dir,) = results.iterdir()
    size = run_size_bytes(run_dir) or 0
    assert size < expected_output_bytes(plan), (size, expected_output_bytes(plan))
    raw = run_size_bytes(run_dir / "raw") or 0
    estimate = sum(raw_bytes(cell, "native", keep_itl=False) for cell in plan.cells()) * 2
    assert 0.5 * estimate < raw <= estimate, (raw, estimate)


def _resume(run_dir: Path, *how: str) -> subprocess.CompletedProcess[str]:
    return run_cli("run", "--resume", str(run_dir), *how, timeout=60)


def test_a_resume_is_checked_on_what_is_left_and_refused_in_one_line_before_anything_starts(
        small_disk: Path):
    from dspark_tui.engine.checks.disk_budget import check_disk_to_resume, measurements_left
    from dspark_tui.engine.checks.setup import prepare_run
    from dspark_tui.results import RunStore

    store = prepare_run(_demo(), small_disk / "results")
    assert store.lock is not None
    store.lock.release()
    run_dir = store.path
    cells, sessions = measurements_left(_demo(), RunStore(run_dir))
    assert len(cells) == 40 and sessions == 2 * 2  # nothing measured yet: arms x rounds
    needed = expected_output_bytes(_demo(), cells, sessions)
    assert needed == expected_output_bytes(_demo())  # all of it is left
    [line] = check_disk_to_resume(_demo(), RunStore(run_dir))
    assert line.startswith("not enough disk space for the 40 measurements left: they write "
                           f"about {needed / 1e6:.1f} MB (logs included) and {run_dir} has ")
    before = sorted(p.name for p in run_dir.iterdir())
    for how in (["--headless"], ["--detach"]):
        done = _resume(run_dir, *how)
        assert done.returncode != 0
        out = (done.stdout + done.stderr).strip()
        assert out.count("\n") == 0 and "not enough disk space for the 40 measurements left" in out, out
        assert "Traceback" not in out
        assert sorted(p.name for p in run_dir.iterdir()) == before, how  # no runner, no log


def test_what_is_left_excludes_the_measurements_saved_ok(tmp_path: Path):
    from dspark_tui.engine.checks.disk_budget import measurements_left
    from dspark_tui.engine.checks.setup import prepare_run
    from dspark_tui.model import CellResult

    plan = _demo()
    store = prepare_run(plan, tmp_path / "results")
    assert store.lock is not None
    store.lock.release()
    for cell in plan.cells():  # round 1, both repeats, saved ok; round 2 untouched
        for repeat in (1, 2):
            store.save_cell(CellResult(arm=cell.key.arm, scenario=cell.key.scenario,
                                       concurrency=cell.key.concurrency, round=1, repeat=repeat))
    cells, sessions = measurements_left(plan, store)
    assert len(cells) == 20 and sessions == 2  # round 2 of both arms
    assert expected_output_bytes(plan, cells, sessions) < 0.6 * expected_output_bytes(plan)
