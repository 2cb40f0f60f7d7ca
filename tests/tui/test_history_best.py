"""History's "Best arm" column says what it means in both languages, within its 11 cells: a
2-arm run with no winner in any cell, and a `--verify` run (no K sweep by its arms: the column
gives what the verification found, not the verdicts' count of wins)."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.verification import verification_of
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
    # The recorded verification: schedule against K=6, 5 cells, two rounds, gain unsure; c=1 is
    # an A-vs-A check (the schedule runs K=6 there), the other 4 comparisons all unsure, as the
    # report's how-sure line counts them.
    assert said(recorded, "en") == "?4/4 ·1 AvA"
    assert said(recorded, "zh") == "?4/4 ·1 同K"
    confirmed = verification_run(tmp_path / "confirmed", {1: 1.10, 16: 1.0, 128: 1.08})
    assert said(confirmed, "en") == "verified ✓"
    assert said(confirmed, "zh") == "已验证 ✓"
    collapse = boundary_run(tmp_path / "collapse", {9: 0.85 / 1.10},
                            {1: 1.2, 8: 1.1, 9: 1.1, 16: 0.9, 128: 0.8})
    assert said(collapse, "en") == "collapse ✗"
    assert said(collapse, "zh") == "边界崩塌 ✗"
    # No A-vs-A cell (the schedule runs K=5 at c=1, K=2 from a batch of 9): nothing to count apart.
    unsure = verification_run(tmp_path / "unsure", {1: 1.0, 16: 1.0, 128: 1.03}, noise=0.03)
    assert said(unsure, "en") == "unsure ?"
    assert said(unsure, "zh") == "未定 ?"
    single = verification_run(tmp_path / "single", {1: 1.10, 16: 1.0, 128: 1.05}, rounds=1)
    assert said(single, "en") == "single ≈"


# The schedule [[1, 8, 5], [9, 256, 2]] against a best fixed K of 5 runs K=5 at every batch of
# c = 1, 4 and 8: three A-vs-A checks; c = 16, 64 and 128 are choices of K.
A_VS_A_TRUTH = {1: 1.0, 4: 1.0, 8: 1.0, 16: 1.15, 64: 1.02, 128: 1.0}


def a_vs_a_run_on_disk(folder: Path) -> Path:
    """A `--verify` run with three A-vs-A cells as the runner leaves it: run.json completed and
    every measurement a file under cells/."""
    from dspark_tui.results import RunStore

    run = verification_run(folder, A_VS_A_TRUTH, fixed_k=5, noise=0.03,
                           grid={"chat": sorted(A_VS_A_TRUTH)})
    store = RunStore(folder)
    for measurement in run.measurements:
        store.save_cell(measurement)
    manifest = store.read_manifest()
    manifest.status = "completed"
    store.write_manifest(manifest)
    return folder


async def test_an_unsure_verify_run_counts_its_a_vs_a_checks_apart_on_the_history_screen(
        tmp_path: Path):
    """A verify run whose gain is unsure, six comparisons of which three are A-vs-A checks
    (unsure, as a check of one K against itself is) and one of the other three unsure. History
    said `unsure ?` — read as four open cells, more rounds to run. It now gives the report's own
    count (the how-sure line: of 3 comparisons 2 unsure, 3 A-vs-A counted apart), in both
    languages, within the column."""
    from dspark_tui.report.markdown import render_report
    from tests.tui.helpers import make_app, screen_text, table_text, wait_until

    root = tmp_path / "results"
    folder = a_vs_a_run_on_disk(root / "demo_k_sweep_verify_20261203-120000")
    run = load_run(folder)
    result = verification_of(analyse(run))
    assert result is not None and result.outcome == "unsure"
    assert [c.concurrency for c in result.same_k] == [1, 4, 8]
    # The report this cell stands for: 3 comparisons that are choices, the A-vs-A ones apart.
    en = render_report(run, "en")
    (sure,) = [ln for ln in en.splitlines() if ln.startswith("- How sure")]
    assert sure.startswith("- How sure: of 3 comparisons, 1 are wins and 0 ties"), sure
    assert "2 unsure" in sure and "Counted apart: 3 A-vs-A check(s)" in sure, sure
    for lang, expected in (("en", "?2/3 ·3 AvA"), ("zh", "?2/3 ·3 同K")):
        assert said(run, lang) == expected
        app = make_app(tmp_path / lang, results_root=root, settings={"language": lang})
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda app=app, expected=expected: any(
                expected in row for row in table_text(app, "#history-table")),
                what=f"History's {lang} best-arm cell")
            await pilot.pause()
            shown = screen_text(app)
        # Drawn whole on the 80-column screen, on the run's row, not cut by the column.
        (line,) = [ln for ln in shown.splitlines() if expected in ln]
        assert "k_sweep_verify" in line, shown


def test_two_digit_counts_drop_the_spaces_to_fit_the_column(tmp_path: Path):
    """Ten choices and four A-vs-A checks (c = 1, 2, 4, 8 run K=5 throughout): `?n/10 ·4 AvA` is
    12 cells, one more than the column; the same words without spaces fit."""
    grid = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192]
    run = verification_run(tmp_path, dict.fromkeys(grid, 1.0), fixed_k=5, noise=0.03,
                           grid={"chat": grid})
    result = verification_of(analyse(run))
    assert result is not None and result.outcome == "unsure" and len(result.same_k) == 4
    en, zh = said(run, "en"), said(run, "zh")
    assert en.startswith("?") and en.endswith("/10·4AvA"), en
    assert zh.startswith("?") and zh.endswith("/10·4同K"), zh
