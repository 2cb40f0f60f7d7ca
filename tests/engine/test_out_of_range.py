"""Numbers out of range and nesting too deep, in every file the tool reads (cells, run.json, plans,
config.toml), are one line naming the key: never an OverflowError, a RecursionError or a hang.
`plan check` answers within seconds whatever the plan's numbers, and names a simulator flag the
simulator would refuse instead of printing its usage."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from dspark_tui.model import PlanError, numbers, parse_plan
from dspark_tui.results import RunStore
from tests.cli import run_cli, run_cli_here
from tests.conftest import SAMPLE_RUN
from tests.engine.helpers import sim_plan_text

HUGE = "1" + "0" * 400


def _huge_cell(root: Path) -> tuple[Path, Path]:
    run = root / "huge"
    shutil.copytree(SAMPLE_RUN, run)
    cell = sorted((run / "cells").glob("*/*.json"))[0]
    cell.write_text(re.sub(r'"completed": \d+', f'"completed": {HUGE}', cell.read_text(), count=1))
    return run, cell


def test_a_cell_with_completed_10_to_the_400_is_one_problem(tmp_path: Path):
    run, cell = _huge_cell(tmp_path)
    measurements, problems = RunStore(run).load_measurements()
    assert len(measurements) == 35
    assert [(p.path, p.reason) for p in problems] == [
        (str(cell.relative_to(run)), "invalid cell (a number out of range (beyond ±2^53): "
                                     "10000000000000000000…); skipped")]


def test_numbers_in_range_and_nesting_bounded():
    assert numbers.loads(b'{"a": [1, 2.5, -9007199254740992]}') == {"a": [1, 2.5, -(2**53)]}
    for raw in (f'{{"a": {HUGE}}}', '{"a": 1e400}', '{"a": 9007199254740993}', "[" * 5000 + "]" * 5000,
                "[" * 65 + "]" * 65, "1" * 5000):
        with pytest.raises(ValueError, match=r"out of range|nested deeper than 64 levels"):
            numbers.loads(raw)


@pytest.mark.parametrize(("change", "said"), [
    (("num_prompts = 4", f"num_prompts = {HUGE}"),
     ':30: scenarios["chat"].num_prompts: out of range (beyond ±2^53), got 10000000000000000000…'),
    (("cell_timeout_s = 30", "cell_timeout_s = 1e400"),
     ":19: bench.cell_timeout_s: out of range (beyond ±2^53), got inf"),
    (("concurrencies = [1, 4]", f"concurrencies = [1, {HUGE}]"),
     ':29: scenarios["chat"].concurrencies: out of range (beyond ±2^53), got 10000000000000000000…'),
    (("[bench]", "x = " + "[" * 5000 + "]" * 5000 + "\n[bench]"),
     ": not a plan: arrays or tables nested deeper than 64 levels"),
])
def test_a_plan_with_a_number_out_of_range_or_nested_too_deep_is_one_line(change: tuple[str, str],
                                                                          said: str):
    text = sim_plan_text(8000, arms=(3,))
    assert change[0] in text
    with pytest.raises(PlanError) as caught:
        parse_plan(text.replace(*change), "plan.toml")
    assert str(caught.value) == f"plan.toml{said}"


def test_every_command_names_a_number_out_of_range_in_one_line(tmp_path: Path, port: int):
    run, cell = _huge_cell(tmp_path / "results")
    warning = (f"dspark-tui: warning: {cell}: invalid cell (a number out of range (beyond ±2^53): "
               "10000000000000000000…); skipped\n")
    for args in (("report", str(run), "--stdout"), ("report", str(run), "--json")):
        done = run_cli_here(*args)
        assert (done.returncode, done.stderr) == (0, warning), args
    listed = run_cli_here("runs", "--results", str(tmp_path / "results"))
    assert listed.returncode == 0 and "Traceback" not in listed.stderr

    config = tmp_path / "config.toml"
    config.write_text("theme = " + "[" * 3000 + "]" * 3000 + "\n")
    deep = run_cli_here("--config", str(config), "runs", "--results", str(tmp_path / "results"))
    assert deep.returncode == 0
    assert deep.stderr == (f"dspark-tui: warning: {config}: ignored, arrays or tables nested deeper "
                           "than 64 levels; using defaults\n")
    config.write_text(f"theme = {HUGE}\n")
    huge = run_cli_here("--config", str(config), "runs", "--results", str(tmp_path / "results"))
    assert huge.returncode == 0 and huge.stderr == (
        f"dspark-tui: warning: {config}: key 'theme' ignored, out of range (beyond ±2^53), "
        "got 10000000000000000000…\n")


@pytest.mark.slow
def test_plan_check_answers_in_seconds_whatever_the_plan_says(tmp_path: Path, port: int):
    text = sim_plan_text(port, arms=(3,))
    cases = {
        "huge": (text.replace("input_len = 64", f"input_len = {2**53 - 1}")
                 .replace("num_prompts = 4", f"num_prompts = {2**53 - 1}")),
        "long": text.replace("output_len = 32", "output_len = 20000")
                    .replace("num_prompts = 4", "num_prompts = 100000"),
        "flag": text.replace("spec_tokens = 3", 'spec_tokens = "abc"'),
    }
    said = {}
    for name, body in cases.items():
        plan = tmp_path / f"{name}.toml"
        plan.write_text(body)
        started = time.monotonic()
        done = run_cli("plan", "check", str(plan), timeout=90)
        said[name] = (done.returncode, done.stdout.splitlines()[-1:], done.stderr)
        assert time.monotonic() - started < 60 and "Traceback" not in done.stderr, name
    assert said["huge"] == (0, ["wall time: not estimated (st=3/chat/c1: a request of up to "
                                "9,007,199,254,740,991 + 32 tokens exceeds the simulator's "
                                "65,536)"], "")
    assert said["long"][:2] == (0, ["wall time (rough, from the simulator's model; no HTTP or "
                                    "warmup): about " + said["long"][1][0].split("about ")[-1]])
    assert said["flag"][0] == 2 and said["flag"][2] == (
        f'dspark-tui: error: {tmp_path / "flag.toml"}: arms["st=3"].vars.spec_tokens: the '
        "simulator would refuse it: argument --spec-tokens: invalid int value: 'abc'\n")

    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    for plan, kind in ((fifo, "a FIFO"), (zero, "a character device")):
        done = run_cli("plan", "check", str(plan), timeout=60)
        assert (done.returncode, done.stderr) == (
            2, f"dspark-tui: error: {plan}: cannot read the plan (not a regular file ({kind}))\n")


def test_the_estimate_models_a_big_cell_over_fewer_prompts():
    from dspark_tui.sim.estimate import estimate_plan

    text = sim_plan_text(8000, arms=(3,), speed=1)
    small = estimate_plan(parse_plan(text.replace("num_prompts = 4", "num_prompts = 64")))
    big = estimate_plan(parse_plan(text.replace("num_prompts = 4", "num_prompts = 64000000")))
    assert small is not None and big is not None
    for cell, seconds in small.cell_s.items():  # a steady closed loop: time grows with prompts
        assert 0.5e6 < big.cell_s[cell] / seconds < 2e6
    assert json.dumps(sorted(big.cell_s))  # every cell estimated
