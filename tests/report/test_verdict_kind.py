"""A typed verdict kind (stats/paired.Verdict) in every field that holds one, written as before."""

from __future__ import annotations

import json

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.decision import ratio_between
from dspark_tui.analysis.live import comparison_rows
from dspark_tui.analysis.verdicts import Settings, Verdict, analyse_measurements
from dspark_tui.report.outputs import analysis_json
from tests.report.test_verdicts import ARMS, SCENARIOS, loaded, measurements


def test_every_verdict_field_holds_a_verdict(tmp_path):
    data = measurements(3)
    verdicts = analyse_measurements(data, list(ARMS), Settings(rounds=3))
    assert {type(p.verdict) for p in verdicts.pairs} == {Verdict}
    assert {p.verdict for p in verdicts.pairs} >= {Verdict.WINS, Verdict.TIE}
    rows = comparison_rows(data, list(ARMS), list(SCENARIOS),
                           settings=Settings(rounds=3))
    assert rows and all(isinstance(row.verdict, Verdict) for row in rows)
    ratio = ratio_between(verdicts, "chat", 1, "st=5", "st=3")
    assert ratio is not None and ratio.verdict is Verdict.WINS
    assert ratio_between(verdicts, "chat", 1, "st=5", "st=5").verdict is Verdict.TIE
    winners = analyse(loaded(tmp_path, rounds=3)).winners
    assert set(map(type, winners["verdict"])) == {Verdict}


def test_the_files_and_words_read_the_plain_names(tmp_path):
    run = loaded(tmp_path, rounds=3)
    text = analysis_json(run)
    written = json.loads(text)
    assert "Verdict" not in text
    assert {p["verdict"] for p in written["pairs"]} == {"wins", "tie"}
    assert f"{Verdict.UNSURE}" == "unsure" and str(Verdict.SINGLE) == "single"
    assert Verdict("tie") is Verdict.TIE and Verdict.TIE == "tie"
