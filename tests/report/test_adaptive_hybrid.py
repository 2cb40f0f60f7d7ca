"""The hybrid of adaptive verification and the K schedule (analysis/adaptive.py) on runs whose
measurements come from a stated truth (as tests/report/k_sweep_builders.py, sessions and cells
with 0.2 % noise, three rounds): where adaptive verification is faster than the chosen K the
hybrid takes it, and its expected gain over the schedule alone is the traffic-weighted mean of
those cells' ratios. The live run is tests/report/test_adaptive_arm.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dspark_tui.analysis.adaptive import ONE_CONFIG, ROUTING, WINS
from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.deploy import deploy_answer, schedule_json
from dspark_tui.analysis.slo import slo_answer
from dspark_tui.model import CellResult, ClientMetrics, parse_plan
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.store import LoadedRun
from tests.report.k_sweep_builders import with_native_raw

ARMS = {"K=1": "num_speculative_tokens = 1", "K=3": "num_speculative_tokens = 3",
        "K=3 adaptive": "num_speculative_tokens = 3, enable_adaptive_verification = true"}
CONCURRENCIES = [1, 4, 64, 256]


def _run(folder: Path, truth: dict[str, dict[int, float]], rounds: int = 3, slo: str = "") -> LoadedRun:
    lines = ['name = "adaptive_hybrid"', 'model = "/models/DeepSeek-V4-Flash-DSpark"',
             "[server]", 'command = ["vllm", "serve", "{model}", "--port", "{port}", "{speculative}"]',
             "[bench]", 'driver = "sglang"', f"rounds = {rounds}", "adaptive_rounds = 0"]
    for name, table in ARMS.items():
        lines += ["[[arms]]", f'name = "{name}"', f'speculative = {{ method = "dspark", {table} }}']
    lines += ["[[scenarios]]", 'name = "chat"', "input_len = 512", "output_len = 256",
              f"concurrencies = {CONCURRENCIES}", "num_prompts = 64"]
    plan = parse_plan("\n".join(lines) + "\n" + slo)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = manifest_for_plan(plan, plan_source="test")
    manifest.status = "completed"
    RunStore(folder).write_manifest(manifest)
    run = load_run(folder)
    rng = np.random.default_rng(5)
    measured = []
    for rnd in range(1, rounds + 1):
        for arm in ARMS:
            session = rng.normal(0, 0.002)
            for c in CONCURRENCIES:
                total = truth[arm][c] * math.exp(session + rng.normal(0, 0.002))
                measured.append(CellResult(
                    arm=arm, scenario="chat", concurrency=c, round=rnd, session=f"{arm}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=total, duration=20.0, completed=64)))
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == rounds}
    return with_native_raw(folder, run, lambda arm: 5.0) if slo else run


def _truth(adaptive: dict[int, float]) -> dict[str, dict[int, float]]:
    # K=3 is +50 % at small batches and -10 % at large ones against K=1.
    return {"K=1": dict.fromkeys(CONCURRENCIES, 100.0),
            "K=3": {1: 150.0, 4: 150.0, 64: 90.0, 256: 90.0},
            "K=3 adaptive": adaptive}


def test_adaptive_where_it_beats_the_choice_is_routed_by_load_with_its_gain(tmp_path: Path):
    run = _run(tmp_path, _truth({1: 140.0, 4: 140.0, 64: 110.0, 256: 110.0}))
    analysis = analyse(run)
    answer = deploy_answer(analysis)
    assert answer is not None and answer.schedule is not None
    assert [c.k for c in answer.decision.choices] == [3, 3, 1, 1]
    (arm,) = answer.adaptive
    assert [c.outcome for c in arm.cells] == ["loses", "loses", WINS, WINS]
    assert arm.form == ROUTING
    assert [(r.scenario, r.adaptive_at, r.from_concurrency) for r in arm.routing] == [("chat", [64, 256], 64)]
    # Equal weights: the geometric mean of 1, 1, 1.1, 1.1.
    assert arm.gain is not None and arm.gain.ratio == pytest.approx(1.1 ** 0.5, rel=0.01)
    assert arm.gain.low is not None and arm.gain.high is not None
    assert arm.gain.low < arm.gain.ratio < arm.gain.high and arm.gain.low > 1.0
    assert arm.method_ok
    hybrid = schedule_json(answer)["adaptive"][0]["hybrid"]
    assert hybrid["form"] == "routing" and hybrid["speculative_config"] is None
    text = render_report(run, "en", analysis=analysis)
    assert "Served as routing by load: chat at concurrency >= 64" in text
    assert "## 自适应验证与 K 决策的对比" in render_report(run, "zh", analysis=analysis)


def test_adaptive_faster_everywhere_is_one_config(tmp_path: Path):
    run = _run(tmp_path, _truth({1: 170.0, 4: 170.0, 64: 110.0, 256: 110.0}))
    answer = deploy_answer(analyse(run))
    assert answer is not None
    (arm,) = answer.adaptive
    assert all(c.outcome == WINS for c in arm.cells)
    assert arm.form == ONE_CONFIG
    assert arm.config == {"method": "dspark", "num_speculative_tokens": 3,
                          "enable_adaptive_verification": True}


def test_without_adaptive_arms_nothing_is_added(tmp_path: Path):
    from tests.report.k_sweep_builders import k_sweep_run

    answer = deploy_answer(analyse(k_sweep_run(tmp_path, [0, 1, 3, 5], {"chat": [1, 8, 64]})))
    assert answer is not None and answer.adaptive == []
    assert "adaptive" not in schedule_json(answer)


def test_the_layout_answers_k_per_arm_once_for_adaptive_and_plain_sweeps(tmp_path: Path):
    """analysis/layout.ArmKs: the K decision, the serve command and the SLO choice all ask it.
    An adaptive arm is no K of the decision (two fixed K values make a sweep beside it) and the
    command's K is the speculative table's; a plain sweep's every arm is a K value."""
    from dspark_tui.analysis.layout import K_VAR, ArmKs
    from tests.report.k_sweep_builders import k_sweep_run

    analysis = analyse(_run(tmp_path / "adaptive", _truth(dict.fromkeys(CONCURRENCIES, 100.0))))
    assert analysis.layout.ks == ArmKs({"K=1": 1, "K=3": 3}, ("K=3 adaptive",), K_VAR)
    assert analysis.layout.ks.is_sweep and analysis.layout.ks.every_arm is None
    answer = deploy_answer(analysis)
    assert answer is not None and answer.decision.k_of == {"K=1": 1, "K=3": 3}
    assert answer.decision.adaptive == ["K=3 adaptive"]
    assert answer.command is not None and any(K_VAR in part for part in answer.command)
    plain = analyse(k_sweep_run(tmp_path / "plain", [0, 1, 3], {"chat": [1, 8]})).layout
    assert plain.ks is not None and plain.ks.adaptive == ()
    assert plain.ks.every_arm == plain.ks.fixed and set(plain.ks.fixed.values()) == {0, 1, 3}
    assert plain.ks.var == plain.compared_var


