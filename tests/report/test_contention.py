"""The summary says when the box was busy during the run (issue 22): the simulator's own log
line when it fell behind its model, and measurements whose client fell behind. Real run
directories on disk; a quiet run (the goldens) says nothing."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.analysis.contention import contention
from dspark_tui.report.markdown import render_report
from tests.report.k_sweep_builders import k_sweep_run

GRID = {"chat": [1, 8, 64]}
WARNING = ("2026-12-03 06:40:12 WARNING engine.py the simulator fell {s} s behind its model so far "
           "(CPU-bound at --speed 2); served rates are lower than modelled\n")


def _summary(text: str) -> str:
    return text.split("\n---\n", 1)[0]


def test_a_quiet_run_says_nothing_of_the_box(tmp_path: Path):
    run = k_sweep_run(tmp_path, [3, 5], GRID, rounds=2)
    assert not contention(run).contended
    assert "busy during the run" not in _summary(render_report(run, lang="en"))


def test_the_simulator_falling_behind_is_named_in_the_summary(tmp_path: Path):
    run = k_sweep_run(tmp_path, [3, 5], GRID, rounds=2)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "server-K_3-s1.log").write_text("started\n" + WARNING.format(s="1.20")
                                             + WARNING.format(s="3.45"), encoding="utf-8")
    (logs / "server-K_5-s2.log").write_text("started\nno trouble\n", encoding="utf-8")
    # Only the simulator writes that line: a real server's logs are not read for it.
    assert contention(run).sim_sessions == 0
    run.manifest.backend_label = "dspark_tui.sim"  # the run's server was the simulator
    found = contention(run)
    assert (found.sim_sessions_behind, found.sim_sessions, found.sim_behind_s) == (1, 2, 3.45)
    en = _summary(render_report(run, lang="en"))
    assert ("The box was busy during the run: the simulator fell behind its model in 1 of 2 "
            "server sessions (by up to 3.5 s)") in en, en
    assert "模拟器" in _summary(render_report(run, lang="zh"))
