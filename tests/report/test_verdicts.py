"""One analysis everywhere: verdicts from repeated measurements in the report, analysis.json,
the CLI and the live table, and the report's honesty rules (findings from decided cells only)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.live import comparison_rows
from dspark_tui.analysis.verdicts import Settings, analyse_measurements
from dspark_tui.model import CellResult, ClientMetrics
from dspark_tui.report.markdown import render_report
from dspark_tui.report.outputs import analysis_json, run_verdicts
from dspark_tui.results import load_run
from tests.conftest import REPO, SAMPLE_RUN
from tests.report.builders import manifest

ARMS = {"st=3": 3, "st=5": 5}
SCENARIOS = {"chat": (512, 256, [1, 8, 64]), "long": (4096, 512, [1, 32])}
# True Total tok/s ratio st=5 / st=3 per cell: clear wins, a tie, and one too close to call.
TRUE_RATIO = {("chat", 1): 1.20, ("chat", 8): 1.10, ("chat", 64): 1.00, ("long", 1): 1.15,
              ("long", 32): 0.97}


def measurements(rounds: int, repeats: int = 1, seed: int = 5) -> list[CellResult]:
    rng = np.random.default_rng(seed)
    out = []
    for rnd in range(1, rounds + 1):
        session = {arm: rng.normal(0, 0.002) for arm in ARMS}
        for arm in ARMS:
            for rep in range(1, repeats + 1):
                for (scenario, concurrency), ratio in TRUE_RATIO.items():
                    base = 1000.0 * concurrency ** 0.8 * (ratio if arm == "st=5" else 1.0)
                    value = base * math.exp(session[arm] + rng.normal(0, 0.002))
                    out.append(CellResult(arm=arm, scenario=scenario, concurrency=concurrency,
                                          round=rnd, repeat=rep, session=f"{arm}-r{rnd}",
                                          metrics=ClientMetrics(total_throughput=value,
                                                                duration=10.0, completed=64)))
    return out


def loaded(tmp_path, rounds: int, **bench: object):
    """A run directory with run.json (the plan's statistics keys) and the measurements in memory
    (the loader is exercised by the runner's tests)."""
    m = manifest(ARMS, SCENARIOS)
    m.plan["bench"].update({"rounds": rounds, "adaptive_rounds": 0, **bench})
    tmp_path.mkdir(parents=True, exist_ok=True)
    from dspark_tui.results import RunStore

    store = RunStore(tmp_path)
    store.write_manifest(m)
    run = load_run(tmp_path)
    data = measurements(rounds)
    run.measurements = data
    run.cells = {c.key: c for c in data}
    return run


def test_verdicts_of_a_three_round_run(tmp_path):
    run = loaded(tmp_path, rounds=3)
    verdicts = run_verdicts(run)
    by_cell = {p.key: p for p in verdicts.pairs}
    assert by_cell[("chat", 1)].verdict == "wins" and by_cell[("chat", 1)].winner == "st=5"
    assert by_cell[("long", 1)].winner == "st=5"
    assert by_cell[("chat", 64)].verdict == "tie" and by_cell[("chat", 64)].winner is None
    assert by_cell[("long", 32)].verdict in {"wins", "unsure"}
    for p in verdicts.pairs:
        assert p.n == 3
        assert p.ci_low < p.ratio < p.ci_high


def test_report_shows_intervals_verdicts_and_the_summary_first(tmp_path):
    run = loaded(tmp_path, rounds=3)
    text = render_report(run, lang="en")
    summary = text.index("## Summary")
    assert summary < text.index("## Core metrics")
    assert "How sure: of 5 comparisons" in text
    winner_table = text[text.index("## Throughput winners"):]
    header = next(line for line in winner_table.splitlines() if line.startswith("| Scenario"))
    assert header.endswith("| Margin | Margin interval | Verdict |")
    assert "| chat | 64 |" in winner_table and "| tie |" in winner_table


def test_unsure_cells_are_listed_and_kept_out_of_the_findings(tmp_path):
    run = loaded(tmp_path, rounds=2, tie_band=0.10)  # the 10 % cell now sits on the band's edge
    analysis = analyse(run)
    unsure = {(r.scenario, int(r.concurrency)) for r in analysis.unsure.itertuples()}
    assert ("chat", 8) in unsure
    text = render_report(run, lang="en")
    assert "## Unsure cells" in text
    assert "- `chat` c=8: `st=5` leads by" in text
    counted = int(analysis.bands["cells"].sum())
    assert counted == len(analysis.winners) - len(unsure)


def test_analysis_json_has_the_documented_shape_and_matches_the_live_table(tmp_path):
    run = loaded(tmp_path, rounds=3)
    data = json.loads(analysis_json(run))
    assert set(data) >= {"pairs", "cells", "settings", "noise"}
    pair = data["pairs"][0]
    assert set(pair) >= {"scenario", "concurrency", "a", "b", "n", "ratio", "ci_low", "ci_high",
                         "verdict", "winner"}
    assert {c["arm"] for c in data["cells"]} == set(ARMS)
    settings = Settings.of_manifest(run.manifest)
    rows = comparison_rows(run.measurements, list(ARMS), settings=settings)
    live = {(r.scenario, r.concurrency): (r.verdict, r.winner) for r in rows}
    assert live == {(p["scenario"], p["concurrency"]): (p["verdict"], p["winner"]) for p in data["pairs"]}


def test_single_measurements_keep_the_seeds_rule_everywhere():
    """One measurement per arm: no interval, and the 2 % band decides ties in the live table as
    in the report (they used to disagree at 1.8 %)."""
    a = CellResult(arm="st=3", scenario="s", concurrency=64, metrics=ClientMetrics(total_throughput=1000.0))
    b = a.model_copy(update={"arm": "st=5", "metrics": ClientMetrics(total_throughput=1018.0)})
    verdicts = analyse_measurements([a, b], ["st=3", "st=5"], Settings())
    (pair,) = verdicts.pairs
    assert (pair.verdict, pair.winner, pair.ci_low) == ("single", None, None)
    (row,) = comparison_rows([a, b], ["st=3", "st=5"])
    assert row.winner is None and row.verdict == "single"
    assert row.margin == pytest.approx(0.018)


def test_report_json_on_the_sample_run_works_read_only(tmp_path):
    done = subprocess.run([sys.executable, "-m", "dspark_tui", "report", str(SAMPLE_RUN), "--json"],
                          capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["pairs"]) == 18
    assert {p["verdict"] for p in data["pairs"]} == {"single"}
    assert not (SAMPLE_RUN / "analysis.json").exists()


def test_session_noise_pools_into_a_prior_line_a_plan_accepts(tmp_path):
    import tomllib

    from dspark_tui.analysis.noise_prior import pooled_session_noise
    from dspark_tui.model import SessionNoisePrior

    runs = [loaded(tmp_path / "a", rounds=3), loaded(tmp_path / "b", rounds=2)]
    pooled = pooled_session_noise(runs)
    assert pooled.df == 3  # (3 - 1) + (2 - 1)
    assert 0 <= pooled.sd < 0.05
    prior = SessionNoisePrior(**tomllib.loads(pooled.toml_line())["session_noise_prior"])
    assert prior.df == 3 and "a, b" in prior.source
    # Used as the prior, it lends its degrees of freedom to a two-round run's intervals.
    bare = run_verdicts(runs[1]).noise[0].df
    helped_settings = Settings(rounds=2, prior=prior, prior_source=prior.source)
    helped = analyse_measurements(runs[1].measurements, list(ARMS), helped_settings).noise[0]
    assert helped.df > bare and helped.prior
    # ... and the report says it leaned on it.
    runs[1].manifest.plan["bench"]["session_noise_prior"] = {"sd": prior.sd, "df": prior.df,
                                                             "source": prior.source}
    assert "leans on a stated prior (sd" in render_report(runs[1], lang="en")


def test_a_run_whose_every_cell_is_unsure_still_reports(tmp_path):
    """Nothing decided: the summary says too close to call, no finding or recommendation is
    made from the unsure cells, and the next step says to measure them again."""
    run = loaded(tmp_path, rounds=2)
    shaky = []
    for m in run.measurements:
        if m.arm == "st=5":  # round 1: +0 %, round 2: +20 %: a wide interval around +10 %
            base = next(x for x in run.measurements if x.arm == "st=3" and x.key.scenario == m.scenario
                        and x.concurrency == m.concurrency and x.round == m.round)
            value = base.metrics.total_throughput * (1.0 if m.round == 1 else 1.2)
            m = m.model_copy(update={"metrics": ClientMetrics(total_throughput=value)})
        shaky.append(m)
    run.measurements = shaky
    analysis = analyse(run)
    assert len(analysis.unsure) == len(TRUE_RATIO) and analysis.bands.empty
    text = render_report(run, lang="en")
    assert text.count("too close to call") >= 2
    assert "Recommended setting" not in text
    assert f"{len(TRUE_RATIO)} cells are still unsure" in text
