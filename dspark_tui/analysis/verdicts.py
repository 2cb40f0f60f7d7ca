"""Verdicts from a run's measurements: the one analysis that the runner (adaptive rounds), the
live table, the printer, History and the report all call, so they cannot disagree.

`analyse_measurements` is a pure function of the measurements and the plan's statistics
settings; `analysis.json` is its `to_json()`. The method is in docs/statistics.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from dspark_tui.analysis.layout import layout_of
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.model import CellResult, Plan
from dspark_tui.model.statistics import StatisticsSettings, TieBand
from dspark_tui.results.manifest import RunManifest
from dspark_tui.results.store import LoadedRun
from dspark_tui.stats.outliers import outliers
from dspark_tui.stats.paired import (
    SINGLE,
    TIE,
    UNSURE,
    WINS,
    FixedSessionTerm,
    NodeCheck,
    NoiseFit,
    PairVerdict,
    Quantile,
    SessionPrior,
    Verdict,
    decide,
    fit_noise,
    node_check,
    round_means,
)
from dspark_tui.stats.sequential import nominal_alpha

ANALYSIS_SCHEMA_VERSION = 1


# A run that states no statistics settings has an old run's (model/statistics.py, the one place).
_OLD_RUN = StatisticsSettings()


@dataclass(frozen=True)
class Settings:
    """The plan's statistics keys (bench.*), as a run was started with them, in the form the
    analysis computes with (`of` a StatisticsSettings; the defaults are an old run's)."""

    tie_band: float = _OLD_RUN.tie_band
    alpha: float = _OLD_RUN.alpha
    rounds: int = _OLD_RUN.rounds
    adaptive_rounds: int = _OLD_RUN.adaptive_rounds
    prior: SessionPrior | None = None
    prior_source: str = ""
    # Arms whose server something else runs (plan `url`): never restarted between rounds, so
    # their rounds are no sessions (docs/statistics.md, "Servers not restarted").
    external_arms: tuple[str, ...] = ()

    @property
    def band(self) -> TieBand:
        return TieBand(self.tie_band)

    @property
    def looks(self) -> int:
        """Verdicts are read after the planned rounds and after each adaptive one."""
        return 1 + self.adaptive_rounds

    @property
    def look_alpha(self) -> float:
        """Two-sided level of each look (stats/sequential.py): alpha over all looks together."""
        return nominal_alpha(self.alpha, self.rounds, self.looks)

    @property
    def level(self) -> float:
        """Confidence level of each interval."""
        return 1.0 - self.look_alpha

    @classmethod
    def of(cls, statistics: StatisticsSettings) -> Settings:
        prior = statistics.session_noise_prior
        return cls(
            tie_band=statistics.tie_band, alpha=statistics.alpha, rounds=statistics.rounds,
            adaptive_rounds=statistics.adaptive_rounds,
            prior=SessionPrior(prior.sd, prior.df) if prior is not None else None,
            prior_source=prior.source if prior is not None else "",
            external_arms=statistics.external_arms,
        )

    @classmethod
    def of_plan(cls, plan: Plan) -> Settings:
        return cls.of(plan.statistics())

    @classmethod
    def of_manifest(cls, manifest: RunManifest) -> Settings:
        """What a run was started with (its run.json plan snapshot)."""
        return cls.of(StatisticsSettings.from_snapshot(manifest.plan))

    def fixed_session(self, a: str, b: str) -> FixedSessionTerm | None:
        """The session noise a pair's rounds cannot average away: each arm never restarted keeps
        its one offset, half the paired spread the prior states (None without a prior)."""
        share = sum(arm in self.external_arms for arm in (a, b)) / 2.0
        if share == 0 or self.prior is None:
            return None
        return FixedSessionTerm(share * self.prior.sd**2, float(self.prior.df))


@dataclass(frozen=True)
class PairResult:
    scenario: str
    concurrency: int
    a: str
    b: str
    n: int  # rounds in which both arms have an ok measurement
    ratio: float  # Total tok/s of b / a (geometric mean over rounds)
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    winner: str | None
    rounds_to_settle: int | None = None
    # Rounds left out of this cell's pairing: the two arms' measurements ran on different nodes.
    unpaired_rounds: int = 0
    # The standard error of log(ratio) and its quantile rule, for the interval at another level
    # (`interval_at`: a family of comparisons); not in analysis.json.
    se: float | None = None
    quantile: Quantile | None = None

    def interval_at(self, alpha: float) -> tuple[float, float] | None:
        """The ratio's interval (b / a) at the two-sided level `alpha` instead of the look's;
        None without one (single measurements)."""
        if self.se is None or self.quantile is None or self.verdict == SINGLE:
            return None
        half = self.quantile.at(alpha) * self.se
        return math.exp(math.log(self.ratio) - half), math.exp(math.log(self.ratio) + half)

    @property
    def key(self) -> tuple[str, int]:
        return (self.scenario, self.concurrency)

    @property
    def margin(self) -> float:
        """The winner's (or b's) lead: ratio - 1 seen from the leading arm."""
        return max(self.ratio, 1.0 / self.ratio) - 1.0

    @property
    def leader(self) -> str:
        return self.b if self.ratio >= 1.0 else self.a

    def margin_interval(self) -> tuple[float, float] | None:
        """The interval of the leader's margin (leader / other - 1)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        if self.ratio >= 1.0:
            return self.ci_low - 1.0, self.ci_high - 1.0
        return 1.0 / self.ci_high - 1.0, 1.0 / self.ci_low - 1.0


@dataclass(frozen=True)
class CellArmStats:
    """One arm in one cell over its ok measurements (Total tok/s)."""

    scenario: str
    concurrency: int
    arm: str
    n: int
    rounds: int
    mean: float
    median: float
    sd: float | None
    within_session_cv: float | None  # spread of repeats inside a session
    between_session_cv: float | None  # spread of the session means


@dataclass(frozen=True)
class PairNoise:
    a: str
    b: str
    session_sd: float | None  # log scale, of the paired ratio
    residual_sd: float | None
    df: float | None
    rounds: int
    replicated_cells: int
    prior: str | None
    # False when an arm of the pair was never restarted (an external server): its rounds
    # measured within-session noise only, unless a prior supplied the session term.
    session_replication: bool = True
    # Rounds on several nodes (docs/statistics.md, "Rounds on several nodes"): distinct nodes of
    # the paired rounds (None, this machine, counts as one), rounds with a cell left unpaired
    # (arms on different nodes) and how many such cell-rounds, and the check that the round
    # effects are alike on every node (None: fewer than two nodes with two rounds each).
    nodes: int = 1
    unpaired_rounds: int = 0
    unpaired_cells: int = 0
    node_check: NodeCheck | None = None


@dataclass
class RunVerdicts:
    settings: Settings
    arms: list[str]
    pairs: list[PairResult] = field(default_factory=list)
    cells: list[CellArmStats] = field(default_factory=list)
    noise: list[PairNoise] = field(default_factory=list)
    nodes: list[str | None] = field(default_factory=list)  # of the ok measurements; None: this machine
    unpaired_rounds: int = 0  # rounds in which some pair of arms had a cell on two nodes
    _index: dict[tuple[str, int, frozenset[str]], PairResult] | None = field(default=None, repr=False)

    def pair(self, scenario: str, concurrency: int, a: str, b: str) -> PairResult | None:
        if self._index is None or len(self._index) != len(self.pairs):
            self._index = {(p.scenario, p.concurrency, frozenset((p.a, p.b))): p for p in self.pairs}
        return self._index.get((scenario, concurrency, frozenset((a, b))))

    def to_json(self) -> dict[str, Any]:
        s = self.settings
        return {
            "schema_version": ANALYSIS_SCHEMA_VERSION,
            "method": "paired log ratio by round; session term from each arm's own rounds, "
                      "residual noise per concurrency band; t interval, Satterthwaite df at the "
                      "level calibrated for estimating it; one level per look (Pocock-type, "
                      "for this plan's looks)",
            "settings": {"tie_band": s.tie_band, "alpha": s.alpha, "looks": s.looks,
                         "level": round(s.level, 6), "rounds": s.rounds,
                         "adaptive_rounds": s.adaptive_rounds,
                         "session_noise_prior": (None if s.prior is None else
                                                 {"sd": s.prior.sd, "df": s.prior.df,
                                                  "source": s.prior_source})},
            "arms": self.arms,
            # False: some arm's server was never restarted between rounds (an external server),
            # so rounds are no sessions; `session_noise` says what the intervals cover.
            "session_replication": not s.external_arms,
            "unreplicated_arms": list(s.external_arms),
            "session_noise": session_noise_source(s),
            "pairs": [_rounded({k: v for k, v in asdict(p).items() if k not in _NOT_IN_JSON})
                      for p in self.pairs],
            "cells": [_rounded(asdict(c)) for c in self.cells],
            "noise": [_rounded(asdict(n)) for n in self.noise],
            # The nodes the measurements ran on (null: this machine); arms are paired only
            # within a node, and `unpaired_rounds` counts the rounds where they were not.
            "nodes": self.nodes,
            "unpaired_rounds": self.unpaired_rounds,
        }

    @property
    def known_nodes(self) -> list[str]:
        """The cluster nodes named (None, a local server or a url's, is none of them)."""
        return [node for node in self.nodes if node is not None]

    @property
    def several_nodes(self) -> bool:
        return len(self.known_nodes) >= 2


_NOT_IN_JSON = ("se", "quantile")


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (round(v, 6) if isinstance(v, float) else _rounded(v) if isinstance(v, dict) else v)
            for k, v in row.items()}


@dataclass(frozen=True)
class _Table:
    """The ok measurements as arrays: cell index, arm index, round, repeat, log value."""

    cells: list[tuple[str, int]]
    arms: list[str]
    cell: np.ndarray
    arm: np.ndarray
    rnd: np.ndarray
    log_value: np.ndarray
    value: np.ndarray
    session: list[str]
    node: np.ndarray  # index into `nodes`
    nodes: list[str | None]

    @property
    def n_rounds(self) -> int:
        return int(self.rnd.max()) if len(self.rnd) else 0


def _table(measurements: Iterable[CellResult], arms: Sequence[str]) -> _Table:
    cell_index: dict[tuple[str, int], int] = {}
    arm_index = {name: i for i, name in enumerate(arms)}
    node_index: dict[str | None, int] = {}
    cells, arm_ids, rounds, values, sessions, nodes = [], [], [], [], [], []
    for m in measurements:
        value = m.metrics.total_throughput
        if not m.ok or value is None or not value > 0 or m.arm not in arm_index:
            continue
        key = (m.scenario, m.concurrency)
        cells.append(cell_index.setdefault(key, len(cell_index)))
        arm_ids.append(arm_index[m.arm])
        rounds.append(max(m.round, 1))
        values.append(value)
        sessions.append(m.session or f"{m.arm}#r{m.round}")
        nodes.append(node_index.setdefault(m.node, len(node_index)))
    value_array = np.asarray(values, dtype=float)
    return _Table(list(cell_index), list(arms), np.asarray(cells, dtype=int),
                  np.asarray(arm_ids, dtype=int), np.asarray(rounds, dtype=int),
                  np.log(value_array), value_array, sessions, np.asarray(nodes, dtype=int),
                  list(node_index))


_NO_NODE, _MIXED = -1, -2  # a (cell, round) an arm did not measure; one it measured on two nodes


def _round_nodes(table: _Table, arm: int, n_cells: int, n_rounds: int) -> np.ndarray:
    """Per (cell, round), the node that arm's measurements ran on (the codes of `table.nodes`);
    _NO_NODE where it has none, _MIXED where its repeats ran on different nodes."""
    of_arm = table.arm == arm
    flat = table.cell[of_arm] * n_rounds + (table.rnd[of_arm] - 1)
    node = table.node[of_arm]
    low = np.full(n_cells * n_rounds, np.iinfo(int).max)
    high = np.full(n_cells * n_rounds, _NO_NODE)
    np.minimum.at(low, flat, node)
    np.maximum.at(high, flat, node)
    out = np.where(high == _NO_NODE, _NO_NODE, np.where(low == high, high, _MIXED))
    return out.reshape(n_cells, n_rounds)


@dataclass(frozen=True)
class _Pairing:
    """One pair's paired log ratios with the rounds whose arms ran on different nodes left out."""

    d: np.ndarray  # cells x rounds, NaN where not paired
    node: np.ndarray  # cells x rounds: the shared node of a paired entry, else negative
    unpaired: np.ndarray  # cells x rounds: both arms measured, on different nodes

    @property
    def round_node(self) -> np.ndarray:
        """Per round, the one node of its paired cells; _MIXED when they ran on several."""
        paired = self.node >= 0
        low = np.where(paired, self.node, np.iinfo(int).max).min(axis=0)
        high = np.where(paired, self.node, _NO_NODE).max(axis=0)
        return np.where(~paired.any(axis=0), _NO_NODE, np.where(low == high, high, _MIXED))

    @property
    def nodes(self) -> int:
        return max(len(np.unique(self.node[self.node >= 0])), 1)


def _pairing(means_a: np.ndarray, means_b: np.ndarray, nodes_a: np.ndarray,
             nodes_b: np.ndarray, unknown: int) -> _Pairing:
    """d = b - a where both arms measured the cell in that round, unless both name a node and
    the nodes differ (the node is the block). A measurement without a node (`unknown`'s code:
    a local server, a url's server, a run from before nodes) is paired as rounds always were:
    a url arm against a cluster arm is compared by round, on machines that always differ."""
    d = means_b - means_a
    measured = (nodes_a >= 0) & (nodes_b >= 0)
    same = measured & ((nodes_a == nodes_b) | (nodes_a == unknown) | (nodes_b == unknown))
    shared = np.where(nodes_a == unknown, nodes_b, nodes_a)
    unpaired = ~np.isnan(d) & ~same
    paired_node = np.where(same & (shared != unknown), shared, _NO_NODE)
    return _Pairing(np.where(same, d, np.nan), paired_node, unpaired)


def analyse_measurements(measurements: Iterable[CellResult], arms: Sequence[str],
                         settings: Settings) -> RunVerdicts:
    """Per cell and arm: descriptive statistics; per cell and pair of arms (in plan order, b
    after a): the ratio b/a with its interval and verdict; per pair: the noise it rests on."""
    return _analyse(measurements, arms, settings, describe=True)


def _analyse(measurements: Iterable[CellResult], arms: Sequence[str], settings: Settings,
             describe: bool) -> RunVerdicts:
    """analyse_measurements; without `describe`, the pairs alone (no cell statistics, no
    noise records or node checks): what the runner's question after each look reads."""
    table = _table(measurements, arms)
    first_seen: dict[str, int] = {}
    for scenario, _ in table.cells:  # scenarios in the order they come (the plan's, for a run)
        first_seen.setdefault(scenario, len(first_seen))
    result = RunVerdicts(settings=settings, arms=list(arms), nodes=table.nodes)
    if not table.cells:
        return result
    n_cells, n_rounds = len(table.cells), table.n_rounds
    means = [round_means(table.cell[table.arm == i], table.rnd[table.arm == i],
                         table.log_value[table.arm == i], n_cells, n_rounds)
             for i in range(len(arms))]
    nodes = [_round_nodes(table, i, n_cells, n_rounds) for i in range(len(arms))]
    unknown = table.nodes.index(None) if None in table.nodes else _NO_NODE - 10
    if describe:
        result.cells = _cell_stats(table, means)
    unpaired_rounds = np.zeros(n_rounds, dtype=bool)
    groups = noise_groups([c for _, c in table.cells])  # the same cells for every pair
    labels = None
    if GROUPS == "resid":
        labels = np.zeros(n_cells, dtype=int)
        for label, members in enumerate(groups):
            labels[members] = label
    for ia, ib in _pairs(len(arms)):
        pairing = _pairing(means[ia], means[ib], nodes[ia], nodes[ib], unknown)
        d = pairing.d
        unpaired_rounds |= pairing.unpaired.any(axis=0)
        a, b = arms[ia], arms[ib]
        fixed = settings.fixed_session(a, b)
        unreplicated = a in settings.external_arms or b in settings.external_arms
        # Rounds of a server never restarted are no sessions: a prior enters as the fixed
        # term, never pooled with their spread as if it were session spread.
        prior = None if unreplicated else settings.prior
        own = None if unreplicated or pairing.nodes > 1 else (means[ia], means[ib])
        fit = fit_noise(d, prior, own, labels)
        verdicts = []
        for group in [np.arange(n_cells)] if GROUPS == "resid" else groups:
            if len(group) == n_cells:
                verdicts += _sequential_verdicts(d, settings, fit, prior, fixed, own, labels)
                continue
            sub = None if own is None else (own[0][group], own[1][group])
            verdicts += [replace(v, cell=int(group[v.cell])) for v in _sequential_verdicts(
                d[group], settings, fit_noise(d[group], prior, sub), prior, fixed, sub)]
        verdicts.sort(key=lambda v: v.cell)
        if describe:
            noise = _pair_noise(a, b, fit, settings, unreplicated, fixed is not None)
            result.noise.append(_with_nodes(noise, pairing, settings))
        for v in verdicts:
            scenario, concurrency = table.cells[v.cell]
            winner = None if v.winner is None else (a if v.winner == "a" else b)
            if v.verdict == SINGLE and not settings.band.within_log(v.log_ratio):
                winner = b if v.log_ratio > 0 else a  # the seed's rule: a margin beyond the band
            result.pairs.append(PairResult(scenario, concurrency, a, b, v.n, v.ratio, v.ci_low,
                                           v.ci_high, v.verdict, winner, v.rounds_to_settle,
                                           int(pairing.unpaired[v.cell].sum()), v.se, v.quantile))
    result.unpaired_rounds = int(unpaired_rounds.sum())
    order = {key: i for i, key in enumerate(sorted(table.cells, key=lambda k: (first_seen[k[0]], k[1])))}
    result.pairs.sort(key=lambda p: (order[p.key], arms.index(p.a), arms.index(p.b)))
    result.cells.sort(key=lambda c: (order[(c.scenario, c.concurrency)], arms.index(c.arm)))
    return result


# Cells whose noise is fitted together: concurrency bands (c = 1, 2-32, 33-64, >= 65), a band
# with fewer than MIN_GROUP_CELLS cells joined with the next (docs/statistics.md).
NOISE_BAND_EDGES = (1, 32, 64)
MIN_GROUP_CELLS = 3
GROUPS = "resid"  # "none": one noise level for every cell (bench/noise_processes.py compares)


def noise_groups(concurrencies: Sequence[int]) -> list[np.ndarray]:
    """Indices of the cells fitted together, in concurrency bands of MIN_GROUP_CELLS or more."""
    if GROUPS not in ("bands", "resid"):
        return [np.arange(len(concurrencies))]
    band = np.searchsorted(np.asarray(NOISE_BAND_EDGES), np.asarray(concurrencies), side="left")
    groups: list[list[int]] = []
    current: list[int] = []
    for b in range(len(NOISE_BAND_EDGES) + 1):
        current += [int(i) for i in np.flatnonzero(band == b)]
        if len(current) >= MIN_GROUP_CELLS:
            groups.append(current)
            current = []
    if current:
        if groups:
            groups[-1] += current
        else:
            groups.append(current)
    return [np.asarray(sorted(g), dtype=int) for g in groups]


def _sequential_verdicts(d: np.ndarray, settings: Settings, fit: NoiseFit | None,
                         prior: SessionPrior | None, fixed: FixedSessionTerm | None,
                         arms: tuple[np.ndarray, np.ndarray] | None = None,
                         groups: np.ndarray | None = None) -> list[PairVerdict]:
    """Each cell judged at the look after which it was last measured, on the data of that look
    (rounds 1 .. rounds + look - 1): exactly the decision the runner's schedule made, so the
    per-look level of stats/sequential.py covers it. Without adaptive rounds: one look, all data.

    `fit` is fit_noise of all of `d` with this prior, `arms` and `groups`: the last look's, so
    that look reuses it rather than fitting the same data again."""
    planned = max(settings.rounds, 1)
    looks_run = d.shape[1] - planned + 1
    if settings.adaptive_rounds == 0 or looks_run <= 1:  # one look: all the data, `fit` of it
        return decide(d, tie_band=settings.tie_band, alpha=settings.look_alpha, prior=prior,
                      fit=fit, fixed=fixed, groups=groups)
    present = ~np.isnan(d)
    last_round = np.where(present.any(axis=1), d.shape[1] - np.argmax(present[:, ::-1], axis=1), 0)
    look_of_cell = np.clip(last_round - planned + 1, 1, looks_run)
    chosen: dict[int, PairVerdict] = {}
    for look in range(1, looks_run + 1):
        if not np.any(look_of_cell == look):
            continue
        upto = planned + look - 1
        at_look = decide(d[:, :upto], tie_band=settings.tie_band, alpha=settings.look_alpha,
                         prior=prior, fit=fit if upto == d.shape[1] else None, fixed=fixed,
                         groups=groups,
                         arms=None if arms is None else (arms[0][:, :upto], arms[1][:, :upto]))
        chosen.update((v.cell, v) for v in at_look if look_of_cell[v.cell] == look)
    return [chosen[i] for i in sorted(chosen)]


def _pairs(count: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(count) for j in range(i + 1, count)]


def _pair_noise(a: str, b: str, fit: NoiseFit | None, settings: Settings, unreplicated: bool,
                fixed_used: bool) -> PairNoise:
    prior = None
    if settings.prior is not None:
        prior = f"sd {settings.prior.sd:g}, df {settings.prior.df} {settings.prior_source}".strip()
    if fit is None:
        return PairNoise(a, b, None, None, None, 0, 0, prior, not unreplicated)
    used = fit.prior_used or fixed_used
    return PairNoise(a, b, math.sqrt(fit.session_var), math.sqrt(fit.residual_var), fit.df,
                     fit.rounds, fit.cells, prior if used else None, not unreplicated)


def _with_nodes(noise: PairNoise, pairing: _Pairing, settings: Settings) -> PairNoise:
    """The pair's node counts and node check. The check reads the planned rounds only when
    adaptive rounds followed: those re-measure a few cells, so their round effects are noisier
    and the test's equal-variance assumption would not hold for them."""
    planned = pairing.d.shape[1] if settings.adaptive_rounds == 0 else max(settings.rounds, 1)
    check = node_check(pairing.d[:, :planned], pairing.round_node[:planned])
    return replace(noise, nodes=pairing.nodes, unpaired_rounds=int(pairing.unpaired.any(axis=0).sum()),
                   unpaired_cells=int(pairing.unpaired.sum()), node_check=check)


def session_noise_source(settings: Settings) -> str:
    """What the intervals' session term rests on: "rounds" (servers restarted each round),
    "prior" (a never-restarted server's offset taken from the stated prior) or
    "within-session only" (a never-restarted server and no prior)."""
    if not settings.external_arms:
        return "rounds"
    return "prior" if settings.prior is not None else "within-session only"


def _cell_stats(table: _Table, means: list[np.ndarray]) -> list[CellArmStats]:
    """Vectorised per (cell, arm): grouping by sort, so 36,000 measurements take milliseconds."""
    n_arms, n_rounds = len(table.arms), table.n_rounds
    group = table.cell * n_arms + table.arm
    size = len(table.cells) * n_arms
    count = np.bincount(group, minlength=size)
    mean = np.bincount(group, weights=table.value, minlength=size) / np.maximum(count, 1)
    square = np.bincount(group, weights=(table.value - mean[group]) ** 2, minlength=size)
    order = np.lexsort((table.value, group))
    starts = np.concatenate(([0], np.cumsum(count)[:-1]))
    sorted_values = table.value[order]
    lower = sorted_values[np.minimum(starts + (count - 1) // 2, len(order) - 1)]
    upper = sorted_values[np.minimum(starts + count // 2, len(order) - 1)]
    median = (lower + upper) / 2.0
    # Within a session: log values around their (cell, arm, round) mean, pooled over rounds.
    session = group * n_rounds + (table.rnd - 1)
    s_count = np.bincount(session, minlength=size * n_rounds)
    s_mean = np.bincount(session, weights=table.log_value, minlength=size * n_rounds) / np.maximum(s_count, 1)
    within_ss = np.bincount(group, weights=(table.log_value - s_mean[session]) ** 2, minlength=size)
    sessions = (s_count > 0).reshape(size, n_rounds).sum(axis=1)
    within_df = count - sessions
    out = []
    for ci, (scenario, concurrency) in enumerate(table.cells):
        for ai, arm in enumerate(table.arms):
            g = ci * n_arms + ai
            n = int(count[g])
            if n == 0:
                continue
            round_means_ = means[ai][ci][~np.isnan(means[ai][ci])]
            out.append(CellArmStats(
                scenario, concurrency, arm, n, int(sessions[g]), float(mean[g]), float(median[g]),
                math.sqrt(square[g] / (n - 1)) if n > 1 else None,
                math.sqrt(within_ss[g] / within_df[g]) if within_df[g] > 0 else None,
                float(round_means_.std(ddof=1)) if len(round_means_) > 1 else None,
            ))
    return out


@dataclass(frozen=True)
class GroupVerdict:
    """Two arms over a group of cells (a concurrency band, a scenario, a traffic mix): the
    weighted geometric mean of the cells' ratios b/a, its interval, and the verdict of that
    interval against the tie band."""

    a: str
    b: str
    cells: int  # cells of the group with an interval
    missing: int  # cells of the group without one (not measured, or single)
    ratio: float
    ci_low: float | None
    ci_high: float | None
    verdict: Verdict
    winner: str | None


def group_verdict(verdicts: RunVerdicts, keys: Iterable[tuple[str, int]], a: str, b: str,
                  weights: dict[tuple[str, int], float] | None = None,
                  alpha: float | None = None) -> GroupVerdict | None:
    """One answer for a group of cells, with the run-level error the summary needs: the
    interval of the group's weighted mean log ratio is the weighted mean of the cells' interval
    ends (exact when the cells' errors move together, as the shared session term makes them;
    wider otherwise), so it holds at each cell's level however many cells the group has. A
    group of identical arms gets `wins` about as rarely as one cell does, where counting the
    cells' own wins ("wins 1 of 1 decided cells") makes a false winner of any one of them.
    `wins` needs every cell of the group to have an interval; None when no cell has a pair.
    With `alpha`, the cells' intervals at that two-sided level instead of the look's (an arm
    picked among several: a family, decision.family_alpha)."""
    band = verdicts.settings.band.log_edge
    total = mid = low = high = 0.0
    cells = missing = 0
    for key in keys:
        weight = 1.0 if weights is None else weights.get(key, 0.0)
        pair = verdicts.pair(key[0], key[1], a, b)
        if pair is None or weight <= 0:
            missing += pair is None
            continue
        flip = pair.a != a
        log_ratio = -math.log(pair.ratio) if flip else math.log(pair.ratio)
        total += weight
        mid += weight * log_ratio
        if pair.ci_low is None or pair.ci_high is None or pair.verdict == SINGLE:
            missing += 1
            continue
        lo, hi = math.log(pair.ci_low), math.log(pair.ci_high)
        if alpha is not None and (family := pair.interval_at(alpha)) is not None:
            lo, hi = math.log(family[0]), math.log(family[1])
        low += weight * (-hi if flip else lo)
        high += weight * (-lo if flip else hi)
        cells += 1
    if total <= 0:
        return None
    if missing or cells == 0:
        return GroupVerdict(a, b, cells, missing, math.exp(mid / total), None, None, UNSURE, None)
    low, high = low / total, high / total
    if low > band:
        verdict, winner = WINS, b
    elif high < -band:
        verdict, winner = WINS, a
    elif low >= -band and high <= band:
        verdict, winner = TIE, None
    else:
        verdict, winner = UNSURE, None
    return GroupVerdict(a, b, cells, 0, math.exp(mid / total), math.exp(low), math.exp(high),
                        verdict, winner)


@dataclass(frozen=True)
class BestArm:
    """History's one-line answer, in parts a screen words in its language: `arm` beats every
    other arm in `n` of `total` compared cells; `tie`: `n` cells are ties; `unsure`: no cell has
    a winner and none is a tie, `n` (= `total`) cells undecided; `none`: nothing compared."""

    kind: str  # "arm" | "tie" | "unsure" | "none"
    arm: str | None
    n: int
    total: int


def best_arm(verdicts: RunVerdicts) -> BestArm:
    """The arm that beats every other arm in the most cells, by the verdicts (wins 3 of 5
    compared cells), a tie when most cells are ties, every cell unsure when none has a winner
    or is a tie. Single measurements count by the seed's rule (band)."""
    by_cell: dict[tuple[str, int], list[PairResult]] = {}
    for pair in verdicts.pairs:
        by_cell.setdefault(pair.key, []).append(pair)
    if not by_cell:
        return BestArm("none", None, 0, 0)
    wins: dict[str, int] = {}
    ties = 0
    for pairs in by_cell.values():
        beaten = {arm: 0 for arm in verdicts.arms}
        for pair in pairs:
            if pair.winner is not None:
                beaten[pair.winner] += 1
        top = [arm for arm, n in beaten.items() if n == len(verdicts.arms) - 1 and n > 0]
        if top:
            wins[top[0]] = wins.get(top[0], 0) + 1
        elif all(p.verdict == TIE for p in pairs):
            ties += 1
    total = len(by_cell)
    if not wins and ties == 0:
        return BestArm("unsure", None, total, total)
    leader = max(sorted(wins), key=lambda arm: wins[arm]) if wins else None
    if leader is None or ties > wins[leader]:
        return BestArm("tie", None, ties, total)
    return BestArm("arm", leader, wins[leader], total)


# -- the runner's question ------------------------------------------------------------------

def cells_to_remeasure(measurements: Sequence[CellResult], plan: Plan, look: int) -> list[tuple[str, int]]:
    """(scenario, concurrency) of the cells whose verdict is still unsure (or that are outliers
    against their neighbours) after `look` (1 = after the planned rounds, 2 = after the first
    adaptive round, ...). Every arm measures each again in one more session."""
    # `look` is part of the runner's remeasure contract (scripted ones in tests plan by it); this
    # one needs no look number: every look uses the same per-look level (stats/sequential.py),
    # each cell is judged at its own last look, and the budget is the runner's to count.
    del look
    arms = [arm.name for arm in plan.arms]
    verdicts = _analyse(measurements, arms, Settings.of_plan(plan), describe=False)
    wanted: set[tuple[str, int]] = {p.key for p in verdicts.pairs if p.verdict == UNSURE}
    wanted |= outlier_cells(verdicts)
    order = [(s.name, c) for s in plan.scenarios for c in s.concurrencies]
    return [key for key in order if key in wanted]


def outlier_cells(verdicts: RunVerdicts) -> set[tuple[str, int]]:
    """Cells whose log ratio (any pair) sits far from the line through its two neighbours in
    the same scenario (stats/outliers.py, the report's rule): worth another look rather than
    a story."""
    out: set[tuple[str, int]] = set()
    by_pair: dict[tuple[str, str, str], list[PairResult]] = {}
    for p in verdicts.pairs:
        by_pair.setdefault((p.a, p.b, p.scenario), []).append(p)
    for points in by_pair.values():
        points.sort(key=lambda p: p.concurrency)
        found = outliers([p.concurrency for p in points], [math.log(p.ratio) for p in points])
        out.update(points[o.index].key for o in found)
    return out


VERDICTS = tuple(Verdict)
__all__ = [
    "SINGLE",
    "TIE",
    "UNSURE",
    "VERDICTS",
    "WINS",
    "GroupVerdict",
    "PairResult",
    "RunVerdicts",
    "Settings",
    "Verdict",
    "analyse_measurements",
    "cells_to_remeasure",
    "group_verdict",
    "outlier_cells",
]


def run_verdicts(run: LoadedRun) -> RunVerdicts:
    """The verdicts of a loaded run under the statistics settings it was started with."""
    settings = Settings.of_manifest(run.manifest)
    return analyse_measurements(measurements_of(run), layout_of(run).arms, settings)


def family_alpha(look_alpha: float, arms: int) -> float:
    """The two-sided level of each comparison behind a "best" chosen among `arms` arms (the
    best fixed K, the schedule and routing over it): the chosen arm is compared with the
    arms - 1 others and picked for being on top, so each comparison is held at look_alpha /
    (arms - 1) (Bonferroni; each side then at half that, within the one-sided bound that
    multiple comparisons with the best need, docs/decision.md)."""
    return look_alpha / max(arms - 1, 1)