def test_adaptive_is_also_judged_against_its_own_k_where_it_starts_to_pay(tmp_path: Path):
    """Beside the chosen K, each cell compares the adaptive arm with the fixed arm of its own K
    (K=3: the same drafts, every one verified): the crossover. Truth: 140 / 148.5 / 110 / 110
    against K=3's 150 / 150 / 90 / 90 — slower, within the 2 % band, faster, faster."""
    run = _run(tmp_path, _truth({1: 140.0, 4: 148.5, 64: 110.0, 256: 110.0}))
    analysis = analyse(run)
    answer = deploy_answer(analysis)
    assert answer is not None
    (arm,) = answer.adaptive
    assert arm.own_arm == "K=3"
    assert [c.own_outcome for c in arm.cells] == ["loses", "tie", WINS, WINS]
    expected = [140 / 150, 148.5 / 150, 110 / 90, 110 / 90]
    assert [c.vs_own.value for c in arm.cells if c.vs_own is not None] == pytest.approx(expected, rel=0.01)
    cells = schedule_json(answer)["adaptive"][0]
    assert cells["own_k_arm"] == "K=3"
    assert [c["own_outcome"] for c in cells["cells"]] == ["loses", "tie", "wins", "wins"]
    text = render_report(run, "en", analysis=analysis)
    assert ("- `K=3 adaptive` against `K=3` (the same drafts, every one verified): faster at chat "
            "c=64, chat c=256, slower at chat c=1, not shown either way at chat c=4.") in text
    assert "| Adaptive vs `K=3` | Verdict |" in text
    zh = render_report(run, "zh", analysis=analysis)
    assert "- `K=3 adaptive` 相对 `K=3`（同样的草稿，全部验证）：" in zh


