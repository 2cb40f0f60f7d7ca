"""The answer at the top never claims more than the data (issue 22): a band line counts every
cell of its band and says "not decided" when few decided; "wins in every band" only when it
does; an incomplete sweep says so in its first line, names its failed cells and writes no
schedule unless asked; schedule.json tells a consumer whether to deploy."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.deploy import SCHEDULE_FILE, deploy_answer, write_schedule
from dspark_tui.model import CellResult
from dspark_tui.model.cell import CellStatus
from dspark_tui.report.markdown import render_report
from tests.report.k_sweep_builders import k_sweep_run

LOW = {"chat": [2, 3, 4, 6, 8, 12, 16, 24]}  # one band (c=2~32), eight cells


def _one_true_gap(k: int, scenario: str, c: int) -> float:
    """K=5 30 % ahead at c=2 only; elsewhere the two arms are within a percent or two."""
    return 1000.0 * c * (1.3 if (k == 5 and c == 2) else 1.0) * (1.0 + 0.01 * ((c * 7 + k) % 3))


def _summary(text: str) -> list[str]:
    head = text.split("\n---\n", 1)[0]
    return [line for line in head.splitlines() if line.startswith("- ")]


def test_one_decided_cell_among_unsure_ones_is_not_decided_and_says_where_the_rest_lean(tmp_path):
    """Issue 22: "deploy `--spec-tokens N` (wins 1 of 1 decided cells; 7 more unsure)"."""
    run = k_sweep_run(tmp_path, [3, 5], LOW, rounds=2, noise=0.03, model=_one_true_gap, seed=2)
    analysis = analyse(run)
    verdicts = analysis.winners["verdict"].tolist()
    assert verdicts.count("wins") == 1 and verdicts.count("unsure") == 7
    lean = analysis.unsure["winner"].value_counts().to_dict()
    for lang, undecided, deploy in (("en", "not decided", "deploy"), ("zh", "未判定", "部署")):
        (line,) = [ln for ln in _summary(render_report(run, lang=lang)) if "c=2~24" in ln]
        assert undecided in line and deploy not in line, line
    (line,) = [ln for ln in _summary(render_report(run, lang="en")) if "c=2~24" in ln]
    assert "1 of 8 cells decided" in line
    for arm, n in lean.items():
        assert f"to `{arm}` in {n} " in line
    advice = render_report(run, lang="en").split("## Recommendations", 1)[1]
    assert "| not decided |" in advice and "**5**" not in advice


def test_a_band_with_most_cells_decided_still_names_its_arm(tmp_path):
    def ahead(k: int, scenario: str, c: int) -> float:
        return 1000.0 * c * (1.25 if k == 5 else 1.0)

    run = k_sweep_run(tmp_path, [3, 5], LOW, rounds=3, noise=0.01, model=ahead)
    (line,) = [ln for ln in _summary(render_report(run, lang="en")) if "c=2~24" in ln]
    assert "deploy `spec_tokens=5`" in line or "deploy `--spec-tokens 5`" in line, line
    assert "wins 8 of 8 decided cells" in line


def test_wins_in_every_band_only_when_every_band_is_won(tmp_path):
    """A band whose cells are mostly unsure is no band the arm "wins"."""
    def model(k: int, scenario: str, c: int) -> float:
        gap = 1.25 if c <= 32 else (1.3 if c == 64 else 1.0)  # c=96..256: equal, unsure
        return 1000.0 * c * (gap if k == 5 else 1.0) * (1.0 + 0.01 * ((c + k) % 3))

    run = k_sweep_run(tmp_path, [3, 5], {"chat": [1, 8, 64, 96, 128, 192, 256]}, rounds=2,
                      noise=0.03, model=model, seed=4)
    analysis = analyse(run)
    high = next(a for a in analysis.band_answers if a.band == "high")
    assert high.decided * 2 <= high.cells  # the premise: the high band is mostly unsure
    en = render_report(run, lang="en")
    assert "wins in every concurrency band" not in en
    assert all(ln.startswith("- ") for ln in _summary(en))


def _abort_after(run, arms_kept: set[str]):
    run.measurements = [m for m in run.measurements if m.arm in arms_kept]
    run.cells = {key: m for key, m in run.cells.items() if m.arm in arms_kept}
    return run


def test_an_aborted_sweep_says_so_first_and_writes_no_schedule_unless_asked(tmp_path):
    """Issue 22: an aborted sweep answered "what to deploy" with a K=1 schedule from 2 of 7
    arms and wrote schedule.json."""
    run = k_sweep_run(tmp_path / "run", list(range(7)), {"chat": [1, 16, 64]}, status="aborted")
    run = _abort_after(run, {"K=0", "K=1"})
    en = render_report(run, lang="en")
    first = _summary(en)
    assert first[0].startswith("- **Incomplete run** (aborted)"), first[0]
    for arm in ("K=2", "K=3", "K=4", "K=5", "K=6"):
        assert f"`{arm}`" in first[0]
    assert first[1].startswith("- **No K schedule**")
    assert "Deploy the K schedule" not in en and "What to deploy" not in en
    assert "--partial-schedule" in first[1]
    zh = render_report(run, lang="zh")
    assert _summary(zh)[0].startswith("- **运行不完整**（已中止）")
    assert write_schedule(run) is None
    assert not (tmp_path / "run" / SCHEDULE_FILE).exists()
    # Asked for: written, and it says what it lacks and not to deploy it.
    path = write_schedule(run, partial=True)
    assert path is not None
    data = json.loads(path.read_text())
    assert data["deploy"] is False and "missing_arms" in data["not_deployable_because"]
    assert data["incomplete"]["missing_arms"] == ["K=2", "K=3", "K=4", "K=5", "K=6"]
    assert data["incomplete"]["run_status"] == "aborted"


def test_a_failed_cell_is_named_with_its_arm_and_why_in_the_first_line(tmp_path):
    run = k_sweep_run(tmp_path, list(range(5)), {"chat": [1, 16, 64]})
    broken = next(m for m in run.measurements if m.arm == "K=3" and m.concurrency == 64 and m.round == 2)
    failed = CellResult(arm=broken.arm, scenario=broken.scenario, concurrency=64, round=2,
                        session=broken.session, status=CellStatus.FAILED,
                        error="server died: exit code -9 (out of memory)")
    run.measurements = [failed if m is broken else m for m in run.measurements]
    en = render_report(run, lang="en")
    first = _summary(en)[0]
    assert first.startswith("- **Incomplete run** (completed)")
    assert "`K=3` chat c=64 (server died: exit code -9 (out of memory))" in first
    answer = deploy_answer(analyse(run))
    assert answer is not None and answer.deploy is False
    assert answer.run is not None and [c.arm for c in answer.run.failed] == ["K=3"]


def test_schedule_json_says_whether_to_deploy(tmp_path):
    decided = k_sweep_run(tmp_path / "decided", list(range(5)), {"chat": [1, 16, 64]}, rounds=3)
    single = k_sweep_run(tmp_path / "single", list(range(5)), {"chat": [1, 16, 64]}, rounds=1)
    found = {}
    for name, run in (("decided", decided), ("single", single)):
        path = write_schedule(run)
        assert path is not None
        found[name] = json.loads(Path(path).read_text())
    assert found["decided"]["status"] == "decided" and found["decided"]["deploy"] is True
    assert found["single"]["status"] == "single" and found["single"]["deploy"] is False
    assert found["single"]["not_deployable_because"] == ["single"]
    assert all(cell["status"] == "single" for cell in found["single"]["cells"])
    assert found["decided"]["schema_version"] == 2


def test_historys_best_arm_column_says_incomplete_and_marks_failed_cells(tmp_path):
    from dspark_tui.results import RunStore, load_run
    from dspark_tui.tui.run_facts import best_column
    from tests.report.builders import failed_cell, write_run

    scenarios = {"chat": (512, 256, [1, 16, 64])}
    aborted = write_run(tmp_path / "aborted", {"st3": 3, "st5": 5}, scenarios,
                        skip={("st5", "chat", c) for c in (1, 16, 64)})
    manifest = aborted.read_manifest()
    manifest.status = "aborted"
    aborted.write_manifest(manifest)
    assert best_column(load_run(aborted.path)) == "incomplete"

    whole = write_run(tmp_path / "whole", {"st3": 3, "st5": 5}, scenarios)
    manifest = whole.read_manifest()
    manifest.status = "completed"
    whole.write_manifest(manifest)
    clean = best_column(load_run(whole.path))
    assert not clean.endswith("!") and clean != "incomplete"
    RunStore(whole.path).save_cell(failed_cell("st5", "chat", 64, "server died"))
    assert best_column(load_run(whole.path)).endswith(" !")


def test_a_verify_run_says_first_whether_the_schedule_was_confirmed(tmp_path):
    """Issue 22: the verify run's summary did not say whether the schedule verified; its
    schedule.json says it to a consumer (status, deploy)."""
    from tests.report.test_verification import verification_run

    cases = {
        "confirmed": ({1: 1.10, 16: 1.12, 128: 1.08},
                      "- **Verified: the schedule of `k_sweep` is confirmed**"),
        "refuted": ({1: 0.85, 16: 0.9, 128: 0.88},
                    "- **Refuted: fixed K=4 beats the schedule of `k_sweep`**"),
        "no_gain": ({1: 1.0, 16: 1.0, 128: 1.0},
                    "- **Not confirmed: the schedule of `k_sweep` gains nothing"),
    }
    for outcome, (truth, first) in cases.items():
        run = verification_run(tmp_path / outcome, truth)
        run.manifest.status = "completed"
        assert _summary(render_report(run, lang="en"))[0].startswith(first), outcome
        assert _summary(render_report(run, lang="zh"))[0].startswith("- **")
        path = write_schedule(run)
        assert path is not None
        data = json.loads(path.read_text())
        assert data["status"] == outcome and data["deploy"] is (outcome == "confirmed")
        assert data["fixed_k"] == 4 and data["num_speculative_tokens_per_batch_size"]


def test_a_majority_of_cells_the_bands_interval_does_not_confirm_is_not_decided(tmp_path):
    """Issue 22: a band's answer holds at one cell's level only through the band's own interval.
    K=5 wins five of eight cells by 8 %, K=3 the other three by 30 %: a majority for K=5, a band
    mean that favours K=3. The summary names no setting and gives the band's interval."""
    def split(k: int, scenario: str, c: int) -> float:
        ahead = 1.08 if c in (2, 3, 4, 6, 8) else 1 / 1.3
        return 1000.0 * c * (ahead if k == 5 else 1.0)

    run = k_sweep_run(tmp_path, [3, 5], LOW, rounds=3, noise=0.005, model=split)
    analysis = analyse(run)
    (band,) = analysis.band_answers
    assert band.wins == {"K=3": 3, "K=5": 5} and band.majority == "K=5"
    assert band.verdict == "not shown" and band.band_interval is not None
    assert band.band_interval.ratio < 1.0  # K=5 / K=3 over the band: K=3 leads it
    report = render_report(run, lang="en")
    (line,) = [ln for ln in _summary(report) if "c=2~24" in ln]
    assert "not decided" in line and "deploy" not in line, line
    assert "wins 5 of 8 cells, but the band as a whole is not shown faster than" in line, line
    advice = report.split("## Recommendations", 1)[1]
    assert "| not decided |" in advice and "**5**" not in advice
    (zh,) = [ln for ln in _summary(render_report(run, lang="zh")) if "c=2~24" in ln]
    assert "未判定" in zh and "部署" not in zh


