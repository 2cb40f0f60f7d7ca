"""The charts beside the report: written by write_outputs, valid SVG, linked from both reports,
their points the run's own numbers; left out without data; never costing the report."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dspark_tui.analysis.analysis import RunAnalysis, analyse
from dspark_tui.analysis.decision import decide_k, family_alpha
from dspark_tui.report.chart_drawing import arm_colours, chart_svg
from dspark_tui.report.charts import acceptance_chart, chart_data, margin_chart, throughput_chart
from dspark_tui.report.outputs import write_outputs
from dspark_tui.results import load_run
from dspark_tui.results.store import LoadedRun
from tests.cli import run_cli
from tests.conftest import REPO, SAMPLE_RUN
from tests.report.k_sweep_builders import cumulative_acceptance, k_sweep_run

KS = [0, 1, 2, 3, 4, 5, 6, 7]
SWEEP = {"chat": [1, 4, 16, 64], "rag": [1, 8, 32, 96]}
SVG = "{http://www.w3.org/2000/svg}"


def _svg_texts(path: Path) -> list[str]:
    root = ET.parse(path).getroot()  # raises on anything that is not well-formed XML
    assert root.tag == f"{SVG}svg"
    return ["".join(node.itertext()) for node in root.iter(f"{SVG}text")]


def test_write_outputs_draws_every_chart_and_both_reports_link_them(tmp_path: Path):
    run = k_sweep_run(tmp_path / "run", KS, SWEEP)
    written = write_outputs(run, warn=lambda line: pytest.fail(line))
    charts = sorted((tmp_path / "run" / "charts").glob("*.svg"))
    # This run's cells carry Total tok/s and /metrics, no latencies: no latency chart.
    assert [p.name for p in charts] == ["acceptance.svg", "margin.svg", "throughput.svg"]
    assert set(charts) <= set(written)
    for name in ("report.md", "report.en.md"):
        text = (tmp_path / "run" / name).read_text(encoding="utf-8")
        for chart in charts:
            assert f"](charts/{chart.name})" in text, (name, chart.name)
    texts = _svg_texts(tmp_path / "run" / "charts" / "throughput.svg")
    assert "Total tok/s vs concurrency" in texts
    assert "Concurrency (log2 scale)" in texts and "Total tok/s (tokens/s)" in texts
    assert {"chat", "rag"} <= set(texts) and {f"K={k}" for k in KS} <= set(texts)  # panels, legend
    margin = _svg_texts(tmp_path / "run" / "charts" / "margin.svg")
    assert "tie band ±2%" in margin and "K=3 over the chosen K" in margin
    # the level of the K choice: 8 arms, each comparison at 5 % / 7 (family_alpha)
    assert "Margin over each cell's chosen K, with its 99.3% interval" in margin


def test_the_charts_setting_off_draws_none_and_the_reports_link_none(tmp_path: Path):
    run = k_sweep_run(tmp_path / "run", KS, SWEEP)
    written = write_outputs(run, warn=lambda line: pytest.fail(line), charts=False)
    assert not (tmp_path / "run" / "charts").exists()
    assert [p.name for p in written] == ["report.md", "report.en.md", "analysis.json", "schedule.json"]
    for name in ("report.md", "report.en.md"):
        assert "](charts/" not in (tmp_path / "run" / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[LoadedRun, RunAnalysis]:
    """The K sweep and its analysis, built once for the tests below, which only read them."""
    run = k_sweep_run(tmp_path_factory.mktemp("sweep") / "run", KS, SWEEP)
    return run, analyse(run)


def test_the_charts_points_are_the_runs_numbers(sweep: tuple[LoadedRun, RunAnalysis]):
    run, analysis = sweep
    throughput = throughput_chart(analysis)
    assert throughput is not None and [p.title for p in throughput.panels] == ["chat", "rag"]
    for panel in throughput.panels:
        for series in panel.series:
            for c, y in zip(series.x, series.y, strict=True):
                ok = [m.total_throughput for m in run.measurements
                      if m.arm == series.arm and m.scenario == panel.title and m.concurrency == c]
                assert y == pytest.approx(sum(ok) / len(ok))  # the core table's mean

    # A K sweep's margins are against the K it chose in each cell, not against K = 0: what
    # choosing another K there would give or cost (issue 23).
    margin = margin_chart(analysis)
    assert margin is not None and margin.tie_band == 0.02
    assert margin.title == "Margin over each cell's chosen K, with its 99.3% interval"
    chosen = {c.key: c.k for c in decide_k(analysis).choices}
    assert chosen[("chat", 16)] == 5 and chosen[("chat", 64)] == 2  # the model's, in SWEEP
    series = next(s for s in margin.panels[0].series if s.arm == "K=3")
    assert series.label == "K=3 over the chosen K" and series.low is not None and series.high is not None
    assert margin.panels[0].y_label == "Total tok/s margin over the chosen K (%)"
    for c, reference in ((16, "K=5"), (64, "K=2")):
        pair = analysis.verdicts.pair("chat", c, reference, "K=3")
        i = series.x.index(float(c))
        ratio = pair.ratio if pair.b == "K=3" else 1 / pair.ratio
        assert series.y[i] == pytest.approx((ratio - 1) * 100)
        assert series.low[i] < series.y[i] < series.high[i]  # the choice's own interval
    # The chosen K's own point is 0 where it is chosen, its margin over the choice elsewhere.
    k5 = next(s for s in margin.panels[0].series if s.arm == "K=5")
    assert k5.y[k5.x.index(16.0)] == 0.0 and k5.y[k5.x.index(64.0)] < 0

    acceptance = acceptance_chart(analysis)
    assert acceptance is not None
    k4 = next(s for s in acceptance.panels[0].series if s.arm == "K=4")
    assert k4.x == (1.0, 2.0, 3.0, 4.0)
    assert k4.y == pytest.approx([v * 100 for v in cumulative_acceptance(4)])


def test_a_sweeps_bands_are_at_the_level_the_k_was_chosen_at(sweep: tuple[LoadedRun, RunAnalysis]):
    """Each K's band over the chosen K is the interval the choice rests on: the family level
    of the decision (family_alpha over the fixed-K arms, KDecision.ratio(family=True)), not
    one comparison's (the run's level), which is narrower and can clear the tie band where the
    choice did not. Before, the bands were the pair's own interval at 95 % (review)."""
    _, analysis = sweep
    decision = decide_k(analysis)
    assert decision is not None and analysis.verdicts is not None
    margin = margin_chart(analysis)
    assert margin is not None and margin.fallback is None
    settings = analysis.verdicts.settings
    alpha = family_alpha(settings.look_alpha, len(KS))
    assert margin.level == pytest.approx(1 - alpha) and margin.level > settings.level
    checked = 0
    for panel in margin.panels:
        for series in panel.series:
            assert series.low is not None and series.high is not None and series.level is None
            for i, c in enumerate(series.x):
                choice = decision.choice(panel.title, int(c))
                assert choice is not None
                k = decision.k_of[series.arm]
                if k == choice.k:
                    assert series.y[i] == series.low[i] == series.high[i] == 0.0
                    continue
                ratio = decision.ratio(panel.title, int(c), k, choice.k, family=True)
                assert ratio is not None and ratio.low is not None and ratio.high is not None
                assert (series.low[i], series.high[i]) == pytest.approx(
                    ((ratio.low - 1) * 100, (ratio.high - 1) * 100))
                run_level = decision.ratio(panel.title, int(c), k, choice.k)
                assert run_level is not None and run_level.low is not None
                assert series.low[i] < (run_level.low - 1) * 100  # wider than one comparison's
                checked += 1
    assert checked > 40


