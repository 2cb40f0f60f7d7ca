"""`[slo]` in the plan (model/slo.py): its limits, per-scenario overrides, one-line errors
naming the key, and its place in run.json's snapshot (absent when the plan has none)."""

from __future__ import annotations

import pytest

from dspark_tui.model.plan import PlanError, parse_plan
from tests.plan_text import scenario_table

BASE = """name = "x"
model = "m"
[server]
command = ["serve", "{k}"]
[[arms]]
name = "a"
vars = { k = 1 }
""" + "".join(scenario_table(name, 4, 4, [1]) for name in ("chat", "rag"))


def test_limits_with_their_shares_and_a_scenarios_overrides():
    plan = parse_plan(BASE + "[slo]\nattainment = 0.9\ntpot_ms = 25\np99_ttft_ms = 800.5\n"
                      "[slo.scenarios.rag]\ntpot_ms = 40\n")
    assert plan.slo is not None
    chat = {lim.key: (lim.metric, lim.ms, lim.share, lim.percentile) for lim in plan.slo.limits_for("chat")}
    assert chat == {"tpot_ms": ("tpot", 25.0, 0.9, None), "p99_ttft_ms": ("ttft", 800.5, 0.99, 99)}
    rag = {lim.key: lim.ms for lim in plan.slo.limits_for("rag")}
    assert rag == {"tpot_ms": 40.0, "p99_ttft_ms": 800.5}
    assert plan.model_dump()["slo"] == {"tpot_ms": 25.0, "p99_ttft_ms": 800.5, "attainment": 0.9,
                                        "scenarios": {"rag": {"tpot_ms": 40.0}}}


def test_without_slo_the_snapshot_has_no_key():
    assert "slo" not in parse_plan(BASE).model_dump()


@pytest.mark.parametrize(("table", "expected"), [
    ("tpot_ms = -1", "plan.toml:19: slo.tpot_ms: Input should be greater than 0"),
    ("tpot_mz = 1", "plan.toml:19: slo.tpot_mz: unknown key"),
    ("p97_tpot_ms = 1", "plan.toml:19: slo.p97_tpot_ms: unknown key"),
    ('tpot_ms = "25"', "plan.toml:19: slo.tpot_ms: Input should be a valid number, got '25'"),
    ("tpot_ms = 5\nattainment = 1.0", "plan.toml:20: slo.attainment: Input should be less than 1"),
    ("attainment = 0.9", "plan.toml:18: slo: gives no limit; set at least one of ttft_ms"),
    ('tpot_ms = 5\nobjective = "latency"',
     "plan.toml:20: slo.objective: Input should be 'throughput' or 'goodput'"),
    ("tpot_ms = 5\n[slo.scenarios.chit]\ntpot_ms = 4",
     "plan.toml:18: slo.scenarios names 'chit', which is no scenario of the plan"),
])
def test_a_bad_slo_is_one_line_naming_the_key(table: str, expected: str):
    with pytest.raises(PlanError) as caught:
        parse_plan(BASE + "[slo]\n" + table + "\n", "plan.toml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith(expected), message


@pytest.mark.slow  # a `dspark-tui` process
def test_plan_check_prints_each_scenarios_limits(tmp_path):
    """`plan check` of a plan with [slo]: one line a scenario, its limits and the shares."""
    from tests.cli import run_cli

    plan = tmp_path / "slo.toml"
    plan.write_text(BASE + "[slo]\ntpot_ms = 25\np99_ttft_ms = 800\n[slo.scenarios.rag]\ntpot_ms = 40\n")
    done = run_cli("plan", "check", str(plan))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.splitlines()
    assert "slo chat: TPOT ≤ 25 ms for 95% of requests, p99 TTFT ≤ 800 ms" in out
    assert "slo rag: TPOT ≤ 40 ms for 95% of requests, p99 TTFT ≤ 800 ms" in out
