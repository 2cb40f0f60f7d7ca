"""Preflight's disk check: the plan's expected output against the free space, in one line."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dspark_tui.engine.disk_budget import (
    check_disk,
    expected_output_bytes,
    planned_measurements,
    raw_bytes,
)
from dspark_tui.model import Plan
from dspark_tui.plans import load_plan, resolve_plan
from dspark_tui.results.run_size import run_size_bytes
from tests.cli import run_cli
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
    """A 4 MiB filesystem of our own; skipped where mounting is refused."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


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