def test_a_sweeps_cell_without_a_chosen_k_is_drawn_over_the_fallback_and_said(tmp_path: Path):
    """demo-slo's arms, c=64 measured only by K=1 and the adaptive arm: no K is chosen there,
    so its margin is over K=1 (the fallback), a series of its own labelled so, and the title
    says it; the adaptive arm's band is at the run's level (its verdicts in the adaptive
    section), said in its label, the fixed K's at the choice's. Before, the c=64 point sat on
    the line "over the chosen K" (review)."""
    from tests.report.k_sweep_builders import stated_sweep

    truth = {"K=1": {4: 100.0, 16: 120.0, 64: 90.0}, "K=3": {4: 112.0, 16: 110.0},
             "K=6": {4: 105.0, 16: 95.0}, "K=6 adaptive": {4: 104.0, 16: 130.0, 64: 99.0}}
    analysis = analyse(load_run(stated_sweep(tmp_path / "run", truth)))
    margin = margin_chart(analysis)
    assert margin is not None and analysis.verdicts is not None
    settings = analysis.verdicts.settings
    assert margin.fallback == "K=1" and margin.level == pytest.approx(1 - settings.look_alpha / 2)
    assert margin.title == ("Margin over each cell's chosen K (K=1 where a cell has none), "
                            "with its 97.5% interval")
    by_label = {s.label: s for s in margin.panels[0].series}
    over = by_label["K=6 adaptive over K=1 where no K is chosen (95.0% interval)"]
    assert over.x == (64.0,) and over.over == "K=1" and over.level == pytest.approx(settings.level)
    assert over.y[0] == pytest.approx((99 / 90 - 1) * 100, abs=0.5)
    chosen = by_label["K=6 adaptive over the chosen K (95.0% interval)"]
    assert chosen.x == (4.0, 16.0) and chosen.over is None
    assert all(64.0 not in s.x for s in margin.panels[0].series if s is not over)
    assert by_label["K=3 over the chosen K"].level is None  # the title's level
    texts = _svg_texts_of(chart_svg(margin))
    assert "K=6 adaptive over K=1 where no K is chosen (95.0% interval)" in texts
    # one panel: the title wraps to the figure's width (it ran off both edges), all of it said
    lines = [text for text in texts if len(text) > 3 and text in margin.title]
    assert len(lines) == 2 and " ".join(lines) == margin.title, texts


