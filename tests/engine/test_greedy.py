"""The greedy equivalence check end to end: a real runner against the real simulator answers the
check's prompts after warmup, saves them, announces the verdicts and puts them at the top of the
report; the comparison's rules (control, K = 0 reference, arms that differ in more) on files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dspark_tui.analysis.greedy import compare_answers, greedy_result
from dspark_tui.engine.run.greedy import collect
from dspark_tui.engine.run.runner import Runner, prepare_run
from dspark_tui.model import load_plan, parse_plan
from dspark_tui.model.greedy import GreedyAnswer, GreedyAnswers
from dspark_tui.model.run_state import RunState
from dspark_tui.model.speculation import without_speculation
from dspark_tui.report.greedy_section import greedy_section
from dspark_tui.report.words import Texts
from dspark_tui.results import RunStore
from dspark_tui.results.greedy import save_answers
from dspark_tui.results.manifest import manifest_for_plan
from tests.engine.helpers import FAKES, Recorder, sim_plan_text
from tests.simulator import stop_process_group, wait_ready

ONE_CELL = ('[[scenarios]]\nname = "chat"\ninput_len = 64\noutput_len = 16\n'
            'concurrencies = [1]\nnum_prompts = 2\n')


def _runner(tmp_path: Path, port: int, *flags: str, check: int = 4, **kwargs: object
            ) -> tuple[Runner, Recorder]:
    text = sim_plan_text(port, *flags, cells=ONE_CELL, **kwargs)  # type: ignore[arg-type]
    text = text.replace("[bench]\n", f"[bench]\ncheck_greedy = {check}\n")
    (tmp_path / "plan.toml").write_text(text)
    plan = load_plan(tmp_path / "plan.toml")
    runner = Runner(plan, prepare_run(plan, tmp_path / "results"), gpu=None, charts=False)
    recorder = Recorder()
    runner.subscribe(recorder)
    return runner, recorder


def _report(store: RunStore, name: str = "report.en.md") -> str:
    return (store.path / name).read_text()


async def test_identical_arms_pass_and_every_session_saves_its_answers(tmp_path: Path, port: int):
    runner, events = _runner(tmp_path, port, rounds=2)
    assert await runner.run() == "completed"
    store = runner.store
    files = sorted(p.name for p in (store.path / "greedy").iterdir())
    assert files == ["st_3-s1.json", "st_3-s4.json", "st_5-s2.json", "st_5-s3.json"]
    saved = json.loads((store.path / "greedy" / "st_3-s1.json").read_text())
    assert len(saved["passes"]) == 2 and len(saved["prompts"]) == 4
    assert all(len(a["token_ids"]) == 64 for a in saved["passes"][0])
    checked = events.of("greedy_checked")
    assert [e.arm for e in checked] == ["st=3", "st=5", "st=5", "st=3"]
    assert checked[0].verdicts is None  # st=5 has not answered yet
    verdict = checked[-1].verdicts[0]
    assert (verdict.arm, verdict.reference, verdict.verdict, verdict.compared) == (
        "st=5", "st=3", "same", 4)
    told = [e.message for e in events.of("notice") if "greedy check" in e.message]
    assert told == ["greedy check: st=5 vs st=3: same output on all 4 prompts"]  # once, not 3x
    state = RunState()
    state.apply_all(store.read_events())
    assert state.greedy_line() == "greedy: st=5 vs st=3 same (4 prompts)"
    report = _report(store)
    assert report.index("## Greedy equivalence check") < report.index("## Summary")
    assert "`st=5`: the same output as `st=3` on all 4 prompts." in report
    assert "贪心输出一致性检查" in _report(store, "report.md")


async def test_the_fault_switch_is_named_at_its_first_divergence_against_k0(tmp_path: Path,
                                                                           port: int):
    runner, events = _runner(tmp_path, port, "--greedy-diverge-after", "5", arms=(0, 3), check=3)
    assert await runner.run() == "completed"
    verdict = events.of("greedy_checked")[-1].verdicts[0]
    assert (verdict.arm, verdict.reference, verdict.verdict) == ("st=3", "st=0", "diverges")
    assert (verdict.diverging, verdict.first_prompt, verdict.first_position, verdict.unit) == (
        3, 1, 5, "token")
    warnings = [e.message for e in events.of("notice") if e.level == "warning"]
    assert any("st=3 vs st=0: DIVERGES on 3 of 3 prompts; first at prompt 1, token 5" in w
               for w in warnings)
    saved = json.loads((runner.store.path / "analysis.json").read_text())["greedy"]
    assert saved["reference"] == "st=0" and saved["verdicts"][0]["verdict"] == "diverges"
    assert saved["verdicts"][0]["first_position"] == 5
    report = _report(runner.store)
    assert report.startswith("# ") and "## ⚠ Greedy equivalence check" in report.split("## Summary")[0]
    assert "the first at prompt 1, token 5: `st=0` “" in report


async def test_a_resumed_round_does_not_ask_again(tmp_path: Path, port: int):
    runner, _ = _runner(tmp_path, port, arms=(3,), check=2)
    assert await runner.run() == "completed"
    store = runner.store
    for cell in (store.path / "cells" / "st_3").iterdir():
        cell.unlink()  # the measurement is to be redone in a new session of the same round
    plan = load_plan(tmp_path / "plan.toml")
    again, events = Runner(plan, RunStore(store.path), gpu=None, charts=False), Recorder()
    again.subscribe(events)
    assert await again.run() == "completed"
    assert [p.name for p in (store.path / "greedy").iterdir()] == ["st_3-s1.json"]
    assert events.of("session_started") and not events.of("greedy_checked")


async def test_a_server_refusing_return_token_ids_is_compared_by_text(tmp_path: Path, port: int):
    log = tmp_path / "strict.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, str(FAKES / "strict_completions.py"), "--port",
                                 str(port)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(proc, url, 10, log)
        plan = parse_plan(PLAN.replace(
            "[server]", "[bench]\ncheck_greedy = 3\n[server]"))
        answers = await collect(url, plan, plan.arms[0], session="s1", round=1, headers={})
    finally:
        stop_process_group(proc)
    assert [a.error for a in answers.passes[0]] == [None, None, None]
    assert answers.passes[0][0].token_ids is None
    assert answers.passes[0][0].text == " ".join(reversed(answers.prompts[0].split()))


# -- the comparison's rules, on answers written by hand ---------------------------------------

PLAN = """name = "p"
model = "m"
[server]
command = ["vllm", "serve", "{model}", "--max-num-seqs", "{seqs}", "--speculative-config",
           "{spec}"]
