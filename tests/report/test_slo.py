"""Throughput under an SLO on a real simulator run (analysis/slo.py, report/slo_section.py):
a mixed prompt set whose chat prompts accept almost no draft (the others nearly all), so K=3
serves more tokens a second than K=1 while its chat requests' TPOT (the p90) breaks a 7 ms
limit. The model (`sim.scheduler`, no noise: 256/128 tokens, the demo-slo plan's profile and draft step of
0.8 ms) gives K=3 +12 % / +9 % Total tok/s over K=1 at c=4 / c=16, p90 TPOT 7.7 / 8.3 ms
against K=1's 6.5 / 6.7 ms; the limit lies between. 192 requests a cell and arm: this shared
box stretches a few percent of requests past any limit (K=0, whose TPOT the model holds at
6.2 ms, had 3 of 80 over 7 ms), and with 80 a share of 97 % was not shown above 90 %. (A first
version, draft step 0.6 ms, put K=3's chat TPOT only 3 % above the limit, and one run of it
left K=3 unsure at 86 %.) Three rounds of 64 requests, not two of 96: with two, the paired
p90 TPOT verdict of K=1 against K=3 rests on one degree of freedom, and on a slower box one
run in four left it unsure (interval to 1.57); with three, 1.21-1.31 here, 3 of 3 decided.

The run is real (the simulator as a subprocess, the native client); the checks read the files
it left: analysis.json, the reports, and the raw per-request files, from which the attainment
is recomputed here by hand."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from dspark_tui.report.markdown import render_report
from dspark_tui.report.outputs import analysis_json
from dspark_tui.results.store import load_run
from tests.engine.helpers import sim_plan_text
from tests.ports import free_port

# Runs alone (tests/exclusive.py): the SLO is on wall-clock TPOT, and a box busy with other
# tests stretches the simulator's steps past the limit for every arm (K=0, whose modelled TPOT
# is 6.2 ms, had 10 of 192 requests over 7 ms in one session on a loaded box).
pytestmark = pytest.mark.timing

CELLS = """[[scenarios]]
name = "mixed"
dataset = "jsonl"
input_len = 256
output_len = 128
concurrencies = [8]
num_prompts = 64
"""
SLO = "\n[slo]\np90_tpot_ms = 7.0\n"
PROFILE = "chat=0.1,code=0.97,math=0.97,structured=0.97,summarisation=0.97"


# A run whose client fell behind the simulator in some measurement (model/client_health.py:
# its loop late and its reads bursty, a box starved of CPU) has no latency from it, by the
# tool's own rule, and its cell may have none at all (`no_data`: seen once at load 4). Such a
# run measured the box, not the SLO: it is run again, up to ATTEMPTS times, and the checks
# below are made, unchanged, on the first run whose client kept up in every measurement.
ATTEMPTS = 3


@pytest.fixture(scope="module")
def slo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dspark_tui.engine.run.runner import Runner, prepare_run
    from dspark_tui.model import load_plan

    behind: list[list[str]] = []
    for attempt in range(1, ATTEMPTS + 1):
        folder = tmp_path_factory.mktemp(f"slo{attempt}")
        text = sim_plan_text(free_port(), "--accept-profile", PROFILE, "--draft-step-s", "0.0008",
                             arms=(0, 1, 3), speed=1, warmup=2, cells=CELLS, rounds=3) + SLO
        (folder / "plan.toml").write_text(text)
        plan = load_plan(folder / "plan.toml")
        runner = Runner(plan, prepare_run(plan, folder / "results"), gpu=None)
        assert asyncio.run(runner.run()) == "completed"
        late = [f"{m.key.id} r{m.round}" for m in load_run(runner.store.path).measurements
                if m.client_behind]
        if not late:
            return runner.store.path
        behind.append(late)
    pytest.fail(f"the client fell behind the simulator in each of {ATTEMPTS} runs (the box is "
                f"too busy to measure latency): {behind}")


def schedule_words(lang: str) -> str:
    """The bold words that open the K schedule line under the SLO, in `lang`."""
    from dspark_tui.report.words import Texts

    line = Texts(lang, "slo")("schedule", keyed="", ranges="", config="")
    return line[:line.index("**", line.index("**") + 2) + 2]


def _tpot_ms(line: dict) -> float | None:
    if line["output_tokens"] <= 1:
        return None
    return (line["e2e_s"] - line["ttft_s"]) / (line["output_tokens"] - 1) * 1000


@pytest.mark.slow
def test_the_fastest_k_fails_the_tpot_slo_and_the_choice_is_the_k_that_meets_it(slo_run: Path):
    document = json.loads((slo_run / "analysis.json").read_text())
    recorded = json.loads((slo_run / "run.json").read_text())["plan"]["slo"]
    assert recorded == {"p90_tpot_ms": 7.0, "attainment": 0.95}
    slo = document["slo"]
    cells = {c["arm"]: c for c in slo["cells"]}
    assert set(cells) == {"st=0", "st=1", "st=3"}
    assert cells["st=3"]["total_tok_s"] > cells["st=1"]["total_tok_s"] > cells["st=0"]["total_tok_s"]
    assert cells["st=3"]["status"] == "fails", cells["st=3"]
    assert cells["st=1"]["status"] == "meets", cells["st=1"]
    # K=0's status is not asserted: one token a chunk, 8 streams at 6 ms steps, is the most the
    # simulator and the client must keep up with, and on this shared box one of its sessions
    # ran late (10 of 192 requests over 7 ms, design effect 3.8: unsure).
    (choice,) = slo["choices"]
    assert (choice["fastest"], choice["choice"]) == ("st=3", "st=1")
    assert slo["best_fixed"]["arm"] == "st=1" and slo["best_fixed"]["fastest_without_slo"] == "st=3"
    # By the best fixed K's rule: st=1 is shown best among the arms meeting the SLO (st=0, if it
    # meets it, is far slower), so no "unsure" (analysis/schedule.best_fixed).
    assert slo["best_fixed"]["leader"] == "st=1" and slo["best_fixed"]["status"] == "decided"
    # The K schedule under the SLO keeps K=1 where the throughput schedule runs K=3.
    assert slo["schedule"]["ranges"] == [[1, 256, 1]]
    assert slo["schedule"]["speculative_config"]["num_speculative_tokens"] == 1
    throughput = json.loads((slo_run / "schedule.json").read_text())
    assert throughput["speculative_config"]["num_speculative_tokens_per_batch_size"] == [[1, 256, 3]]
    assert throughput["under_slo"] == {"schedule": slo["schedule"], "best_fixed": "st=1",
                                       "best_fixed_status": slo["best_fixed"]["status"]}
    # The latency verdict, paired by round as throughput is: K=1's p90 TPOT is lower than
    # K=3's (the model: 6.5 against 7.7 ms at c=4, far beyond the 2 % band).
    (tpot,) = [v for v in slo["latency"] if {v["a"], v["b"]} == {"st=1", "st=3"}]
    assert tpot["metric"] == "p90_tpot_ms"
    assert (tpot["verdict"], tpot["lower"]) == ("wins", "st=1"), tpot
    # The same counts from the raw files on disk, by hand: every request of the cell's
    # three sessions, a request meeting the limit when its TPOT is at most 7 ms.
    for arm, cell in cells.items():
        folder = "st_" + arm.split("=")[1]
        lines = []
        for raw in sorted((slo_run / "raw").glob(f"{folder}__r*p1/mixed__c8.jsonl")):
            lines += [json.loads(x) for x in raw.read_text().splitlines()[1:] if x.strip()]
        assert len(lines) == 192 == cell["requests"]
        met = sum(1 for x in lines if not x.get("error") and ((t := _tpot_ms(x)) is None or t <= 7.0))
        assert met == cell["meeting"]
        assert cell["attainment_low"] <= met / 192 <= cell["attainment_high"]
        assert cell["goodput_rps"] == pytest.approx(
            met / sum(json.loads(r.read_text().splitlines()[0])["duration_s"]
                      for r in (slo_run / "raw").glob(f"{folder}__r*p1/mixed__c8.jsonl")), rel=1e-4)
    report = (slo_run / "report.en.md").read_text()
    assert "## Under the SLO" in report
    assert ("- **Under the SLO** (p90 TPOT ≤ 7 ms): mixed c=8 → `st=1` (the fastest, `st=3`, "
            "fails it)") in report
    assert "- **K schedule under the SLO** (by the running batch the server saw): 1–256 → K=1" in report
    zh = (slo_run / "report.md").read_text()
    assert "## SLO 约束下" in zh
    # Said once, in the summary (the SLO section repeated the same line, config and all).
    assert report.count("**K schedule under the SLO**") == 1
    assert report.index("**K schedule under the SLO**") < report.index("## Under the SLO")
    assert zh.count(schedule_words("zh")) == 1


@pytest.mark.slow
def test_without_slo_the_outputs_are_as_before(slo_run: Path, tmp_path: Path):
    """The same run with `[slo]` taken out of run.json: no `slo` in analysis.json, no SLO line
    in the reports, and nothing else changed."""
    copy = tmp_path / "run"
    shutil.copytree(slo_run, copy)
    manifest = json.loads((copy / "run.json").read_text())
    del manifest["plan"]["slo"]
    (copy / "run.json").write_text(json.dumps(manifest))
    with_slo, without = load_run(slo_run), load_run(copy)
    assert "slo" not in json.loads(analysis_json(without))
    for lang, heading in (("en", "## Under the SLO"), ("zh", "## SLO 约束下")):
        plain = render_report(without, lang, charts=[]).replace(str(copy), str(slo_run))
        full = render_report(with_slo, lang, charts=[])
        assert "SLO" not in plain and heading in full
        # Both ways: the report with [slo] is the one without plus its SLO section and its
        # SLO lines, in the same order; nothing of the plain report lost, nothing else added.
        assert without_slo(full, heading) == plain.splitlines()


def without_slo(report: str, heading: str) -> list[str]:
    """The report's lines outside its SLO section (`heading` to the next `## `) that do not
    name the SLO."""
    kept, inside = [], False
    for line in report.splitlines():
        if line.startswith("## "):
            inside = line == heading
        if not inside and "SLO" not in line:
            kept.append(line)
    return kept