def _svg_texts_of(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return ["".join(node.itertext()) for node in root.iter(f"{SVG}text")]


def test_arm_colours_are_the_same_in_every_chart(sweep: tuple[LoadedRun, RunAnalysis]):
    charts = chart_data(sweep[1])
    assert len({c.arms for c in charts}) == 1  # one arm list, so one colour per arm
    colours = arm_colours(charts[0].arms)
    assert len(set(colours.values())) == len(KS)


@pytest.fixture(scope="module")
def seed_drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy of the seed run after write_outputs drew its charts, and its English report as
    rendered before that: drawn once (~2.5 s of matplotlib) for the tests below, which only read it."""
    from dspark_tui.report.markdown import render_report

    run_dir = tmp_path_factory.mktemp("drawn") / "seed"
    shutil.copytree(SAMPLE_RUN, run_dir)
    before = render_report(load_run(run_dir), lang="en")
    write_outputs(load_run(run_dir), warn=lambda line: pytest.fail(line))
    return run_dir, before


def test_a_chart_without_data_is_left_out_without_error(seed_drawn: tuple[Path, str]):
    run_dir, _ = seed_drawn  # write_outputs with warn=pytest.fail: no error
    # The seed has no /metrics, hence no acceptance chart; and one measurement a cell, so its
    # margins are points without a band.
    names = sorted(p.name for p in (run_dir / "charts").glob("*.svg"))
    assert names == ["latency.svg", "margin.svg", "throughput.svg"]
    assert "acceptance.svg" not in (run_dir / "report.md").read_text(encoding="utf-8")
    margin = margin_chart(analyse(load_run(run_dir)))
    assert margin is not None and all(s.low is None for p in margin.panels for s in p.series)
    assert margin.title == "Margin over st=3 (one measurement a cell: no interval)"
    assert math.isclose(margin.panels[-1].series[0].y[-1], (22700.92 / 29828.36 - 1) * 100)


def test_charts_that_cannot_be_written_never_cost_the_report(tmp_path: Path):
    run_dir = tmp_path / "seed"
    shutil.copytree(SAMPLE_RUN, run_dir)
    (run_dir / "charts").write_text("a file where the folder would go")
    warnings: list[str] = []
    written = write_outputs(load_run(run_dir), warn=warnings.append)
    assert written[:2] == [run_dir / "report.md", run_dir / "report.en.md"]
    assert warnings == [f"{run_dir / 'charts'}: charts not written (File exists)"]
    for name in ("report.md", "report.en.md"):
        text = (run_dir / name).read_text(encoding="utf-8")
        assert "| chat_short | 1 |" in text and "charts/" not in text  # no link to a missing chart


@pytest.mark.slow
def test_report_writes_no_chart_through_a_symlink_leading_out_of_the_run(tmp_path: Path):
    """A crafted or shared run directory whose charts/ is a symlink to a folder of the user's:
    `dspark-tui report` writes its reports and names the charts it leaves out; nothing lands
    outside the run directory."""
    run_dir = tmp_path / "seed"
    shutil.copytree(SAMPLE_RUN, run_dir)
    outside = tmp_path / "home"
    outside.mkdir()
    (run_dir / "charts").symlink_to(outside)
    done = run_cli("report", str(run_dir), timeout=120, env={"DSPARK_CHARTS": "true"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == (f"dspark-tui: warning: {run_dir / 'charts'}: charts not written "
                           "(a symlink leading out of the run directory)\n")
    assert list(outside.iterdir()) == []
    assert "charts/" not in (run_dir / "report.md").read_text(encoding="utf-8")


def test_the_svg_is_the_same_for_the_same_data(seed_drawn: tuple[Path, str]):
    run_dir, _ = seed_drawn
    chart = throughput_chart(analyse(load_run(run_dir)))
    assert chart is not None
    # Drawn again here, against the drawing write_outputs saved: no date, fixed ids, so
    # reports diff cleanly.
    assert chart_svg(chart) == (run_dir / "charts" / "throughput.svg").read_text(encoding="utf-8")


def test_importing_the_report_does_not_import_matplotlib():
    code = ("import sys, dspark_tui.report, dspark_tui.report.outputs, dspark_tui.report.markdown, "
            "dspark_tui.report.headline, dspark_tui.report.charts; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_a_report_rendered_again_links_the_charts_already_drawn(seed_drawn: tuple[Path, str]):
    """A screen that regenerates report.md (render_report alone) keeps the charts' links."""
    from dspark_tui.report.markdown import render_report

    run_dir, before_drawing = seed_drawn
    assert "charts/" not in before_drawing
    again = render_report(load_run(run_dir), lang="en")
    assert again == (run_dir / "report.en.md").read_text(encoding="utf-8")
    assert "[Total tok/s vs concurrency](charts/throughput.svg)" in again