def test_a_bands_arm_among_several_is_confirmed_at_the_family_level(tmp_path):
    """Issue 22, one rule for every best: a band's (and a workload row's) arm is picked for
    leading among the sweep's arms, so the band's interval against each other arm is read at
    decision.family_alpha, as the best fixed K is. Five arms, two rounds: K=5 leads K=4 by
    4 % everywhere and wins 5 of 8 cells; the band's interval at one comparison's level shows it
    faster (the band's and the workload's rows named K=5), at the family level of five arms it
    does not."""
    from dspark_tui.analysis.verdicts import WINS, group_verdict

    def ahead(k: int, scenario: str, c: int) -> float:
        return 1000.0 * c * {1: 0.7, 2: 0.75, 3: 0.8, 4: 1.0, 5: 1.04}[k]

    run = k_sweep_run(tmp_path, [1, 2, 3, 4, 5], LOW, rounds=2, noise=0.01, model=ahead, seed=4)
    analysis = analyse(run)
    assert analysis.verdicts is not None
    keys = [("chat", c) for c in LOW["chat"]]
    per_comparison = group_verdict(analysis.verdicts, keys, "K=4", "K=5")
    assert per_comparison is not None and per_comparison.verdict == WINS  # the old rule's "deploy"
    (band,) = analysis.band_answers
    assert band.majority == "K=5" and band.verdict == "not shown"
    assert band.band_interval is not None and band.band_interval.a == "K=4"
    advice = render_report(run, lang="en").split("## Recommendations", 1)[1]
    band_row, workload_row = [ln for ln in advice.splitlines() if "c=2~24" in ln or "chat |" in ln]
    for row in (band_row, workload_row):
        assert "| not decided |" in row and "does not clear the ±2% band" in row, row
