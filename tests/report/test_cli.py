"""`dspark-tui report RUN_DIR [--lang en] [--stdout]`, run as a user would: a subprocess."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, SAMPLE_RUN, SEED_REPORT
from tests.report.markdown_tables import table_after


def dspark(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dspark_tui", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )


def test_report_stdout_prints_the_seeds_tables():
    done = dspark("report", str(SAMPLE_RUN), "--stdout")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    seed = SEED_REPORT.read_text(encoding="utf-8")
    for heading in ("## 核心指标对比", "## 吞吐 winner 统计"):
        assert table_after(done.stdout, lambda line, h=heading: line == h) == table_after(
            seed, lambda line, h=heading: line == h
        )
    assert done.stdout == (SAMPLE_RUN / "report.md").read_text(encoding="utf-8")


def test_report_writes_the_english_file_and_warns_about_bad_cells(tmp_path: Path):
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, run_dir)
    (run_dir / "report.md").unlink()
    broken = run_dir / "cells/st_3/decode_heavy__c1__r1p1.json"
    broken.write_text('{"schema_version": 1, "arm": "st', encoding="utf-8")

    done = dspark("report", str(run_dir), "--lang", "en")
    assert done.returncode == 0, done.stderr
    written = run_dir / "report.en.md"
    assert done.stdout.strip() == str(written)
    assert done.stderr.strip() == (
        f"dspark-tui: warning: {broken}: truncated or not JSON; skipped"
    )
    text = written.read_text(encoding="utf-8")
    assert "## Core metrics" in text
    assert "- `st=3` / `decode_heavy` / c=1: missing (no result file)" in text
    assert not (run_dir / "report.md").exists()


def test_report_on_a_missing_directory_is_one_line_without_traceback(tmp_path: Path):
    done = dspark("report", str(tmp_path / "nowhere"), "--stdout")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [f"dspark-tui: error: {tmp_path / 'nowhere'}: no such run directory"]
