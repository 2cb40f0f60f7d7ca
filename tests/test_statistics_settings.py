"""The run's statistics settings: typed from the plan to RunStarted to RunState to the verdicts,
with an old run's defaults in one place (model/statistics.py)."""

from __future__ import annotations

import json

from dspark_tui.analysis.verdicts import Settings
from dspark_tui.model import events as ev
from dspark_tui.model import parse_plan
from dspark_tui.model.run_state import RunState
from dspark_tui.model.statistics import SessionNoisePrior, StatisticsSettings
from dspark_tui.results.manifest import manifest_for_plan
from tests.report.builders import manifest, plan_text


def test_run_started_carries_the_plan_s_settings_as_they_are():
    plan = parse_plan(plan_text({"st=3": 3, "st=5": 5}, {"chat": (128, 64, [1])}))
    plan = plan.model_copy(update={"bench": plan.bench.model_copy(update={
        "tie_band": 0.05, "session_noise_prior": SessionNoisePrior(sd=0.01, df=8, source="aa")})})
    started = ev.RunStarted(run_dir="/x", name="p", arms=["a"], total_cells=1,
                            statistics=plan.statistics())
    back = ev.parse_event(ev.file_json(started))
    assert isinstance(back, ev.RunStarted) and back.statistics == plan.statistics()
    state = RunState()
    state.apply(back)
    assert state.settings is back.statistics
    settings = Settings.of(state.settings)
    assert (settings.tie_band, settings.rounds, settings.adaptive_rounds) == (
        0.05, plan.bench.rounds, plan.bench.adaptive_rounds)
    assert settings.prior is not None and (settings.prior.sd, settings.prior.df) == (0.01, 8)
    assert settings.prior_source == "aa"
    # The same settings as the finished run's run.json snapshot gives.
    assert Settings.of_manifest(manifest_for_plan(plan, plan_source="t")) == settings


def test_an_old_run_without_statistics_gets_the_old_defaults():
    """Events written before RunStarted had statistics, and dicts lacking a key: the defaults of
    model/statistics.py (one round, no adaptive rounds, one lane, the 2 % band)."""
    old = json.dumps({"kind": "run_started", "t": 1.0, "run_dir": "/x", "name": "p",
                      "arms": ["a", "b"], "total_cells": 4})
    state = RunState()
    state.apply(ev.RunStarted.model_validate_json(old))
    assert state.statistics is None
    assert state.settings == StatisticsSettings()
    assert (state.settings.rounds, state.settings.adaptive_rounds, state.settings.parallel,
            state.settings.tie_band) == (1, 0, 1, 0.02)
    assert state.parallel == 1
    partial = json.dumps({"kind": "run_started", "t": 1.0, "run_dir": "/x", "name": "p",
                          "arms": ["a"], "total_cells": 4,
                          "statistics": {"tie_band": 0.03, "rounds": 3, "parallel": 2,
                                         "session_noise_prior": None, "external_arms": ["a"]}})
    state.apply(ev.RunStarted.model_validate_json(partial))
    assert state.settings == StatisticsSettings(tie_band=0.03, rounds=3, parallel=2,
                                                external_arms=("a",))
    # The analysis's own Settings() agrees with those defaults: no second set.
    assert Settings() == Settings.of(StatisticsSettings())


def test_an_old_snapshot_lacking_the_keys_reads_as_one_round():
    m = manifest({"st=3": 3, "st=5": 5}, {"chat": (128, 64, [1])})
    for key in ("rounds", "adaptive_rounds", "tie_band", "alpha", "session_noise_prior"):
        m.plan["bench"].pop(key, None)
    assert StatisticsSettings.from_snapshot(m.plan) == StatisticsSettings()
    m.plan["arms"][1]["url"] = "http://10.0.0.5:8000"
    assert StatisticsSettings.from_snapshot(m.plan).external_arms == ("st=5",)
