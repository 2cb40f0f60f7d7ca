"""Everything a report says, computed once from a loaded run (the sections only format it)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar, cast

import pandas as pd

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.bands import BandAnswer, band_answers
from dspark_tui.analysis.completeness import Completeness, completeness
from dspark_tui.analysis.layout import RunLayout, layout_of
from dspark_tui.analysis.measurements import aggregate_cells, measurements_of
from dspark_tui.analysis.verdicts import SINGLE, UNSURE, RunVerdicts, Settings, analyse_measurements
from dspark_tui.model import CellKey
from dspark_tui.model.statistics import TieBand
from dspark_tui.results.store import LoadedRun

T = TypeVar("T")

LONG_INPUT = 4096
LONG_OUTPUT = 1024


@dataclass
class GapStory:
    """The pair and scenario whose gap moves most with concurrency, with all pairs' trends."""

    base: str
    other: str
    trend: pd.Series
    gaps: pd.DataFrame
    other_trends: pd.DataFrame


@dataclass
class RunAnalysis:
    run: LoadedRun
    layout: RunLayout
    cells: pd.DataFrame
    winners: pd.DataFrame
    bands: pd.DataFrame
    best: pd.DataFrame
    gap_story: GapStory | None
    outliers: pd.DataFrame
    failed: pd.DataFrame
    missing: list[CellKey]
    metric_lookup: dict[tuple[str, int, str], dict[str, float]] = field(default_factory=dict)
    verdicts: RunVerdicts | None = None
    unsure: pd.DataFrame = field(default_factory=pd.DataFrame)
    _by_scenario: dict[str, pd.DataFrame] | None = None
    _band_answers: list[BandAnswer] | None = None
    _completeness: Completeness | None = None
    # The K-sweep pipeline's results, each computed once per analysis (`computed`).
    _computed: dict[Hashable, object] = field(default_factory=dict, repr=False)

    def computed(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()` computed once per analysis under `key`: the store of the K-sweep pipeline
        (the decision, the /metrics counters, the deploy answer, the verification, the SLO
        answer), which the reports in two languages, analysis.json, schedule.json and the
        headline all ask for. The modules above own their keys (analysis/decision.py,
        deploy.py, verification.py, slo.py); this layer knows none of them."""
        if key not in self._computed:
            self._computed[key] = make()
        return cast(T, self._computed[key])

    @property
    def arms(self) -> list[str]:
        return self.layout.arms

    @property
    def band(self) -> TieBand:
        """The run's tie band (its statistics settings), which every sentence about ties uses."""
        return self.verdicts.settings.band if self.verdicts is not None else TieBand()

    @property
    def decided(self) -> pd.DataFrame:
        """The winner table without its unsure cells: what findings and advice may rest on."""
        return self.winners[self.winners["verdict"] != UNSURE]

    @property
    def band_answers(self) -> list[BandAnswer]:
        """Each concurrency band's answer over all its compared cells (analysis/bands.py)."""
        if self._band_answers is None:
            self._band_answers = band_answers(self.winners, self.decided, self.unsure, self.arms,
                                              self.verdicts, self.layout.plans)
        return self._band_answers

    @property
    def completeness(self) -> Completeness:
        """Whether the run measured its whole plan (analysis/completeness.py), read once."""
        if self._completeness is None:
            self._completeness = completeness(self.run, self.layout)
        return self._completeness

    @property
    def has_intervals(self) -> bool:
        """True when some comparison rests on repeated sessions (not single measurements)."""
        return self.verdicts is not None and any(p.verdict != SINGLE for p in self.verdicts.pairs)

    @property
    def has_server_metrics(self) -> bool:
        return bool(self.cells["has_server"].any())

    def metric(self, scenario: str, concurrency: int, arm: str, name: str) -> float | None:
        value = self.metric_lookup.get((scenario, concurrency, arm), {}).get(name)
        return None if value is None or value != value else value

    def scenario_winners(self, scenario: str) -> pd.DataFrame:
        """The scenario's decided cells (unsure ones make no recommendation)."""
        if self._by_scenario is None:
            decided = self.winners[self.winners["verdict"] != UNSURE]
            self._by_scenario = dict(tuple(decided.groupby("scenario", sort=False)))
        return self._by_scenario.get(scenario, self.winners.iloc[0:0])

    def evidence(
        self, keys: list[tuple[str, int]], arms: list[str] | None = None
    ) -> dict[str, dict[str, float]] | None:
        """Per arm over the given cells: mean acceptance length, KV peak, preemptions; None
        when none of them carries server metrics (nothing to cite)."""
        evidence: dict[str, dict[str, float]] = {}
        for arm in arms or self.arms:
            found: dict[str, list[float]] = {}
            for scenario, concurrency in keys:
                values = self.metric_lookup.get((scenario, int(concurrency), arm))
                if not values:
                    continue
                for name in ("accept_length", "kv_usage_peak", "preemptions"):
                    value = values.get(name)
                    if value is not None and value == value:
                        found.setdefault(name, []).append(value)
            summary: dict[str, float] = {}
            if "accept_length" in found:
                summary["accept_length"] = sum(found["accept_length"]) / len(found["accept_length"])
            if "kv_usage_peak" in found:
                summary["kv_usage_peak"] = max(found["kv_usage_peak"])
            if "preemptions" in found:
                summary["preemptions"] = sum(found["preemptions"])
            if summary:
                evidence[arm] = summary
        return evidence or None

    def workload_groups(self) -> list[tuple[str, list[str]]]:
        """Scenarios by shape (long input, long output, short), when the plan gives lengths."""
        shapes = [s for s in self.layout.scenarios if s.input_len and s.output_len]
        tested = set(self.winners["scenario"]) if not self.winners.empty else set()
        shapes = [s for s in shapes if s.name in tested]
        groups = [
            ("rec_long_input", [s.name for s in shapes if (s.input_len or 0) >= LONG_INPUT]),
            ("rec_long_output", [s.name for s in shapes if (s.output_len or 0) >= LONG_OUTPUT]),
            (
                "rec_short",
                [
                    s.name
                    for s in shapes
                    if (s.input_len or 0) < LONG_INPUT and (s.output_len or 0) < LONG_OUTPUT
                ],
            ),
        ]
        return [(key, names) for key, names in groups if names]


def analyse(run: LoadedRun) -> RunAnalysis:
    layout = layout_of(run)
    arms = layout.arms
    measurements = measurements_of(run)
    by_cell = aggregate_cells(measurements)
    settings = Settings.of_manifest(run.manifest)
    verdicts = analyse_measurements(measurements, arms, settings)
    cells = fr.cells_frame(by_cell.values(), layout)
    winners = fr.with_verdicts(fr.winner_frame(cells, arms, settings.band), verdicts)
    # Findings rest on decided cells only; unsure ones are listed as such.
    decided = winners[winners["verdict"] != UNSURE].reset_index(drop=True)
    unsure = winners[winners["verdict"] == UNSURE].reset_index(drop=True)
    bands = fr.band_frame(decided, arms)
    best = fr.best_arm_frame(decided, arms, layout.scenario_names())

    story: GapStory | None = None
    outlier_parts = []
    for base, other in fr.arm_pairs(arms):
        gaps = fr.pair_gap_frame(cells, base, other)
        if gaps.empty:
            continue
        outlier_parts.append(fr.outlier_frame(gaps, cell_noise(verdicts, base, other)))
        # The story of a moving gap is a finding: told from decided cells only.
        open_cells = (set(zip(unsure["scenario"], unsure["concurrency"], strict=True))
                      if not unsure.empty else set())
        decided_gaps = gaps[[(s, int(c)) not in open_cells
                             for s, c in zip(gaps["scenario"], gaps["concurrency"], strict=True)]]
        trends = fr.gap_trend_frame(decided_gaps.reset_index(drop=True), settings.band)
        top = fr.most_moving(trends)
        if top is None:
            continue
        if story is None or abs(top["change"]) > abs(story.trend["change"]):
            story = GapStory(base, other, top, decided_gaps.reset_index(drop=True), trends)
    outliers = pd.concat([o for o in outlier_parts if not o.empty], ignore_index=True) if any(
        not o.empty for o in outlier_parts
    ) else pd.DataFrame()

    failed = cells[cells["status"] != "ok"][["arm", "scenario", "concurrency", "status", "error"]]
    present = set(by_cell)
    missing = [key for key in layout.expected if key not in present]

    lookup: dict[tuple[str, int, str], dict[str, float]] = {}
    ok = cells[cells["status"] == "ok"]
    looked_up = ["p99_e2e_latency_ms", "mean_tpot_ms", "total_throughput", "accept_length",
                 "kv_usage_peak", "preemptions"]
    for scenario, concurrency, arm, *values in ok[
        ["scenario", "concurrency", "arm", *looked_up]
    ].itertuples(index=False):
        lookup[(scenario, int(concurrency), arm)] = dict(zip(looked_up, values, strict=True))
    return RunAnalysis(
        run=run,
        layout=layout,
        cells=cells,
        winners=winners,
        bands=bands,
        best=best,
        gap_story=story,
        outliers=outliers,
        failed=failed.reset_index(drop=True),
        missing=missing,
        metric_lookup=lookup,
        verdicts=verdicts,
        unsure=unsure,
    )


def cell_noise(verdicts: RunVerdicts | None, a: str, b: str) -> float | None:
    """The standard error of one cell's mean log ratio b/a from the run's own noise: session
    and residual spread of the pair over its rounds; None for single measurements."""
    if verdicts is None:
        return None
    for noise in verdicts.noise:
        if {noise.a, noise.b} == {a, b} and noise.rounds > 1:
            session = noise.session_sd or 0.0
            residual = noise.residual_sd or 0.0
            if session == 0.0 and residual == 0.0:
                return None
            return float((session ** 2 + residual ** 2) ** 0.5 / noise.rounds ** 0.5)
    return None
