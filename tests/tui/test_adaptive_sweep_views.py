"""The K-sweep views see a sweep that carries adaptive-verification arms (demo-slo's shape:
K=1, 3, 6 and "K=6 adaptive"): run.json's K axis is the fixed arms' (manifest_k_values), the
adaptive arm is named as such; History gives the sweep's answer, the run screen offers the
decision view, and the decision view shows the adaptive arm against the chosen K, in both
languages. The run's measurements come from a stated truth (0.2 % noise, three rounds),
saved to disk as a run saves them."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.analysis.layout import is_k_sweep, manifest_adaptive_arms, manifest_k_values
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.tui.run_facts import best_column
from dspark_tui.tui.screens.decision import DecisionScreen, open_decision
from tests.report.k_sweep_builders import stated_cells, stated_sweep
from tests.tui.helpers import make_app, screen_text, wait_until

# K=3 fastest at c=4, K=1 at c=16 (K=3 9 % behind it); adaptive faster than the choice at c=16.
TRUTH = {"K=1": {4: 100.0, 16: 120.0}, "K=3": {4: 112.0, 16: 110.0},
         "K=6": {4: 105.0, 16: 95.0}, "K=6 adaptive": {4: 104.0, 16: 130.0}}


def adaptive_sweep(folder: Path, truth: dict[str, dict[int, float]] | None = None) -> Path:
    return stated_sweep(folder, TRUTH if truth is None else truth)


def test_run_json_gives_the_fixed_arms_as_the_k_axis_and_names_the_adaptive_arm(tmp_path: Path):
    manifest = load_run(adaptive_sweep(tmp_path / "run")).manifest
    assert manifest_k_values(manifest) == {"K=1": 1, "K=3": 3, "K=6": 6}
    assert is_k_sweep(manifest_k_values(manifest))
    assert manifest_adaptive_arms(manifest) == ["K=6 adaptive"]


def test_historys_best_arm_is_the_sweeps_answer(tmp_path: Path):
    run = load_run(adaptive_sweep(tmp_path / "run"))
    # The schedule over the fixed arms: K=3 at c=4, K=1 at c=16; both cells decided.
    assert best_column(run, "en") == "K=1–3 ✓"
    assert best_column(run, "zh") == "K=1–3 ✓"


async def test_the_decision_view_shows_the_adaptive_arm_against_the_chosen_k(tmp_path: Path):
    run_dir = adaptive_sweep(tmp_path / "results" / "demo_slo_20261203-090000")
    for lang, heading, row, form, own in (
            ("en", "Adaptive verification against the chosen K", "faster",
             "the hybrid is routing by load", "vs K=6"),
            ("zh", "自适应验证与所选 K 的对比", "更快", "混合方案为按负载路由", "相对 K=6")):
        app = make_app(tmp_path, settings={"language": lang})
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            open_decision(app.screen, run_dir, load_run(run_dir).manifest)
            await wait_until(pilot, lambda shown=app: isinstance(shown.screen, DecisionScreen)
                             and shown.screen.answer is not None, timeout=30, what="the decision")
            screen = app.screen
            assert isinstance(screen, DecisionScreen)
            title = str(screen.query_one("#decision-title").render())
            assert "1, 3, 6" in title  # the fixed arms' K
            widget = screen.query_one("#decision-adaptive")
            screen.query_one("#decision-body").scroll_to_widget(widget, animate=False, top=True)
            await pilot.pause()
            text = screen_text(app)
            assert heading in text, text
            assert "K=6 adaptive" in text
            lines = [line for line in text.splitlines() if "mixed" in line and " 16 " in line]
            assert lines and row in lines[0] and "K=1" in lines[0] and "+8." in lines[0], lines
            # and against its own K's fixed arm (K=6: 130 over 95), as the report's column
            assert own in text and "+37." in lines[0] and lines[0].count(row) == 2, lines
            assert form in "".join(text.split()) or form in text


def test_the_decision_view_gives_the_analysis_own_k_comparison_and_its_words():
    """The own-K columns are the analysis's values (AdaptiveCell.vs_own, own_outcome) in the
    screen catalogue's words; a cell whose own-K arm was not measured says so. Before, the view
    showed only the comparison with the chosen K (review of issue 24)."""
    import io
    import tempfile

    from rich.console import Console

    from dspark_tui.tui.screens.decision import adaptive_table, read_decision

    truth = {arm: dict(by_c) for arm, by_c in TRUTH.items()}
    del truth["K=6"][4]  # the own K lost at c=4; K=1 and K=3 still choose there
    with tempfile.TemporaryDirectory() as tmp:
        answer = read_decision(adaptive_sweep(Path(tmp) / "run", truth)).answer
    assert answer is not None
    (arm,) = answer.adaptive
    assert arm.own_arm == "K=6"
    assert [c.own_outcome for c in arm.cells] == ["missing", "wins"]
    said = {}
    for lang in ("en", "zh"):
        console = Console(width=76, record=True, file=io.StringIO())
        table = adaptive_table(answer, lang)
        assert table is not None
        console.print(table)
        said[lang] = console.export_text()
    rows = {line.split()[1]: line for line in said["en"].splitlines() if line.startswith("mixed")}
    own = arm.cells[1].vs_own
    assert own is not None
    assert rows["16"].split()[-2:] == [f"{(own.value - 1) * 100:+.1f}%", "faster"], said["en"]
    assert rows["4"].split()[-3:] == ["—", "not", "measured"], said["en"]
    assert "vs K=6: against the fixed arm of its own K" in said["en"]
    zh = {line.split()[1]: line for line in said["zh"].splitlines() if line.startswith("mixed")}
    assert zh["4"].split()[-2:] == ["—", "未测"] and zh["16"].split()[-1] == "更快", said["zh"]


def test_two_fixed_k_beside_an_adaptive_arm_are_a_sweep_on_every_screen(tmp_path: Path):
    """K=3, K=6 and K=6 adaptive: the analysis (ArmKs.is_sweep) decides K over the two fixed
    arms, so the screens' quick check from run.json must say "sweep" too — before, it asked for
    K=0 or three K values and refused the decision view the report gives (review)."""
    from dspark_tui.analysis.layout import manifest_is_sweep

    plan = resolve_plan("demo-slo")[0]
    plan = plan.model_copy(update={"arms": [a for a in plan.arms if a.name != "K=1"]})
    manifest = manifest_for_plan(plan, plan_source="demo-slo")
    assert manifest_k_values(manifest) == {"K=3": 3, "K=6": 6}
    assert not is_k_sweep(manifest_k_values(manifest))  # the rule without adaptive arms
    assert manifest_is_sweep(manifest)
    folder = tmp_path / "run"
    folder.mkdir()
    manifest.status = "completed"
    RunStore(folder).write_manifest(manifest)
    truth = {arm: by_c for arm, by_c in TRUTH.items() if arm != "K=1"}
    for cell in stated_cells(truth, "mixed"):
        RunStore(folder).save_cell(cell)
    assert best_column(load_run(folder), "en") is not None  # the sweep's K answer, not arms


def counted_sweep(folder: Path, counted: set[str]) -> Path:
    """The adaptive sweep with /metrics spec-decode counters on the `counted` arms' cells: K
    drafts a step, position i accepted 0.8**i of drafts (the adaptive arm, verifying fewer,
    0.75**i), each cell's a little lower the higher its concurrency."""
    from dspark_tui.model import ServerSummary

    folder.mkdir(parents=True)
    manifest = manifest_for_plan(resolve_plan("demo-slo")[0], plan_source="demo-slo")
    manifest.status = "completed"
    store = RunStore(folder)
    store.write_manifest(manifest)
    for cell in stated_cells(TRUTH, "mixed"):
        if cell.arm in counted:
            k = int(cell.arm.split()[0].removeprefix("K="))
            base = 0.75 if "adaptive" in cell.arm else 0.8
            per_position = [base ** (i + 1) * (1 - cell.concurrency / 400) for i in range(k)]
            cell.server = ServerSummary(samples=40, mean_acceptance_length=1 + sum(per_position),
                                        per_position_acceptance=per_position,
                                        running_mean=cell.concurrency * 0.9,
                                        running_peak=cell.concurrency)
        store.save_cell(cell)
    return folder


