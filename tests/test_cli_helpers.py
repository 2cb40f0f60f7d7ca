"""tests/cli.py, the helpers the CLI tests share: what each promises them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dspark_tui.model import parse_plan
from tests.cli import run_cli, run_cli_here, slow_cells, wait_for
from tests.engine.helpers import sim_plan_text


def test_run_cli_keeps_a_developers_config_out_unless_a_test_passes_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "config.toml").write_text("language = [\n")  # warned about wherever it is read
    monkeypatch.setenv("DSPARK_CONFIG_DIR", str(tmp_path))  # as a developer's shell might
    quiet = run_cli("plan", "list", timeout=60)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr
    passed = run_cli("plan", "list", timeout=60, env={"DSPARK_CONFIG_DIR": str(tmp_path)})
    assert f"{tmp_path / 'config.toml'}: ignored, not valid TOML" in passed.stderr


def test_run_cli_here_is_run_cli_in_this_process_and_leaves_it_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The same config rule as run_cli; the environment restored after; a write to the file
    descriptor itself captured; a usage error as the interpreter ends on it."""
    (tmp_path / "config.toml").write_text("language = [\n")
    monkeypatch.setenv("DSPARK_CONFIG_DIR", str(tmp_path))
    quiet = run_cli_here("plan", "list")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr
    assert "demo" in quiet.stdout.split()  # the shipped plans, printed
    passed = run_cli_here("plan", "list", env={"DSPARK_CONFIG_DIR": str(tmp_path), "DSPARK_X": "1"})
    assert f"{tmp_path / 'config.toml'}: ignored, not valid TOML" in passed.stderr
    assert os.environ["DSPARK_CONFIG_DIR"] == str(tmp_path) and "DSPARK_X" not in os.environ
    usage = run_cli_here("--no-such-flag")
    assert (usage.returncode, usage.stderr.splitlines()[-1]) == (
        2, "dspark-tui: error: unrecognized arguments: --no-such-flag")


def test_wait_for_returns_once_true_and_names_what_never_came():
    calls = iter([False, False, True])
    wait_for(lambda: next(calls), timeout=5)
    with pytest.raises(AssertionError, match=r"^timed out waiting for the first cell$"):
        wait_for(lambda: False, timeout=0.2, what="the first cell")


def test_slow_cells_is_a_scenario_a_plan_accepts():
    plan = parse_plan(sim_plan_text(8000, cells=slow_cells((1, 5), output_len=64)))
    (scenario,) = plan.scenarios
    assert (scenario.name, scenario.concurrencies, scenario.output_len) == ("slow", [1, 5], 64)
