"""Plan files: the shipped plans expand to the expected grids; mistakes are one clear line."""

import subprocess
import sys
from pathlib import Path

import pytest

from dspark_tui.model import PlanError, parse_plan
from dspark_tui.plans import resolve_plan, shipped_plan_names

GOOD = """
name = "t"
model = "m"
[server]
command = ["vllm", "serve", "{model}", "--spec-tokens", "{spec_tokens}"]
[[arms]]
name = "st=3"
vars = { spec_tokens = 3 }
[[arms]]
name = "st=5"
vars = { spec_tokens = 5 }
[[scenarios]]
name = "a"
input_len = 10
output_len = 5
concurrencies = [1, 8]
num_prompts = { per_concurrency = 4, min = 8, max = 16 }
"""


def test_shipped_plans_are_valid():
    assert {"demo", "dspark-st3-vs-st5"} <= set(shipped_plan_names())
    for name in shipped_plan_names():
        plan, _ = resolve_plan(name)
        assert len(plan.arms) >= 2


def test_seed_plan_has_the_seed_grid():
    plan, _ = resolve_plan("dspark-st3-vs-st5")
    cells = plan.cells()
    assert len(cells) == 36
    assert [c.key.arm for c in cells[:18]] == ["st=3"] * 18  # arm-major
    prompts = {(c.key.scenario, c.key.concurrency): c.num_prompts for c in cells}
    assert prompts[("chat_short", 1)] == 32
    assert prompts[("chat_short", 64)] == 512
    assert prompts[("long_context_probe", 4)] == 32
    assert prompts[("stress_standard", 128)] == 1024
    assert plan.server_argv(plan.arms[1])[-2:] == ["--spec-tokens", "5"]
    assert plan.flag_for("spec_tokens") == "--spec-tokens"


def test_num_prompts_rule_clamps():
    plan = parse_plan(GOOD)
    assert [c.num_prompts for c in plan.cells()] == [8, 16, 8, 16]


def test_json_braces_in_command_pass_through():
    text = GOOD.replace(
        '"--spec-tokens", "{spec_tokens}"',
        '"--speculative-config", \'{"num_speculative_tokens": {spec_tokens}}\'',
    )
    plan = parse_plan(text)
    assert plan.server_argv(plan.arms[0])[-1] == '{"num_speculative_tokens": 3}'


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("input_len = 10", 'input_len = "ten"'), "plan.toml:14: scenarios[\"a\"].input_len: "),
        (("output_len = 5", "output_len = 5\nbogus = 1"),
         "plan.toml:16: scenarios[\"a\"].bogus: unknown key"),
        (("output_len = 5\n", ""), "scenarios[\"a\"].output_len: required key is missing"),
        (('name = "st=5"', 'name = "st=3"'), "arms: the name 'st=3' is used twice"),
        (("vars = { spec_tokens = 5 }", "vars = { other = 5 }"), "arm 'st=5' sets no vars.spec_tokens"),
        (("concurrencies = [1, 8]", "concurrencies = []"), "scenarios[\"a\"].concurrencies"),
        (('name = "t"', 'name = "t"\narms = []'), "not valid TOML"),
        (("vars = { spec_tokens = 5 }", "vars = { spec_tokens = 5 }\ncells = { b = [1] }"),
         "arm 'st=5': cells names 'b', which is no scenario of the plan"),
        (("vars = { spec_tokens = 5 }", "vars = { spec_tokens = 5 }\ncells = { a = [2] }"),
         "arm 'st=5': cells.a lists concurrency 2, which is not in scenario 'a'"),
        (("vars = { spec_tokens = 5 }", "vars = { spec_tokens = 5 }\ncells = { a = [] }"),
         "cells lists no concurrency"),
    ],
)
def test_bad_plans_give_one_line(change, expected):
    message = _refusal(*change)
    assert "\n" not in message
    assert expected in message


def _refusal(old: str, new: str) -> str:
    """Why GOOD with `old` replaced by `new` is refused, as PlanError says it."""
    assert old in GOOD
    with pytest.raises(PlanError) as info:
        parse_plan(GOOD.replace(old, new, 1), "plan.toml")
    return str(info.value)


def test_empty_arms_is_an_error():
    text = GOOD.split("[[arms]]")[0] + GOOD.split("vars = { spec_tokens = 5 }")[1]
    text = text.replace('[server]', 'arms = []\n[server]')
    with pytest.raises(PlanError, match="arms"):
        parse_plan(text, "p.toml")


def test_cli_plan_check_prints_cell_count():
    out = subprocess.run(
        [sys.executable, "-m", "dspark_tui", "plan", "check", "dspark-st3-vs-st5"],
        capture_output=True, text=True, check=True,
    ).stdout
    lines = out.splitlines()
    assert "36 cells" in lines
    # then the cost: 2 arms x 18 cells, 3 rounds planned, 2 adaptive more at most (the default)
    assert "cell runs: 108 planned, at most 180" in lines


