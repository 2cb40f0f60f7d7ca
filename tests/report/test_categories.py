"""The per-category section: scenarios grouped by their plan category, each category's best K
per load read from the K decision, and plans that ask for category-pure cells."""

from __future__ import annotations

import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.deploy import deploy_answer
from dspark_tui.model import PlanError, parse_plan
from dspark_tui.report.categories import KRun, category_section, runs_text
from dspark_tui.report.markdown import render_report
from dspark_tui.report.words import Texts
from tests.report.k_sweep_builders import k_sweep_run, plan_text

# Total tok/s per (scenario, concurrency) and K: code keeps K=5 to c=16, chat drops to K=3
# from c=1 and to K=1 at c=64 — the shape the simulator's profiles give (docs/simulator.md).
TRUTH = {
    ("code", 1): {1: 1050, 3: 1800, 5: 2190},
    ("code", 16): {1: 11600, 3: 18700, 5: 22100},
    ("code", 64): {1: 36000, 3: 37400, 5: 34000},
    ("chat", 1): {1: 790, 3: 895, 5: 850},
    ("chat", 16): {1: 8900, 3: 9800, 5: 8900},
    ("chat", 64): {1: 28000, 3: 20700, 5: 15000},
}
GRID = {"code": [1, 16, 64], "chat": [1, 16, 64]}


def _run(tmp_path, categories: dict[str, str] | None = None):
    run = k_sweep_run(tmp_path / "run", [1, 3, 5], GRID, model=lambda k, s, c: TRUTH[(s, c)][k])
    for scenario in run.manifest.plan["scenarios"]:
        if categories and scenario["name"] in categories:
            scenario["category"] = categories[scenario["name"]]
    return run


def test_each_category_gets_its_best_k_per_load_from_the_decision(tmp_path):
    run = _run(tmp_path, {"code": "code", "chat": "chat"})
    report = render_report(run, "en")
    section = report[report.index("## Per category"):]
    assert "- **code** (`code`): K=5 to c=16; K=3 from c=64\n" in section
    assert "- **chat** (`chat`): K=3 to c=16; K=1 from c=64\n" in section
    # the table: one row per category, scenario, concurrency and K, with the /metrics acceptance
    row = next(line for line in section.splitlines() if line.startswith("| chat | 64 | 1 |"))
    assert row.endswith("| 1.90 | 90 % |")
    row = next(line for line in section.splitlines() if line.startswith("| chat | 64 | 3 |"))
    assert row.endswith("| 90/76/61 % |")
    assert "## 按类别" in render_report(run, "zh")


def test_two_scenarios_of_one_category_are_listed_under_it(tmp_path):
    run = _run(tmp_path, {"code": "code", "chat": "code"})
    analysis = analyse(run)
    lines = category_section(analysis, deploy_answer(analysis), Texts("en"))
    assert "- **code** (`code`, `chat`): " in lines
    assert "  - `chat`: K=3 to c=16; K=1 from c=64" in lines
    assert any(line.startswith("| code (chat) | 64 | 1 |") for line in lines)


def test_a_run_without_categories_has_no_section(tmp_path):
    assert "## Per category" not in render_report(_run(tmp_path), "en")


@pytest.mark.parametrize("runs, says", [
    ([KRun(3, 1, 64, True)], "K=3 at every load (c=1–64)"),
    ([KRun(3, 8, 8, True)], "K=3 at c=8"),
    ([KRun(5, 1, 4, True), KRun(3, 16, 16, True), KRun(1, 64, 128, True)],
     "K=5 to c=4; K=3 at c=16; K=1 from c=64"),
    ([KRun(5, 1, 16, True, (1,)), KRun(3, 64, 64, True)],
     "K=5 to c=16; K=3 from c=64 (unsure at c=1: the fastest K is not shown faster)"),
    ([KRun(5, 1, 16, False)], "K=5 at every load (c=1–16) (some choices rest on one round: unverified)"),
])
def test_runs_of_one_k_read_as_a_sentence(runs: list[KRun], says: str):
    assert runs_text(runs, "en") == says


def _category_plan(driver: str, category: str) -> str:
    text = plan_text([1, 3], {"code": [1]}).replace('driver = "sglang"', f'driver = "{driver}"')
    return text.replace('name = "code"', f'name = "code"\ncategory = "{category}"')


def test_a_category_needs_the_native_driver():
    assert parse_plan(_category_plan("native", "code")).scenarios[0].category == "code"
    cell = parse_plan(_category_plan("native", "code")).cells()[0]
    assert (cell.category, cell.dataset, cell.dataset_path) == ("code", "jsonl", None)
    with pytest.raises(PlanError) as caught:
        parse_plan(_category_plan("sglang", "code"), "p.toml")
    assert "scenario 'code' sets a category: category-pure cells need bench.driver" in str(caught.value)
    with pytest.raises(PlanError, match=r"category"):
        parse_plan(_category_plan("native", ""), "p.toml")
