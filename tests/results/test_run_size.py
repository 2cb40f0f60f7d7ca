"""A run's size for History and `runs`: every file counted, cached by directory mtime, never fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dspark_tui.results import scan_runs
from dspark_tui.results.atomic import atomic_write_text
from dspark_tui.results.run_size import forget_sizes, format_size, run_size_bytes


@pytest.fixture(autouse=True)
def _cold_cache() -> Iterator[None]:
    forget_sizes()
    yield
    forget_sizes()


def _make_run(root: Path, name: str, status: str = "completed") -> Path:
    run = root / name
    (run / "cells" / "st_3").mkdir(parents=True)
    (run / "raw" / "st_3__r1p1").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"name": name, "status": status, "total_cells": 1}))
    (run / "events.jsonl").write_text("x" * 1000)
    (run / "cells" / "st_3" / "chat__c1__r1p1.json").write_text("c" * 300)
    (run / "raw" / "st_3__r1p1" / "chat__c1.jsonl").write_text("r" * 5000)
    return run


def _files_bytes(run: Path) -> int:
    """What `du --apparent-size` counts, less the folders themselves (links as themselves)."""
    return sum(os.lstat(Path(d) / name).st_size for d, folders, files in os.walk(run)
               for name in [*files, *(f for f in folders if (Path(d) / f).is_symlink())])


def _age(run: Path) -> None:
    """Every folder last changed an hour ago: settled enough to be cached."""
    old = time.time() - 3600
    for folder, _, _ in os.walk(run):
        os.utime(folder, (old, old))


def test_the_size_is_every_file_and_a_link_loop_is_only_a_link(tmp_path: Path):
    run = _make_run(tmp_path, "a")
    (run / "raw" / "loop").symlink_to(run)
    link = len(os.readlink(run / "raw" / "loop"))
    expected = 1000 + 300 + 5000 + len((run / "run.json").read_bytes()) + link
    assert run_size_bytes(run) == _files_bytes(run) == expected
    assert run_size_bytes(tmp_path / "missing") is None


def test_a_settled_run_is_counted_again_only_where_a_folder_changed(tmp_path: Path):
    run = _make_run(tmp_path, "a")
    _age(run)
    before = run_size_bytes(run)
    # grown in place, no folder changed: the cache answers (proof that files are not re-read)
    with open(run / "raw" / "st_3__r1p1" / "chat__c1.jsonl", "a") as handle:
        handle.write("more")
    assert run_size_bytes(run) == before
    # a new measurement arrives by rename, as every writer of a settled run writes: seen
    atomic_write_text(run / "cells" / "st_3" / "chat__c1__r2p1.json", "n" * 700)
    assert run_size_bytes(run) == before + 700
    # a running run appends in place: walked in full, never from the cache
    with open(run / "events.jsonl", "a") as handle:
        handle.write("e" * 50)
    assert run_size_bytes(run, settled=False) == _files_bytes(run) == before + 4 + 700 + 50


def test_scan_gives_sizes_only_when_asked(tmp_path: Path):
    run = _make_run(tmp_path, "a")
    assert scan_runs([tmp_path])[0].size_bytes is None
    assert scan_runs([tmp_path], sizes=True)[0].size_bytes == _files_bytes(run)


def test_runs_prints_each_runs_size(tmp_path: Path):
    run = _make_run(tmp_path, "a")
    (run / "raw" / "st_3__r1p1" / "big.jsonl").write_text("b" * 2_000_000)
    done = subprocess.run([sys.executable, "-m", "dspark_tui", "runs", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "DSPARK_RESULTS_ROOT": str(tmp_path / "none")})
    assert done.returncode == 0, done.stderr
    assert format_size(_files_bytes(run)) == "2.0 MB"
    assert "  2.0 MB  completed" in done.stdout, done.stdout


@pytest.mark.parametrize(("size", "shown"), [(None, "?"), (0, "0 B"), (999, "999 B"), (1000, "1.0 kB"),
                                             (12_345_678, "12.3 MB"), (3_000_000_000, "3.0 GB")])
def test_sizes_read_as_people_write_them(size: int | None, shown: str):
    assert format_size(size) == shown


def test_runs_says_a_completed_run_had_user_skips(tmp_path: Path):
    """`runs` words a run's end as History does: completed with 1 of 2 cells ok is a skip."""
    run = _make_run(tmp_path, "a")
    (run / "run.json").write_text(json.dumps({"name": "a", "status": "completed", "total_cells": 2,
                                              "cells_ok": 1}))
    done = subprocess.run([sys.executable, "-m", "dspark_tui", "runs", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "DSPARK_RESULTS_ROOT": str(tmp_path / "none")})
    assert done.returncode == 0, done.stderr
    assert "completed, 1 skipped" in done.stdout, done.stdout