def test_without_the_same_k_fixed_arm_there_is_no_own_comparison(tmp_path: Path, monkeypatch):
    """A sweep whose fixed arms lack the adaptive arm's K: the table and analysis stay as
    before (no own-K column, no `own_k_arm`)."""
    monkeypatch.setitem(ARMS, "K=3 adaptive",
                        "num_speculative_tokens = 5, enable_adaptive_verification = true")
    run = _run(tmp_path, _truth({1: 140.0, 4: 148.5, 64: 110.0, 256: 110.0}))
    analysis = analyse(run)
    answer = deploy_answer(analysis)
    assert answer is not None
    (arm,) = answer.adaptive
    assert arm.own_arm is None and all(c.vs_own is None for c in arm.cells)
    assert "own_k_arm" not in schedule_json(answer)["adaptive"][0]
    assert "Adaptive vs `" not in render_report(run, "en", analysis=analysis)


def test_cells_never_compared_with_the_own_k_are_counted_apart(tmp_path: Path, monkeypatch):
    """The own-K line's "not shown either way" is a tie or an unsure interval: a cell where the
    own K arm was not measured (K=3 lost at c=256; K=1 and K=5 still give the cell a choice) is
    "not compared", and a run of one round (no interval anywhere) says "no interval" — before,
    both were counted among the undecided (review)."""
    monkeypatch.setitem(ARMS, "K=5", "num_speculative_tokens = 5")
    truth = _truth({1: 140.0, 4: 148.5, 64: 110.0, 256: 110.0})
    truth["K=5"] = dict.fromkeys(CONCURRENCIES, 80.0)
    run = _run(tmp_path / "lost", truth)
    run.measurements = [m for m in run.measurements if not (m.arm == "K=3" and m.concurrency == 256)]
    run.cells = {m.key: m for m in run.measurements}
    analysis = analyse(run)
    answer = deploy_answer(analysis)
    assert answer is not None
    (arm,) = answer.adaptive
    assert [c.own_outcome for c in arm.cells] == ["loses", "tie", WINS, "missing"]
    assert ("- `K=3 adaptive` against `K=3` (the same drafts, every one verified): faster at chat "
            "c=64, slower at chat c=1, not shown either way at chat c=4, not compared at chat "
            "c=256 (an arm not measured there).") in render_report(run, "en", analysis=analysis)
    assert ("在 chat c=4 无法区分、在 chat c=256 未能比较（有一方未测量）。"
            in render_report(run, "zh", analysis=analysis))

    once = _run(tmp_path / "once", truth, rounds=1)
    analysis = analyse(once)
    answer = deploy_answer(analysis)
    assert answer is not None
    (arm,) = answer.adaptive
    assert {c.own_outcome for c in arm.cells} == {"single"}
    text = render_report(once, "en", analysis=analysis)
    assert ("every one verified): no interval at chat c=1, chat c=4, chat c=64, chat c=256 "
            "(one measurement).") in text
    assert "not shown either way" not in text
    assert "在 chat c=1、chat c=4、chat c=64、chat c=256 无区间（单次测量）" in render_report(
        once, "zh", analysis=analysis)


def test_with_an_adaptive_arm_the_slo_choice_is_said_to_be_the_top_by_its_point_estimate(tmp_path: Path):
    """An adaptive arm has no K to order the arms by, so no K is compared with the top under the
    SLO (slo._choose): the level line says the choice is the fastest by its point estimate, and
    only its ratio to the fastest is read at the family level of the run's three arms."""
    slo = '[slo]\np90_tpot_ms = 50\nobjective = "throughput"\n'
    run = _run(tmp_path, _truth({1: 160.0, 4: 160.0, 64: 95.0, 256: 95.0}), slo=slo)
    answer = slo_answer(analyse(run))
    assert answer is not None and answer.k_of is None and answer.choice_arms == 3
    assert all(c.status == "meets" for c in answer.cells)
    assert [ch.choice for ch in answer.choices] == ["K=3 adaptive"] * 2 + ["K=1"] * 2
    en = render_report(run, "en", charts=[])
    assert ("The arms have no K to order them (an adaptive arm among them), so a choice is the "
            "fastest arm shown to meet the SLO by its point estimate, not shown ahead of the "
            "others; its ratio to the cell's fastest (below) is read at") in en
    assert "the family level of a best picked among 3 arms" in en
    assert "each K was compared" not in en and "are read at" not in en
    zh = render_report(run, "zh", charts=[])
    assert "这些配置没有可排序的 K（其中有自适应验证配置）" in zh and "在 3 个配置中选出最优时的族水平" in zh
