"""`dspark-tui report RUN_DIR [--lang en] [--stdout]`, run as a user would: the first test as a
subprocess, the others through the same main() in this process, output captured at the file
descriptors (tests/cli.run_cli_here: no Python start each)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.cli import cli_env, run_cli_here
from tests.conftest import REPO, SAMPLE_RUN, SEED_REPORT
from tests.report.markdown_tables import table_after


def dspark(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dspark_tui", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
        env=None if env is None else cli_env(env),
    )


# --stdout prints in the app's language (issue 23): a zh locale here, as the seed's report is.
ZH = {"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
EN = {"LANG": "en_US.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}


def test_report_stdout_prints_the_seeds_tables():
    done = dspark("report", str(SAMPLE_RUN), "--stdout", env=ZH)
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

    done = run_cli_here("report", str(run_dir), "--lang", "en")
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
    done = run_cli_here("report", str(tmp_path / "nowhere"), "--stdout")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [f"dspark-tui: error: {tmp_path / 'nowhere'}: no such run directory"]


def test_report_never_overwrites_a_saved_report_when_run_json_is_unreadable(tmp_path: Path):
    run_dir = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, run_dir)
    saved = (run_dir / "report.md").read_bytes()
    (run_dir / "run.json").write_text("{not json", encoding="utf-8")
    done = run_cli_here("report", str(run_dir))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "run.json: unreadable, so no report is written" in done.stderr
    assert (run_dir / "report.md").read_bytes() == saved


def test_plan_check_masks_the_servers_secrets(tmp_path: Path):
    plan = (REPO / "dspark_tui/plans/demo.toml").read_text(encoding="utf-8")
    plan = plan.replace('"--host", "{host}",', '"--host", "{host}", "--api-key", "sk-plan-check-secret",', 1)
    path = tmp_path / "plan.toml"
    path.write_text(plan, encoding="utf-8")
    done = run_cli_here("plan", "check", str(path))
    assert done.returncode == 0, done.stderr
    # each arm's command is a shell line, where the mask is quoted
    assert "sk-plan-check-secret" not in done.stdout and "--api-key '***'" in done.stdout


def test_report_stdout_follows_the_apps_language_rule():
    """An English locale prints the English report, a Chinese one the Chinese, as the app
    opens; --lang still decides when given."""
    english = run_cli_here("report", str(SAMPLE_RUN), "--stdout", env=EN)
    assert english.returncode == 0, english.stderr
    assert english.stdout == render_en()
    chinese = run_cli_here("report", str(SAMPLE_RUN), "--stdout", env=ZH)
    assert chinese.stdout == (SAMPLE_RUN / "report.md").read_text(encoding="utf-8")
    asked = run_cli_here("report", str(SAMPLE_RUN), "--stdout", "--lang", "zh", env=EN)
    assert asked.stdout == chinese.stdout != english.stdout


def render_en() -> str:
    from dspark_tui.report.markdown import render_report
    from dspark_tui.results import load_run

    return render_report(load_run(SAMPLE_RUN), lang="en")