""" + "".join(  # a: K=3; b: K=5; c: b with another batch limit; d: b with another method
    f'[[arms]]\nname = "{name}"\nvars = {{ seqs = {seqs}, spec = \'{{"method": "{method}", '
    f'"num_speculative_tokens": {k}}}\' }}\n'
    for name, seqs, method, k in [("a", 64, "mtp", 3), ("b", 64, "mtp", 5), ("c", 128, "mtp", 5),
                                  ("d", 64, "eagle", 5)]) + """[[scenarios]]
name = "s"
input_len = 8
output_len = 8
concurrencies = [1]
"""


def _answers(arm: str, *passes: list[str], session: str = "s1") -> GreedyAnswers:
    prompts = [f"p{i}" for i in range(len(passes[0]))]
    return GreedyAnswers(arm=arm, session=session, max_tokens=8, prompts=prompts,
                         passes=[[GreedyAnswer(text=t) for t in texts] for texts in passes])


def test_only_k_settings_count_as_speculation():
    plan = parse_plan(PLAN)
    same = [_answers(arm, ["x y z", "u v w"], ["x y z", "u v w"]) for arm in "abcd"]
    result = compare_answers(same, "abcd", "a", plan)
    assert [(v.arm, v.verdict) for v in result.verdicts] == [
        ("b", "same"), ("c", "not_compared"), ("d", "not_compared")]
    assert without_speculation(["serve", "--spec-tokens=3", "--num-speculative-tokens", "2", "-x"]
                               ) == ["serve", "-x"]


def test_a_difference_counts_only_when_earlier_than_the_control():
    plan = parse_plan(PLAN)
    reference = _answers("a", ["abcdef", "abcdef", "abcdef"], ["abcdXX", "abcdef", "abcdef"])
    other = _answers("b", ["abcdeY", "abYdef", "abcdef"], ["abcdeY", "abYdef", "abcdef"])
    [verdict] = compare_answers([reference, other], ["a", "b"], "a", plan).verdicts
    # prompt 1 differs at 5, after the reference's own repeat differs (at 4): within the control;
    # prompt 2 differs at 2 with both arms steady: a divergence.
    assert (verdict.verdict, verdict.diverging, verdict.within_control) == ("diverges", 1, 1)
    assert (verdict.first_prompt, verdict.first_position, verdict.unit) == (2, 2, "char")
    assert (verdict.expected, verdict.got) == ("abcdef", "abYdef")


def test_an_unreadable_answer_file_is_one_line_in_the_report(tmp_path: Path):
    plan = parse_plan(PLAN)
    for arm in ("a", "b"):
        save_answers(tmp_path, _answers(arm, ["x y", "z"], ["x y", "z"]))
    (tmp_path / "greedy" / "c-s3.json").write_text('{"arm": "c", "passes"')
    result = greedy_result(tmp_path, manifest_for_plan(plan))
    assert result is not None
    lines = greedy_section(result, Texts("en"))
    assert "- `b`: the same output as `a` on all 2 prompts." in lines
    [problem] = [line for line in lines if line.startswith("- Not read:")]
    assert "c-s3.json: unreadable greedy answers" in problem and "\n" not in problem