def test_cli_bad_plan_is_one_line_no_traceback(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("input_len = 10", "input_len = -1"))
    proc = subprocess.run(
        [sys.executable, "-m", "dspark_tui", "plan", "check", str(bad)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert f'{bad}:14: scenarios["a"].input_len' in proc.stderr


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # TOML has real numbers: a quoted one is a mistake, named, never converted
        (("input_len = 10", 'input_len = "128"'),
         'plan.toml:14: scenarios["a"].input_len: Input should be a valid integer, got \'128\''),
        (("[server]", "[server]\nport = \"8000\""), "plan.toml:5: server.port: "),
        (("[[scenarios]]", "[bench]\nrounds = 2.0\n[[scenarios]]"), "bench.rounds: "),
        # one problem, though pydantic tries every member of the union
        (("num_prompts = { per_concurrency = 4, min = 8, max = 16 }", 'num_prompts = "128"'),
         'plan.toml:17: scenarios["a"].num_prompts: Input should be a valid integer, got \'128\' '
         "(write numbers and true/false without quotes)"),
        # the scenario by name, and the num_prompts line rather than the [[scenarios]] one
        (("num_prompts = { per_concurrency = 4, min = 8, max = 16 }", "num_prompts = 0"),
         'plan.toml:17: scenarios["a"].num_prompts: must be ≥ 1'),
        (("num_prompts = { per_concurrency = 4, min = 8, max = 16 }", "num_prompts = [4, 0]"),
         'plan.toml:17: scenarios["a"].num_prompts: every count must be ≥ 1'),
        (("num_prompts = { per_concurrency = 4, min = 8, max = 16 }", "num_prompts = [4]"),
         'plan.toml:17: scenarios["a"].num_prompts: lists 1 counts for 2 concurrencies'),
        (('name = "st=5"', f'name = "{"x" * 300}"'),
         f'plan.toml:10: arms["{"x" * 31}…"].name: String should have at most 100 characters'),
        (('name = "a"', f'name = "{"s" * 101}"'), f'plan.toml:13: scenarios["{"s" * 31}…"].name: '),
        (('name = "t"', f'name = "{"t" * 81}"'), "plan.toml:2: name: String should have at most 80"),
    ],
)
def test_strict_values_and_named_keys(change, expected):
    message = _refusal(*change)
    assert "\n" not in message and "more problem" not in message
    assert expected in message


def test_names_at_the_limit_pass():
    text = GOOD.replace('name = "st=5"', f'name = "{"x" * 100}"')
    text = text.replace('name = "a"', f'name = "{"s" * 100}"')
    plan = parse_plan(text.replace('name = "t"', f'name = "{"t" * 80}"'))
    assert len(plan.arms[1].name) == len(plan.scenarios[0].name) == 100
    assert len(plan.name) == 80


def test_a_plan_with_two_problems_names_both_each_on_its_line():
    text = GOOD.replace("output_len = 5", "output_len = -1").replace("input_len = 10", "input_len = 0")
    with pytest.raises(PlanError) as info:
        parse_plan(text, "two.toml")
    lines = str(info.value).splitlines()
    assert len(lines) == 2, lines
    assert any(".output_len: " in line for line in lines) and any(".input_len: " in line for line in lines)
    assert all(line.startswith("two.toml:") for line in lines)


def test_plan_list_says_what_each_plan_is_and_how_long_it_took(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    import argparse

    from dspark_tui.commands import plan_command
    from dspark_tui.plans import shipped_plan_names, shipped_plan_text

    monkeypatch.setenv("DSPARK_CONFIG_DIR", str(tmp_path))
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "mine.toml").write_text(shipped_plan_text("demo").replace(
        'name = "demo"', 'name = "mine"'))
    (plans / "broken.toml").write_text("name = [\n")
    assert plan_command(argparse.Namespace(plan_command="list", config=None)) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines if str(tmp_path) not in line)
    for name in shipped_plan_names():
        line = next(line for line in lines if line.startswith(f"{name} "))
        assert "(no description)" not in line
    # Every shipped plan says where it runs and how long it takes (measured, or GPU time).
    for name in shipped_plan_names():
        described = parse_plan(shipped_plan_text(name), name).description
        assert described.startswith(("Simulator:", "Real vLLM, no GPU:", "GPU server")), name
        assert " min" in described or " h " in described or "day" in described, name
    assert "\nmine                 Simulator: st=3 vs st=5" in out
    assert any(line.strip() == f"({plans / 'mine.toml'})" or line.endswith(f"({plans / 'mine.toml'})")
               for line in lines)
    broken = next(line for line in lines if line.startswith("broken "))
    assert "(not a valid plan:" in broken
