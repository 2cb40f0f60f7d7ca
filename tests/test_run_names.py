"""A run given by the name `dspark-tui runs` prints, or a unique prefix, wherever a run directory
is taken (report, ctl, attach, --resume, --verify): the real CLI's main(), real directories (in
this process: tests/cli.run_cli_here; none of these commands starts anything)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli import run_cli_here
from tests.conftest import SAMPLE_RUN


def _results(tmp_path: Path, *names: str) -> dict[str, str]:
    results = tmp_path / "results"
    results.mkdir()
    for name in names:
        shutil.copytree(SAMPLE_RUN, results / name)
    return {"DSPARK_CONFIG_DIR": str(tmp_path / "cfg"), "DSPARK_RESULTS_ROOT": str(results)}


def test_report_takes_a_run_name_and_a_unique_prefix(tmp_path: Path):
    env = _results(tmp_path, "demo_20261201-101010", "sweep_20261201-111111")
    by_name = run_cli_here("report", "demo_20261201-101010", "--stdout", "--lang", "en", env=env)
    assert by_name.returncode == 0, by_name.stderr
    by_prefix = run_cli_here("report", "swe", "--stdout", "--lang", "en", env=env)
    assert by_prefix.returncode == 0 and by_prefix.stdout == by_name.stdout, by_prefix.stderr


@pytest.mark.parametrize(("args", "says"), [
    (("report", "demo_2026"), "demo_2026: 2 runs match (demo_20261201-101010, demo_20261202-090909); "
                              "give more of the name or a path"),
    (("ctl", "nothing", "pause"), "nothing: no such run directory, nor a run of that name in "),
    (("run", "--resume", "nothing", "--headless"), "nothing: no such run directory, nor a run "),
])
def test_an_ambiguous_or_unknown_name_is_one_line(tmp_path: Path, args: tuple[str, ...], says: str):
    env = _results(tmp_path, "demo_20261201-101010", "demo_20261202-090909")
    done = run_cli_here(*args, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"dspark-tui: error: {says}"), done.stderr


def test_ctl_finds_the_run_by_name(tmp_path: Path):
    env = _results(tmp_path, "demo_20261201-101010")
    done = run_cli_here("ctl", "demo_2026", "pause", env=env)
    assert done.stderr.startswith(f"dspark-tui: error: {tmp_path / 'results' / 'demo_20261201-101010'}: "
                                  "the run has completed"), done.stderr


def test_runs_has_a_header_fits_80_columns_and_prints_names_the_commands_take(tmp_path: Path):
    import json

    env = _results(tmp_path, "k_sweep_20261201-101010")
    manifest_path = tmp_path / "results" / "k_sweep_20261201-101010" / "run.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["arms"] = [{"name": f"K={k}"} for k in range(7)]
    manifest_path.write_text(json.dumps(manifest))
    listed = run_cli_here("runs", env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "ARMS", "CELLS", "SIZE", "STATUS"]
    assert max(map(len, lines[:-1])) <= 80, listed.stdout
    name = next(line for line in lines if line.startswith("k_sweep")).split()[0]
    assert "the run has completed" in run_cli_here("ctl", name, "pause", env=env).stderr
