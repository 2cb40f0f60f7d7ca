"""History's "Best arm" column says what it means in both languages, within its 11 cells: a
2-arm run with no winner in any cell, and a `--verify` run (no K sweep by its arms: the column
gives what the verification found, not the verdicts' count of wins)."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from dspark_tui.results import load_run
from dspark_tui.tui.run_facts import best_column
from dspark_tui.tui.screens.history import COLUMNS
from tests.report.test_verification import boundary_run, verification_run

DEMO_RUNS = Path(__file__).parents[1] / "data" / "demo_runs"
WIDTH = dict(COLUMNS)["best"]


def said(run, lang: str) -> str:  # type: ignore[no-untyped-def]
    text = best_column(run, lang)
    assert cell_len(text) <= WIDTH, (lang, text)
    return text


def test_a_two_arm_run_without_a_winner_says_every_cell_is_unsure():
    # The recorded demo (st=3 against st=5, 5 cells): no cell has a winner and none is a tie.
    # The line read `unsure 0/5`, "0 of 5" of nothing in particular.
    run = load_run(DEMO_RUNS / "demo_20261202-164649")
    assert said(run, "en") == "unsure 5/5"
    assert said(run, "zh") == "未定 5/5"


def test_a_verify_run_gives_what_the_verification_found(tmp_path: Path):
    recorded = load_run(DEMO_RUNS / "demo_k_sweep_verify_20261202-165744")
    # The recorded verification: schedule against K=4, 5 cells, two rounds, gain unsure.
    assert said(recorded, "en") == "unsure ?"
    assert said(recorded, "zh") == "未定 ?"
    confirmed = verification_run(tmp_path / "confirmed", {1: 1.10, 16: 1.0, 128: 1.08})
    assert said(confirmed, "en") == "verified ✓"
    assert said(confirmed, "zh") == "已验证 ✓"
    collapse = boundary_run(tmp_path / "collapse", {9: 0.85 / 1.10},
                            {1: 1.2, 8: 1.1, 9: 1.1, 16: 0.9, 128: 0.8})
    assert said(collapse, "en") == "collapse ✗"
    assert said(collapse, "zh") == "边界崩塌 ✗"
    single = verification_run(tmp_path / "single", {1: 1.10, 16: 1.0, 128: 1.05}, rounds=1)
    assert said(single, "en") == "single ≈"