def test_the_decision_views_acceptance_gives_the_adaptive_arm_as_the_report_does(tmp_path: Path):
    """The acceptance table listed the fixed K only (the analysis' counters are per K); the
    report gives the adaptive arm's acceptance in its server table (accept len per cell) and its
    acceptance chart (per position, the mean over cells). The view now has the arm's row, by
    name, with the same numbers, and says what its positions mean, in en and zh; an adaptive
    arm without counters is said to have none."""
    import io

    from rich.console import Console

    from dspark_tui.analysis.analysis import analyse
    from dspark_tui.report.charts import acceptance_chart
    from dspark_tui.tui.screens.decision import acceptance_table, read_decision

    arms = set(TRUTH)
    run_dir = counted_sweep(tmp_path / "run", arms)
    answer = read_decision(run_dir).answer
    assert answer is not None
    said = {}
    for lang in ("en", "zh"):
        console = Console(width=80, record=True, file=io.StringIO())
        console.print(acceptance_table(answer, lang))
        said[lang] = console.export_text()
    (row,) = [line for line in said["en"].splitlines()
              if line.startswith("K=6 adaptive ") and "%" in line]
    chart = acceptance_chart(analyse(load_run(run_dir)))
    assert chart is not None
    (series,) = [s for s in chart.panels[0].series if s.arm == "K=6 adaptive"]
    cells = [c for c in load_run(run_dir).measurements if c.arm == "K=6 adaptive"]
    accept = sum(c.server.mean_acceptance_length for c in cells) / len(cells)  # type: ignore[union-attr,operator]
    assert row.split()[2:] == ["2", f"{accept:.2f}", *(f"{v:.0f}%" for v in series.y)], said["en"]
    assert [line.split()[0] for line in said["en"].splitlines()[2:6]] == ["1", "3", "6", "K=6"]
    flat = " ".join(said["en"].split())
    assert ("K=6 adaptive verifies adaptively (K=6 drafted a step): a position it did not verify "
            "counts as not accepted") in flat, said["en"]
    assert "K=6 adaptive 自适应验证（每步起草 K=6）：它未验证的位置计为未接受" in said["zh"], said["zh"]

    answer = read_decision(counted_sweep(tmp_path / "fixed_only", arms - {"K=6 adaptive"})).answer
    assert answer is not None
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(acceptance_table(answer, "en"))
    text = console.export_text()
    assert "K=6 adaptive: no spec-decode counters (/metrics) in its cells" in " ".join(text.split())
    assert not any(line.startswith("K=6 adaptive ") and "%" in line for line in text.splitlines()), text
