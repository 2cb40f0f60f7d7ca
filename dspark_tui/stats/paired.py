"""Paired comparison of two arms over a grid of cells measured in rounds (server sessions).

The model (docs/statistics.md): for one pair of arms a, b and a cell c measured in round r,
the paired log ratio of Total tok/s (each arm's mean of log values over its repeats in that
round) is

    d[c, r] = mu[c] + s[r] + e[c, r]

where mu[c] is the true log ratio of the cell, s[r] the difference of the two arms' session
offsets in round r — shared by every cell of that round — and e[c, r] the rest (within-session
drift, last-wave effects, repeats). A cell's mean over its n rounds has variance
tau^2 / n with tau^2 = var(s) + var(e). We estimate var(e) from the cell x round residuals of
the additive fit (many degrees of freedom; per concurrency band when the caller groups cells)
and var(s) from each arm's own round effects (2(R - 1) degrees of freedom; the pair's round
effects alone have R - 1; more with a stated prior that the run does not contradict), and give
the sum the Satterthwaite degrees of freedom of that linear combination. The interval is
Student's t at those degrees of freedom, at the level the caller gives (with adaptive
re-measurement, the per-look level of stats/sequential.py, so looking again cannot inflate
false winners) made smaller where estimating the degrees of freedom would otherwise make the
interval miss more often than it says (`calibrated_alpha`).

Only numpy and scipy.special; callers hand in plain arrays.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np


class Verdict(StrEnum):
    """What a comparison of two arms in a cell says (docs/statistics.md): one arm WINS (its
    interval lies beyond the tie band), a TIE (inside it on both sides), UNSURE (neither), or
    SINGLE (one measurement per arm: no interval; the seed's rule names a winner). A str, so
    analysis.json and the words read "wins"/"tie"/"unsure"/"single" as before."""

    WINS = "wins"
    TIE = "tie"
    UNSURE = "unsure"
    SINGLE = "single"


WINS, TIE, UNSURE, SINGLE = Verdict.WINS, Verdict.TIE, Verdict.UNSURE, Verdict.SINGLE
_FIT_ITERATIONS = 60


@dataclass(frozen=True)
class SessionPrior:
    """Between-session sd of the paired log ratio learned elsewhere, with its degrees of freedom."""

    sd: float
    df: int


@dataclass(frozen=True)
class NoiseFit:
    """The pair's variance components (log scale) and what they rest on."""

    session_var: float  # var(s): estimated, may be pooled with a prior
    residual_var: float  # var(e)
    tau2: float  # variance of one round's paired log ratio of a cell
    df: float  # Satterthwaite degrees of freedom of tau2
    rounds: int
    cells: int
    prior_used: bool = False
    # Per noise group (fit_noise's `groups`): the group's own tau2 and df, by group label.
    group_tau2: dict[int, tuple[float, float]] | None = None
    # The independent mean squares (value, df) whose sum is tau2: the pooled ones and each
    # group's. The quantile of a cell's interval is computed from them (`quantile`).
    parts: tuple[tuple[float, float], ...] = ()
    group_parts: dict[int, tuple[tuple[float, float], ...]] | None = None

    def of_cell(self, group: int | None) -> tuple[float, float]:
        """(tau2, df) for a cell of `group` (the pooled values without groups)."""
        if self.group_tau2 is None or group is None or group not in self.group_tau2:
            return self.tau2, self.df
        return self.group_tau2[group]

    def parts_of(self, group: int | None) -> tuple[tuple[float, float], ...]:
        if self.group_parts is None or group is None or group not in self.group_parts:
            return self.parts
        return self.group_parts[group]


@dataclass(frozen=True)
class PairVerdict:
    cell: int  # index into the caller's cell list
    n: int  # rounds with both arms measured
    log_ratio: float  # mean over rounds of log(b / a)
    log_low: float | None
    log_high: float | None
    verdict: Verdict
    winner: str | None  # "a", "b" or None
    rounds_to_settle: int | None  # more rounds that would likely settle an unsure verdict
    # The standard error of log_ratio and how its quantile is made: the interval at any other
    # level is log_ratio -/+ quantile.at(level) * se (a family of comparisons, issue 22).
    se: float | None = None
    quantile: Quantile | None = None

    @property
    def ratio(self) -> float:
        return math.exp(self.log_ratio)

    @property
    def ci_low(self) -> float | None:
        return None if self.log_low is None else math.exp(self.log_low)

    @property
    def ci_high(self) -> float | None:
        return None if self.log_high is None else math.exp(self.log_high)


def round_means(cell: np.ndarray, rnd: np.ndarray, log_value: np.ndarray,
                n_cells: int, n_rounds: int) -> np.ndarray:
    """Mean log value per (cell, round) of one arm; NaN where it has no measurement."""
    flat = cell * n_rounds + (rnd - 1)
    sums = np.bincount(flat, weights=log_value, minlength=n_cells * n_rounds)
    counts = np.bincount(flat, minlength=n_cells * n_rounds)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    return means.reshape(n_cells, n_rounds)


# The session term when the arms' own round means are given (docs/statistics.md, issue 22):
# "arms" (the method): the sum of both arms' own round mean squares, 2(R - 1) degrees of freedom;
# the alternatives bench/noise_processes.py measured against it: "paired" (the pair's round
# effects alone, R - 1 df: the earlier method), "arms-max" (the larger of the two estimates),
# "arms-df" (as "arms", the df capped at the session term's) and "r-1" (paired, df = R - 1).
SESSION_METHOD = "arms"


def fit_noise(d: np.ndarray, prior: SessionPrior | None = None,
              arms: tuple[np.ndarray, np.ndarray] | None = None,
              groups: np.ndarray | None = None) -> NoiseFit | None:
    """Variance components of the additive model from a cells x rounds matrix of paired log
    ratios (NaN = not measured in that round). None when nothing is replicated across rounds
    (one round): a prior adds degrees of freedom to the session term, it does not replace the
    rounds' own estimate of tau2.

    `arms`: the two arms' own round means (cells x rounds, log scale) whose difference is `d`;
    with them the session term is also read from each arm's own round-to-round spread."""
    present = ~np.isnan(d)
    replicated = present.sum(axis=1) >= 2
    rows, mask = d[replicated], present[replicated]
    rounds_used = mask.any(axis=0)
    rows, mask = rows[:, rounds_used], mask[:, rounds_used]
    n_cells, n_rounds = rows.shape
    if n_cells == 0 or n_rounds < 2:
        return None
    mu, s = _additive_fit(rows, mask)
    resid = np.where(mask, rows - mu[:, None] - s[None, :], 0.0)
    n_obs = int(mask.sum())
    df_e = n_obs - n_cells - n_rounds + 1
    per_round = mask.sum(axis=0)
    c_tilde = n_rounds / float(np.sum(1.0 / per_round))  # harmonic mean of cells per round
    ms_round = float(np.sum((s - s.mean()) ** 2) / (n_rounds - 1))  # var(s) + var(e) / c~
    df_round = float(n_rounds - 1)
    session_parts: list[tuple[float, float]] = [(ms_round, df_round)]
    method = SESSION_METHOD if arms is not None else "paired"
    if method != "paired" and arms is not None:
        own = []
        for means in arms:
            arm_rows = means[replicated][:, rounds_used]
            _, o = _additive_fit(np.where(mask, arm_rows, 0.0), mask)
            own.append(float(np.sum((o - o.mean()) ** 2) / (n_rounds - 1)))
        v_arms = own[0] + own[1]
        if method in ("arms", "arms-max", "arms-df"):
            v = max(v_arms, ms_round) if method == "arms-max" else v_arms
            session_parts = [(v * own[0] / v_arms if v_arms > 0 else 0.0, df_round),
                             (v * own[1] / v_arms if v_arms > 0 else 0.0, df_round)]
            if v_arms <= 0:
                session_parts = [(ms_round, df_round)]
    prior_used = False
    if prior is not None:
        # The prior counts as prior.df more rounds of session spread; its var(e)/c~ part is
        # taken from this run's residuals. It is an upper bound checked against the run: when
        # this run's own session spread exceeds it beyond chance (one-sided F test at
        # PRIOR_CHECK_LEVEL), the prior understates this box's noise and is not used.
        residual_hint = float(np.sum(resid**2) / df_e) if df_e > 0 else 0.0
        prior_ms = prior.sd**2 + residual_hint / c_tilde
        run_ms = sum(v for v, _ in session_parts)
        run_df = _satterthwaite(session_parts)
        if not prior_contradicted(run_ms, run_df, prior_ms, prior.df):
            prior_used = True
            session_parts = [((prior.df * prior_ms + run_df * run_ms) / (prior.df + run_df),
                              prior.df + run_df)]
    ms_session = sum(v for v, _ in session_parts)
    df_session = _satterthwaite(session_parts)
    if df_e <= 0:  # one cell (or a saturated design): its own spread over rounds is all we have
        tau2 = ms_session
        return NoiseFit(max(ms_session, 0.0), 0.0, tau2, df_session, n_rounds, n_cells,
                        prior_used)
    ms_e = float(np.sum(resid**2) / df_e)
    part_e = (1.0 - 1.0 / c_tilde) * ms_e
    tau2 = ms_session + part_e
    if tau2 < ms_e:
        # Round effects smaller than the residuals predict: var(s) estimates below zero. Hold
        # tau2 at var(e), a conservative floor, with the residuals' degrees of freedom.
        return NoiseFit(0.0, ms_e, ms_e, float(df_e), n_rounds, n_cells, prior_used,
                        parts=((0.0, df_session), (ms_e, float(df_e))))
    df = tau2**2 / (sum(v**2 / f for v, f in session_parts if v > 0) + part_e**2 / df_e)
    if method in ("r-1", "arms-df"):
        df = min(df, df_session)
    group_tau2 = group_parts = None
    if groups is not None:
        group_tau2, group_parts = _group_terms(resid, mask, groups[replicated],
                                               df_e / (n_obs - n_cells), session_parts,
                                               ms_e / c_tilde)
    return NoiseFit(max(ms_session - ms_e / c_tilde, 0.0), ms_e, tau2, df, n_rounds, n_cells,
                    prior_used, group_tau2, (*session_parts, (part_e, float(df_e))), group_parts)


def _group_terms(resid: np.ndarray, mask: np.ndarray, labels: np.ndarray, df_share: float,
                 session_parts: list[tuple[float, float]], pooled_e_share: float,
                 ) -> tuple[dict[int, tuple[float, float]],
                            dict[int, tuple[tuple[float, float], ...]]]:
    """Each group's tau2 = the whole grid's session term + the group's own residual variance:
    cells of one concurrency band share a noise level, and a band much noisier than the rest
    (short c = 1 cells) must not borrow the quiet bands' level. The session term keeps all the
    cells' information (its degrees of freedom are the rounds', however many cells)."""
    out: dict[int, tuple[float, float]] = {}
    out_parts: dict[int, tuple[tuple[float, float], ...]] = {}
    ms_session = sum(v for v, _ in session_parts)
    for label in np.unique(labels):
        rows = labels == label
        obs = int(mask[rows].sum())
        df_g = (obs - int(rows.sum())) * df_share
        if df_g <= 0:
            continue
        ms_g = float(np.sum(resid[rows] ** 2) / df_g)
        session = max(ms_session - pooled_e_share, 0.0)
        tau2 = session + ms_g
        parts = [(v * session / ms_session if ms_session > 0 else 0.0, f) for v, f in session_parts]
        denominator = sum(v**2 / f for v, f in parts if v > 0) + ms_g**2 / df_g
        out[int(label)] = (tau2, tau2**2 / denominator if denominator > 0 else df_g)
        out_parts[int(label)] = (*parts, (ms_g, df_g))
    return out, out_parts


PRIOR_CHECK_LEVEL = 0.05


def prior_contradicted(run_ms: float, run_df: float, prior_ms: float, prior_df: float) -> bool:
    """The run's session mean square is larger than the prior's beyond chance: F = run / prior
    on (run_df, prior_df) degrees of freedom, one-sided at PRIOR_CHECK_LEVEL."""
    from scipy.special import fdtrc

    if prior_ms <= 0:
        return run_ms > 0
    if run_df <= 0 or run_ms <= prior_ms:
        return False
    return float(fdtrc(run_df, prior_df, run_ms / prior_ms)) < PRIOR_CHECK_LEVEL


def _satterthwaite(parts: list[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of independent mean squares (value, df)."""
    total = sum(v for v, _ in parts)
    denominator = sum(v**2 / f for v, f in parts if v > 0)
    return total**2 / denominator if denominator > 0 else sum(f for _, f in parts)


def _replicated(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows (cells) measured in two rounds or more, restricted to the rounds that measured
    any of them: the part of `d` that says anything about rounds. Also the rounds kept."""
    present = ~np.isnan(d)
    replicated = present.sum(axis=1) >= 2
    rows, mask = d[replicated], present[replicated]
    rounds_used = mask.any(axis=0)
    return rows[:, rounds_used], mask[:, rounds_used], rounds_used


def round_effects(d: np.ndarray) -> np.ndarray:
    """s[r] of the additive fit per column of `d` (centred over the rounds used); NaN for a
    round that measured no replicated cell, and all NaN when fewer than two rounds count."""
    rows, mask, used = _replicated(d)
    out = np.full(d.shape[1], np.nan)
    if rows.shape[0] and rows.shape[1] >= 2:
        out[used] = _additive_fit(rows, mask)[1]
    return out


@dataclass(frozen=True)
class NodeCheck:
    """Do the round effects differ between nodes? One-way ANOVA of s[r] grouped by the node
    the round's arms ran on (docs/statistics.md, "Rounds on several nodes")."""

    f: float
    df_between: int
    df_within: int
    p: float
    nodes: int  # nodes tested: those with MIN_ROUNDS_PER_NODE rounds or more
    rounds: int  # rounds in the test
    spread: float = 0.0  # the largest difference of two nodes' mean round effects (log ratio)


MIN_ROUNDS_PER_NODE = 2


def node_check(d: np.ndarray, round_node: np.ndarray) -> NodeCheck | None:
    """F test that the round effects of `d` have one mean on every node. `round_node` holds a
    node code per column of `d` (negative: no single node, left out). Only nodes with at least
    MIN_ROUNDS_PER_NODE rounds take part — a node seen once cannot tell its own effect from
    its session's — and at least two are needed; None otherwise (or with no spread within)."""
    from scipy.special import fdtrc

    s = round_effects(d)
    usable = ~np.isnan(s) & (round_node >= 0)
    codes, counts = np.unique(round_node[usable], return_counts=True)
    tested = codes[counts >= MIN_ROUNDS_PER_NODE]
    if len(tested) < 2:
        return None
    keep = usable & np.isin(round_node, tested)
    values, groups = s[keep], round_node[keep]
    group_means = {g: values[groups == g].mean() for g in tested}
    within = float(sum(np.sum((values[groups == g] - m) ** 2) for g, m in group_means.items()))
    between = float(sum(np.sum(groups == g) * (m - values.mean()) ** 2
                        for g, m in group_means.items()))
    df_between, df_within = len(tested) - 1, len(values) - len(tested)
    if within <= 0:
        return None
    f = (between / df_between) / (within / df_within)
    means = list(group_means.values())
    return NodeCheck(f, df_between, df_within, float(fdtrc(df_between, df_within, f)),
                     len(tested), len(values), float(max(means) - min(means)))


def _additive_fit(rows: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares mu[c] + s[r] on the observed entries (alternating means; exact in one step
    for a complete matrix, a few steps for the few extra rounds of adaptive designs)."""
    filled = np.where(mask, rows, 0.0)
    count_c = mask.sum(axis=1)
    count_r = mask.sum(axis=0)
    s = np.zeros(rows.shape[1])
    mu = filled.sum(axis=1) / count_c
    for _ in range(_FIT_ITERATIONS):
        s_new = np.where(mask, rows - mu[:, None], 0.0).sum(axis=0) / count_r
        s_new -= s_new.mean()
        mu = np.where(mask, rows - s_new[None, :], 0.0).sum(axis=1) / count_c
        if np.max(np.abs(s_new - s)) < 1e-12:
            s = s_new
            break
        s = s_new
    return mu, s


# The quantile of a cell's interval (docs/statistics.md, issue 22): "calibrated" (the method):
# Student's t at the Satterthwaite degrees of freedom, at the nominal level at which that
# procedure, degrees of freedom estimated and all, covers at the stated level whatever the
# session share; "satterthwaite" (the earlier method: the estimated df taken as known) and
# "cap" (the df never above the session term's), which bench/noise_processes.py measured.
DF_RULE = "calibrated"


@dataclass(frozen=True)
class Quantile:
    """How a cell's interval quantile is made: Student's t at `df`, at the level calibrated for
    a session mean square on `f_s` and a residual part on `f_e` degrees of freedom over `cells`
    cells (`f_s` 0: no calibration, the plain t)."""

    df: float
    f_s: float = 0.0
    f_e: float = 0.0
    cells: int = 1

    def at(self, alpha: float) -> float:
        """The two-sided 1 - alpha quantile."""
        if self.f_s > 0 and self.f_e > 0:
            alpha = calibrated_alpha(alpha, self.f_s, self.f_e, self.cells)
        return t_quantile(1.0 - alpha / 2.0, self.df)


def quantile_of(parts: tuple[tuple[float, float], ...], df: float, cells: int = 1) -> Quantile:
    """The quantile rule for a cell whose variance is the sum of `parts` (DF_RULE)."""
    if DF_RULE == "cap" and len(parts) > 1:
        session = [(v, f) for v, f in parts[:-1] if v > 0]
        if session:
            df = min(df, _satterthwaite(session))
    if DF_RULE == "calibrated" and len(parts) > 1:
        f_s = sum(f for _, f in parts[:-1])
        return Quantile(df, round(f_s, 1), round(parts[-1][1], 1), min(cells, 50))
    return Quantile(df)


_CALIBRATION_NODES = 64
_SHARES = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 1.0)


@functools.lru_cache(maxsize=512)
def calibrated_alpha(alpha: float, f_s: float, f_e: float, cells: int) -> float:
    """The nominal level at which the Satterthwaite t interval of a cell covers at 1 - alpha
    or better whatever the session share of its variance (docs/statistics.md).

    The interval's variance is a session mean square on f_s degrees of freedom (which also
    carries 1/cells of the residual variance) plus the residual part on f_e; its degrees of
    freedom are estimated from those two, so they come out largest exactly when the session
    mean square came out small, and the interval covers less than it says when the session
    term dominates and f_s is small (two rounds: f_s = 2; up to 7.5 % misses at a nominal 5 %).
    The actual miss rate of the procedure (the fit's floor included) is integrated over both
    mean squares' chi-square distributions for session shares from 0 to 1, and the nominal level
    is lowered until the worst share misses at alpha. Deterministic: a fixed quadrature."""
    from scipy.special import chdtri, ndtr, stdtrit

    u = (np.arange(_CALIBRATION_NODES) + 0.5) / _CALIBRATION_NODES
    x_s = chdtri(f_s, 1.0 - u)[None, :, None] / f_s
    x_e = chdtri(f_e, 1.0 - u)[None, None, :] / f_e
    rho = np.asarray(_SHARES)[:, None, None]
    ms_s = (rho + (1.0 - rho) / max(cells, 1)) * x_s
    ms_e = (1.0 - rho) * x_e
    part_e = (1.0 - 1.0 / max(cells, 1)) * ms_e
    tau2 = ms_s + part_e
    with np.errstate(divide="ignore", invalid="ignore"):
        df = tau2**2 / (ms_s**2 / f_s + part_e**2 / f_e)
    floor = tau2 < ms_e  # the fit holds tau2 at the residual variance, on its df
    tau2 = np.where(floor, ms_e, tau2)
    df = np.where(floor, f_e, np.nan_to_num(df, nan=f_s))
    # t quantiles are smooth in the df: read them off a log-spaced grid of df values.
    grid = np.geomspace(max(float(df.min()), 0.5), max(float(df.max()), 1.0) * 1.0001, 64)
    log_df, root = np.log(df), np.sqrt(tau2)

    def worst(level: float) -> float:
        q = np.interp(log_df, np.log(grid), stdtrit(grid, 1.0 - level / 2.0))
        return float(np.max(np.mean(2.0 * ndtr(-q * root), axis=(1, 2))))

    level = alpha
    for _ in range(5):
        miss = worst(level)
        if miss <= alpha * 1.001:
            break
        level *= alpha / miss
    return min(level, alpha)


def t_quantile(p: float, df: float) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


@dataclass(frozen=True)
class FixedSessionTerm:
    """Session noise that more rounds cannot average away: a server never restarted between
    rounds keeps one session offset for the whole run, so the mean over rounds carries all of
    its variance. `var` comes from a stated prior (its `df`), never from the rounds."""

    var: float
    df: float


def decide(d: np.ndarray, *, tie_band: float, alpha: float,
           prior: SessionPrior | None = None, fit: NoiseFit | None = None,
           fixed: FixedSessionTerm | None = None,
           arms: tuple[np.ndarray, np.ndarray] | None = None,
           groups: np.ndarray | None = None) -> list[PairVerdict]:
    """One verdict per row (cell) of the cells x rounds matrix `d` of paired log ratios b/a,
    each interval two-sided at 1 - alpha. With `fixed`, a cell's mean over n rounds has variance
    fixed.var + tau2 / n, with the Satterthwaite degrees of freedom of that sum."""
    fit = fit if fit is not None else fit_noise(d, prior, arms, groups)
    band = math.log1p(tie_band)
    counts = (~np.isnan(d)).sum(axis=1)
    means = np.where(counts > 0, np.nansum(d, axis=1) / np.maximum(counts, 1), 0.0)
    out = []
    # Cells of one noise group share its variance, degrees of freedom and quantile rule.
    of_group: dict[int | None, tuple[float, float, Quantile]] = {}
    t_of: dict[Quantile, float] = {}
    for index in np.flatnonzero(counts):
        n, mean = int(counts[index]), float(means[index])
        if fit is None:
            out.append(PairVerdict(int(index), n, mean, None, None, SINGLE, None, None))
            continue
        group = None if groups is None else int(groups[index])
        if group not in of_group:
            tau2, df_cell = fit.of_cell(group)
            of_group[group] = (tau2, df_cell, quantile_of(fit.parts_of(group), df_cell, fit.cells))
        tau2, df_cell, rule = of_group[group]
        var = tau2 / n
        if fixed is not None and fixed.var > 0:
            var = fixed.var + tau2 / n
            rule = Quantile(var**2 / (fixed.var**2 / fixed.df + (tau2 / n) ** 2 / df_cell))
        t_cell = t_of.get(rule)
        if t_cell is None:
            t_cell = t_of[rule] = rule.at(alpha)
        half = t_cell * math.sqrt(var)
        low, high = mean - half, mean + half
        verdict, winner = classify(low, high, band)
        settle = None
        if verdict == UNSURE:
            settle = rounds_to_settle(mean, tau2, t_cell, band, n,
                                      fixed.var if fixed is not None else 0.0)
        out.append(PairVerdict(int(index), n, mean, low, high, verdict, winner, settle,
                               math.sqrt(var), rule))
    return out


def classify(low: float, high: float, band: float) -> tuple[Verdict, str | None]:
    """wins: beyond the band on one side; tie: inside the band on both (two one-sided tests);
    unsure: neither."""
    if low > band:
        return WINS, "b"
    if high < -band:
        return WINS, "a"
    if low >= -band and high <= band:
        return TIE, None
    return UNSURE, None


def rounds_to_settle(mean: float, tau2: float, t: float, band: float, n: int,
                     fixed_var: float = 0.0) -> int | None:
    """Rounds in all that would make the interval clear the band's edge nearest the estimate,
    if the estimate held still: a planning figure, not a promise. None: never (on the edge, or
    a fixed session term alone is wider than the distance)."""
    distance = abs(abs(mean) - band)
    room = (distance / t) ** 2 - fixed_var
    if distance < 1e-9 or room <= 0:
        return None
    needed = math.ceil(tau2 * (t / distance) ** 2 if fixed_var == 0 else tau2 / room)
    return max(needed - n, 1)
