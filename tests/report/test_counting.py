"""Cells counted across rounds: ok when every planned measurement is ok, skipped when the user
skipped one, and a run whose only gaps are skips reads "completed, 1 skipped"."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.analysis.counting import cell_counts
from dspark_tui.model import CellResult, CellStatus, parse_plan
from dspark_tui.model.events import RoundPlanned
from dspark_tui.model.outcome import CellCounts, cell_outcome
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from tests.report.builders import model_cell

SCENARIOS = {"chat": (512, 256, [1, 16])}


def _plan_text(rounds: int) -> str:
    return "\n".join([
        'name = "rounds"', 'model = "/models/m"', 'backend_label = "vllm-dspark (TP=8)"',
        "[server]", 'command = ["vllm", "serve", "{model}", "--spec-tokens", "{spec_tokens}"]',
        "[bench]", 'driver = "native"', f"rounds = {rounds}", "adaptive_rounds = 1",
        "[[arms]]", 'name = "st=3"', "vars = { spec_tokens = 3 }",
        "[[arms]]", 'name = "st=5"', "vars = { spec_tokens = 5 }",
        "[[scenarios]]", 'name = "chat"', "input_len = 512", "output_len = 256",
        "concurrencies = [1, 16]", "num_prompts = 8",
    ]) + "\n"


def _measured(arm: str, k: int, c: int, rnd: int, status: CellStatus = CellStatus.OK) -> CellResult:
    cell = model_cell(arm, k, "chat", c).model_copy(update={"round": rnd, "session": f"s{rnd}"})
    if status != CellStatus.OK:
        cell = cell.model_copy(update={"status": status, "error": f"{status.value} by the user",
                                       "metrics": cell.metrics.model_copy(update={"total_throughput": None})})
    return cell


def _run(folder: Path, rounds: int, *, skipped: set[tuple[str, int, int]] = frozenset(),  # type: ignore[assignment]
         missing: set[tuple[str, int, int]] = frozenset(),  # type: ignore[assignment]
         adaptive: list[tuple[str, int]] = ()) -> RunStore:  # type: ignore[assignment]
    """A run directory as a runner leaves it: run.json, the rounds it announced, one file a
    measurement."""
    plan = parse_plan(_plan_text(rounds))
    folder.mkdir(parents=True)
    store = RunStore(folder)
    store.write_manifest(manifest_for_plan(plan, plan_source="test"))
    arms = {"st=3": 3, "st=5": 5}
    planned = [(r, [(s, c) for s in ["chat"] for c in (1, 16)], "planned") for r in range(1, rounds + 1)]
    if adaptive:
        planned.append((rounds + 1, list(adaptive), "adaptive"))
    for rnd, cells, reason in planned:
        store.append_event(RoundPlanned(round=rnd, arms=list(arms), cells=cells, reason=reason))
        for arm, k in arms.items():
            for _, c in cells:
                if (arm, c, rnd) in missing:
                    continue
                status = CellStatus.SKIPPED if (arm, c, rnd) in skipped else CellStatus.OK
                store.save_cell(_measured(arm, k, c, rnd, status))
    return store


def test_the_outcome_rule():
    assert cell_outcome(2, ["ok", "ok"]) == "ok"
    assert cell_outcome(2, ["ok"]) == "not_run"
    assert cell_outcome(2, ["ok", "skipped"]) == "skipped"
    assert cell_outcome(2, ["skipped", "failed"]) == "failed"
    assert CellCounts(ok=3, skipped=1).completed and CellCounts(ok=4).completed
    assert not CellCounts(ok=3, not_run=1).completed


def test_a_user_skip_reads_completed_1_skipped(tmp_path: Path):
    store = _run(tmp_path / "run", rounds=2, skipped={("st=5", 16, 2)})
    run = load_run(store.path)
    assert cell_counts(run) == CellCounts(ok=3, skipped=1)
    en = render_report(run, lang="en")
    assert "- Cells: completed, 1 skipped — 3 ok, 1 skipped, 0 failed, 0 not run (of 4)" in en
    zh = render_report(run)
    assert "- 单元：已完成，1 个跳过 — 3 个完成，1 个跳过，0 个失败，0 个未测（共 4 个）" in zh


def test_a_cell_is_ok_only_when_every_planned_round_is(tmp_path: Path):
    # Round 2 of st=3 c=1 never ran: that cell is not ok, though round 1 measured it fine.
    store = _run(tmp_path / "run", rounds=2, missing={("st=3", 1, 2)})
    run = load_run(store.path)
    assert cell_counts(run) == CellCounts(ok=3, not_run=1)
    assert "- Cells: incomplete — 3 ok, 0 failed, 1 not run (of 4)" in render_report(run, lang="en")


def test_an_adaptive_round_adds_to_what_is_planned(tmp_path: Path):
    # The runner announced round 3 for c=16 only; st=5 never got to it.
    store = _run(tmp_path / "run", rounds=2, adaptive=[("chat", 16)], missing={("st=5", 16, 3)})
    assert cell_counts(load_run(store.path)) == CellCounts(ok=3, not_run=1)


def test_a_run_without_announced_rounds_counts_its_records(tmp_path: Path):
    """The seed (sample_results) carries today's plan (rounds = 2) but was measured once."""
    from tests.conftest import SAMPLE_RUN

    assert cell_counts(load_run(SAMPLE_RUN)) == CellCounts(ok=36)


def test_a_skipped_cell_is_listed_as_skipped_not_failed(tmp_path: Path):
    store = _run(tmp_path / "run", rounds=1, skipped={("st=5", 16, 1)})
    en = render_report(load_run(store.path), lang="en")
    assert "- Cells: completed, 1 skipped — 3 ok, 1 skipped, 0 failed, 0 not run (of 4)" in en
    assert "- `st=5` / `chat` / c=16: skipped — skipped by the user" in en
    assert "failed — skipped" not in en
