"""Throughput under a latency SLO (issue 24; docs/decision.md, "Under an SLO"): per cell and
arm the share of requests that meet every limit of the plan's `[slo]` (attainment) with its
interval, the rate of them (goodput), and each limit's check; then per cell the fastest arm
among those *shown* to meet the SLO, and the best fixed arm subject to it.

Per-request latencies come from the native client's raw files (raw/…jsonl, one line a request;
results/native_raw.py). A measurement without one (a peer client, an import) or whose client
fell behind (its latencies are the client's, model/client_health.py) gives no requests here.
Requests are clustered by server session (the arm's round): docs/statistics.md, "Attainment".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dspark_tui.analysis.decision import (
    KDecision,
    Ratio,
    decide_k,
    family_alpha,
    family_ratio,
    smallest_within_band,
)
from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.analysis.positions import spec_counters
from dspark_tui.analysis.schedule import (
    UNSURE_ANSWER,
    Gain,
    Schedule,
    best_fixed,
    combine_ratios,
    method_for,
    place_cells,
    run_plan,
    run_weights,
    schedule_config,
    schedule_of,
)
from dspark_tui.analysis.verdicts import RunVerdicts, Settings, analyse_measurements
from dspark_tui.model import CellResult
from dspark_tui.model.slo import Limit, Slo
from dspark_tui.results.native_raw import NativeRawError, RequestTiming, read_native_raw
from dspark_tui.results.store import LoadedRun
from dspark_tui.stats.attainment import Share, clustered_share

if TYPE_CHECKING:
    from dspark_tui.analysis.analysis import RunAnalysis

Status = Literal["meets", "fails", "unsure", "no_data"]
CellId = tuple[str, int]
METHOD = ("share of requests under every limit, pooled over the measurements; Wilson interval "
          "on the requests over the design effect of the server sessions (never below 1)")


def slo_of(run: LoadedRun) -> Slo | None:
    """The run's `[slo]` as its plan snapshot holds it; None without one (or an unreadable one)."""
    data = run.manifest.plan.get("slo") if isinstance(run.manifest.plan, dict) else None
    if not isinstance(data, dict):
        return None
    try:
        return Slo.model_validate(data)
    except ValueError:
        return None


def request_values(request: RequestTiming) -> dict[str, float | None]:
    """A request's latencies in ms; None where it has none (TPOT of a one-token answer, ITL of
    an answer in one chunk): such a limit does not apply to it."""
    body = request.e2e_s - request.ttft_s
    return {
        "ttft": request.ttft_s * 1000.0,
        "e2e": request.e2e_s * 1000.0,
        "tpot": body / (request.output_tokens - 1) * 1000.0 if request.output_tokens > 1 else None,
        "itl": body / request.itl_count * 1000.0 if request.itl_count > 0 else None,
    }


def _meets(values: dict[str, float | None], limit: Limit, ok: bool) -> bool:
    if not ok:
        return False  # a failed request meets no SLO
    value = values[limit.metric]
    return value is None or value <= limit.ms


@dataclass(frozen=True)
class LimitCheck:
    """One limit in one cell: the share of requests under its threshold against its share."""

    limit: Limit
    share: Share
    observed_ms: float | None  # the requests' quantile at the limit's share (p95 TPOT …)
    status: Status


@dataclass(frozen=True)
class SloCell:
    arm: str
    scenario: str
    concurrency: int
    attainment: Share  # requests under every threshold
    checks: list[LimitCheck]
    duration_s: float
    throughput: float | None  # mean Total tok/s of its ok measurements
    status: Status
    measurements: int  # with per-request data
    left_out: int  # ok measurements without it (another client, a client behind)

    @property
    def key(self) -> CellId:
        return (self.scenario, self.concurrency)

    @property
    def goodput(self) -> float | None:
        """Requests a second that met the SLO."""
        return self.attainment.hits / self.duration_s if self.duration_s > 0 else None

    def goodput_interval(self) -> tuple[float, float] | None:
        """The attainment's interval times the measured request rate (the rate's own noise is
        not in it: it is the throughput verdicts' business)."""
        if self.duration_s <= 0 or self.attainment.total == 0:
            return None
        rate = self.attainment.total / self.duration_s
        return (rate * self.attainment.low, rate * self.attainment.high)

    @property
    def failing(self) -> list[LimitCheck]:
        """The limits shown missed, else those not shown met: what a miss is told by."""
        shown = [c for c in self.checks if c.status == "fails"]
        return shown or [c for c in self.checks if c.status != "meets"]


def _status(share: Share, level: float) -> Status:
    if share.total == 0:
        return "no_data"
    if share.low >= level:
        return "meets"
    if share.high < level:
        return "fails"
    return "unsure"


def _combine(statuses: Sequence[Status]) -> Status:
    if "no_data" in statuses:
        return "no_data"
    if "fails" in statuses:
        return "fails"
    if "unsure" in statuses:
        return "unsure"
    return "meets"


def _quantile(values: list[float], share: float) -> float | None:
    return float(np.quantile(values, share)) if values else None


# Per raw file read (by its path in the run, a measurement's own): its requests meeting every
# limit and its seconds, which slo_cells counts as it reads the file and goodput_rated needs,
# so one SLO answer reads each raw file once. Not by id(): a copy of a measurement made and
# dropped between the two could leave its id to another (review).
Tallies = dict[str, tuple[int, float]]


def slo_cells(run: LoadedRun, slo: Slo, alpha: float,
              measurements: Sequence[CellResult] | None = None,
              tallies: Tallies | None = None) -> list[SloCell]:
    """Every (arm, scenario, concurrency) with ok measurements, checked against its limits;
    with `tallies`, each measurement read is tallied there for `goodput_rated`."""
    groups: dict[tuple[str, str, int], list[CellResult]] = {}
    for m in measurements if measurements is not None else measurements_of(run):
        if m.ok:
            groups.setdefault((m.arm, m.scenario, m.concurrency), []).append(m)
    out = []
    for (arm, scenario, concurrency), group in groups.items():
        out.append(_cell(run, slo, alpha, arm, scenario, concurrency, group, tallies))
    out.sort(key=lambda c: (c.scenario, c.concurrency, c.arm))
    return out


def _cell(run: LoadedRun, slo: Slo, alpha: float, arm: str, scenario: str, concurrency: int,
          group: list[CellResult], tallies: Tallies | None = None) -> SloCell:
    limits = slo.limits_for(scenario)
    plain = [lim for lim in limits if lim.percentile is None]
    # Per session (round): requests, and the hits of each limit, of the plain ones together
    # and of every limit together.
    sessions: dict[int, dict[str, int]] = {}
    values_by_metric: dict[str, list[float]] = {lim.metric: [] for lim in limits}
    duration = 0.0
    used = left_out = 0
    throughputs = [m.total_throughput for m in group if m.total_throughput is not None]
    for m in group:
        raw = _raw_of(run, m)
        if raw is None or m.client_behind:
            left_out += 1
            continue
        requests, seconds = raw
        used += 1
        duration += seconds
        tally = sessions.setdefault(m.round, {})
        hits = 0
        for request in requests:
            values = request_values(request)
            tally["n"] = tally.get("n", 0) + 1
            each = [_meets(values, lim, request.ok) for lim in limits]
            for lim, hit in zip(limits, each, strict=True):
                tally[lim.key] = tally.get(lim.key, 0) + int(hit)
            # Once a request per metric, however many limits name it (tpot_ms and p95_tpot_ms).
            for metric, kept in values_by_metric.items():
                if not request.ok:
                    kept.append(math.inf)
                elif (v := values[metric]) is not None:
                    kept.append(v)
            plain_hit = all(h for lim, h in zip(limits, each, strict=True) if lim.percentile is None)
            tally["plain"] = tally.get("plain", 0) + int(plain_hit)
            tally["all"] = tally.get("all", 0) + int(all(each))
            hits += all(each)
        if tallies is not None and m.provenance.raw_output:  # always, for a file read
            tallies[m.provenance.raw_output] = (hits, seconds)
    rounds = sorted(sessions)
    totals = [sessions[r]["n"] for r in rounds]

    def share(name: str) -> Share:
        return clustered_share([sessions[r].get(name, 0) for r in rounds], totals, alpha)

    checks = []
    for lim in limits:
        s = share(lim.key)
        checks.append(LimitCheck(lim, s, _quantile(values_by_metric[lim.metric], lim.share),
                                 _status(s, lim.share)))
    statuses: list[Status] = [c.status for c in checks if c.limit.percentile is not None]
    if plain:
        statuses.append(_status(share("plain"), slo.attainment))
    attainment = share("all")
    return SloCell(
        arm=arm, scenario=scenario, concurrency=concurrency, attainment=attainment, checks=checks,
        duration_s=duration,
        throughput=sum(throughputs) / len(throughputs) if throughputs else None,
        status=_combine(statuses) if used else "no_data", measurements=used, left_out=left_out)


def _raw_of(run: LoadedRun, m: CellResult) -> tuple[list[RequestTiming], float] | None:
    relative = m.provenance.raw_output
    if m.provenance.driver != "native" or not relative:
        return None
    path = run.path / relative
    try:
        raw = read_native_raw(path)
    except NativeRawError:
        return None
    seconds = raw.duration_s if raw.duration_s is not None else m.metrics.duration
    if seconds is None:
        return None
    return raw.requests, seconds


# -- the decision under the SLO -------------------------------------------------------------------

@dataclass(frozen=True)
class SloChoice:
    """One cell: the fastest arm, the choice among those shown to meet the SLO, the arms whose
    attainment is unsure (faster than the choice: they might be better), and the closest arm
    when none meets it."""

    scenario: str
    concurrency: int
    fastest: str
    choice: str | None
    choice_vs_fastest: Ratio | None  # the choice's Total tok/s over the fastest arm's
    unsure: list[str]  # arms not shown to meet or miss, faster than the choice (all when none)
    closest: str | None  # no arm meets: the one with the highest attainment
    cells: dict[str, SloCell] = field(default_factory=dict)
    # The best arm shown to meet the SLO by the objective (Total tok/s or goodput): the choice,
    # or the arm a cheaper K was shown within the tie band of. None when none meets it.
    top: str | None = None

    @property
    def key(self) -> CellId:
        return (self.scenario, self.concurrency)


@dataclass(frozen=True)
class SingleUnderSlo:
    """The best fixed arm subject to the SLO, by the best fixed K's rule (schedule.best_fixed):
    among the arms shown to meet it in every cell the traffic weighs, the leader is the highest
    weighted mean log Total tok/s (or goodput); in a K sweep the answer is the smallest K shown
    within the tie band of it on the traffic, on the objective's paired verdicts at the family
    level of the choices (`SloAnswer.choice_alpha`); `status` says whether it is shown best
    (`decided`), not (`unsure`: `arm` is the leader, named as such) or a point estimate
    (`single`). None of these without a candidate."""

    arm: str | None
    candidates: list[str]
    weights: dict[CellId, float]
    missing_cells: dict[str, list[CellId]]  # arm -> the weighed cells it is not shown to meet
    fastest: str | None = None  # the same leader without the SLO (arms measured in every cell)
    leader: str | None = None  # the highest scoring candidate on the traffic
    status: str | None = None  # schedule.DECIDED, UNSURE_ANSWER, SINGLE_ANSWER
    gains: dict[str, Gain] = field(default_factory=dict)  # the answer over each other candidate
    floor: float = 0.98  # the tie band's lower edge the rule used
    keyed_on: str = "equal"  # what the traffic's load was laid on (schedule.CellWeights)

    @property
    def behind(self) -> list[str]:
        """The candidates that may still beat the answer by more than the tie band (`unsure`)."""
        if self.status != UNSURE_ANSWER:
            return []
        return [arm for arm in self.candidates if arm in self.gains
                and (g := self.gains[arm]).low is not None and g.low < self.floor]


@dataclass
class SloAnswer:
    slo: Slo
    alpha: float
    cells: list[SloCell]
    choices: list[SloChoice]
    single: SingleUnderSlo | None
    k_of: dict[str, int] | None
    schedule: SloSchedule | None = None
    latency: list[LatencyVerdict] = field(default_factory=list)
    # Goodput per pair of arms and cell, paired by round as throughput is (goodput_verdicts).
    goodput: RunVerdicts | None = None
    # The measurements those verdicts compare (goodput_rated): goodput in the place of Total tok/s.
    goodput_measurements: list[CellResult] = field(default_factory=list, repr=False)
    verdict_level: float = 0.95  # the latency verdicts' per-look level (the throughput verdicts')
    tie_band: float = 0.02
    # The two-sided level of each comparison a choice rests on (each K against the top that
    # meets the SLO, the choice against the fastest): family_alpha over `choice_arms` arms.
    choice_alpha: float | None = None
    choice_arms: int = 0
    # Arms whose server was never restarted: their goodput and latency verdicts have no session
    # term (`own_noise`: throughput's prior is not lent to them).
    unreplicated: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        scenarios = sorted({c.scenario for c in self.cells})
        return {
            "attainment": self.slo.attainment,
            "objective": self.slo.objective,
            "alpha": self.alpha,
            "choice_alpha": _r(self.choice_alpha),
            "method": METHOD,
            "limits": {s: [{"key": lim.key, "metric": lim.metric, "ms": lim.ms, "share": lim.share}
                           for lim in self.slo.limits_for(s)] for s in scenarios},
            "cells": [_cell_json(c) for c in self.cells],
            "choices": [{
                "scenario": ch.scenario, "concurrency": ch.concurrency, "fastest": ch.fastest,
                "choice": ch.choice,
                "choice_vs_fastest": None if ch.choice_vs_fastest is None else {
                    "ratio": _r(ch.choice_vs_fastest.value), "low": _r(ch.choice_vs_fastest.low),
                    "high": _r(ch.choice_vs_fastest.high), "verdict": str(ch.choice_vs_fastest.verdict)},
                "unsure": ch.unsure, "closest": ch.closest, "top": ch.top,
            } for ch in self.choices],
            "schedule": None if self.schedule is None else self.schedule.to_json(),
            "latency": [{"metric": v.metric, "scenario": v.scenario, "concurrency": v.concurrency,
                         "a": v.a, "b": v.b, "ratio": _r(v.ratio), "low": _r(v.low),
                         "high": _r(v.high), "verdict": str(v.verdict), "lower": v.lower}
                        for v in self.latency],
            "goodput_verdicts": [] if self.goodput is None else [
                {"scenario": g.scenario, "concurrency": g.concurrency, "a": g.a, "b": g.b,
                 "ratio": _r(g.ratio), "low": _r(g.ci_low), "high": _r(g.ci_high),
                 "verdict": str(g.verdict), "higher": g.winner}
                for g in self.goodput.pairs],
            "best_fixed": None if self.single is None else {
                "arm": self.single.arm, "candidates": self.single.candidates,
                "fastest_without_slo": self.single.fastest,
                "leader": self.single.leader, "status": self.single.status,
                "traffic_keyed_on": self.single.keyed_on,
                "gain_over": {arm: _gain_json(g) for arm, g in self.single.gains.items()},
                "not_shown_to_meet": {arm: [f"{s}/c{c}" for s, c in cells]
                                      for arm, cells in self.single.missing_cells.items()},
            },
        }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _gain_json(gain: Gain) -> dict[str, Any]:
    return {"ratio": _r(gain.ratio), "low": _r(gain.low), "high": _r(gain.high), "cells": gain.cells}


def _cell_json(c: SloCell) -> dict[str, Any]:
    goodput = c.goodput_interval()
    return {
        "arm": c.arm, "scenario": c.scenario, "concurrency": c.concurrency, "status": c.status,
        "requests": c.attainment.total, "meeting": c.attainment.hits,
        "attainment": _r(c.attainment.value) if c.attainment.total else None,
        "attainment_low": _r(c.attainment.low), "attainment_high": _r(c.attainment.high),
        "sessions": c.attainment.clusters, "design_effect": _r(c.attainment.design_effect),
        "goodput_rps": _r(c.goodput), "goodput_low": _r(goodput[0]) if goodput else None,
        "goodput_high": _r(goodput[1]) if goodput else None,
        "total_tok_s": _r(c.throughput), "measurements": c.measurements, "left_out": c.left_out,
        "limits": [{"key": k.limit.key, "share": _r(k.share.value) if k.share.total else None,
                    "low": _r(k.share.low), "high": _r(k.share.high),
                    "observed_ms": _r(k.observed_ms) if k.observed_ms is not None
                    and math.isfinite(k.observed_ms) else None,
                    "status": k.status} for k in c.checks],
    }


def slo_answer(analysis: RunAnalysis) -> SloAnswer | None:
    """The run's answer under its `[slo]`; None when the plan has none. Computed once per
    analysis (the reports in two languages and analysis.json share it)."""
    return analysis.computed("slo_answer", lambda: _slo_answer(analysis))


def _slo_answer(analysis: RunAnalysis) -> SloAnswer | None:
    run = analysis.run
    slo = slo_of(run)
    if slo is None:
        return None
    verdicts = analysis.verdicts
    alpha = verdicts.settings.alpha if verdicts is not None else 0.05
    tallies: Tallies = {}
    cells = slo_cells(run, slo, alpha, tallies=tallies)
    ks = analysis.layout.ks
    k_of = ks.every_arm if ks is not None else None  # an adaptive arm has no K to rank it by
    by_cell: dict[CellId, dict[str, SloCell]] = {}
    for c in cells:
        by_cell.setdefault(c.key, {})[c.arm] = c
    band_floor = analysis.band.floor
    rated = goodput_rated(measurements_of(run), tallies) if verdicts is not None else []
    goodput = (goodput_verdicts(rated, analysis.arms, verdicts.settings)
               if verdicts is not None else None)
    choices = [choice for key, arms in sorted(by_cell.items())
               if (choice := _choose(analysis, key, arms, k_of, band_floor, slo.objective,
                                     goodput)) is not None]
    # The cells' weights as the best fixed K's (schedule.run_weights, their one home): a
    # `running_batch` traffic mix lands on the batch each cell held under its K choice.
    weighed = run_weights(analysis, sorted(by_cell))
    family = choice_family(analysis, k_of)
    single = _single(by_cell, weighed.weights, analysis.arms, slo.objective,
                     goodput if slo.objective == "goodput" else verdicts, family, band_floor, k_of)
    if single is not None:
        single = dataclasses.replace(single, keyed_on=weighed.keyed_on)
    answer = SloAnswer(slo=slo, alpha=alpha, cells=cells, choices=choices, single=single, k_of=k_of,
                       goodput=goodput, goodput_measurements=rated)
    answer.schedule = slo_schedule(analysis, answer)
    if verdicts is not None:
        answer.verdict_level, answer.tie_band = verdicts.settings.level, verdicts.settings.tie_band
        answer.choice_arms = family
        answer.choice_alpha = family_alpha(verdicts.settings.look_alpha, answer.choice_arms)
        answer.unreplicated = [a for a in analysis.arms if a in verdicts.settings.external_arms]
        answer.latency = latency_verdicts(measurements_of(run), analysis.arms, verdicts.settings,
                                          sorted({latency_field(lim) for c in cells
                                                  for lim in slo.limits_for(c.scenario)}))
    return answer


def _choose(analysis: RunAnalysis, key: CellId, arms: dict[str, SloCell], k_of: dict[str, int] | None,
            floor: float, objective: str = "throughput",
            goodput_pairs: RunVerdicts | None = None) -> SloChoice | None:
    """The fastest arm shown to meet the SLO: by Total tok/s, or by goodput when the plan's
    objective is goodput; among K values the K decision's rule (the smallest K shown within
    the tie band of the top), on the paired verdicts of the objective's measure."""
    measured = {arm: c for arm, c in arms.items() if c.throughput is not None}
    if not measured:
        return None
    speed = {arm: c.throughput or 0.0 for arm, c in measured.items()}
    fastest = max(speed, key=lambda a: speed[a])
    goodput = objective == "goodput"
    if goodput:  # the user's objective: requests a second that meet the SLO
        speed = {arm: c.goodput or 0.0 for arm, c in measured.items()}
    meeting = [a for a, c in measured.items() if c.status == "meets"]
    choice: str | None = None
    top: str | None = None
    verdicts = analysis.verdicts
    family = choice_family(analysis, k_of)
    if meeting:
        top = max(meeting, key=lambda a: speed[a])
        choice = top
        paired = goodput_pairs if goodput else verdicts
        if k_of is not None and all(a in k_of for a in meeting) and paired is not None:
            # The K decision's rule and level among the arms that meet the SLO (by Total tok/s
            # or by goodput): the smallest K shown within the tie band of the top of them, each
            # comparison at the family level of a best among the sweep's K arms. Only ratios
            # with an interval: unlike the K decision, a choice here has no "unverified" mark,
            # so a single measurement keeps the top rather than a cheaper K by its point estimate.
            vs_top = {arm: ratio for arm in meeting
                      if (ratio := family_ratio(paired, key[0], key[1], arm, top, family)) is not None
                      and (arm == top or ratio.has_interval)}
            choice = smallest_within_band(sorted(meeting, key=lambda a: k_of[a]), vs_top, top, floor)
    vs_fastest = (family_ratio(verdicts, key[0], key[1], choice, fastest, family)
                  if choice is not None and verdicts is not None else None)
    bar = speed[choice] if choice is not None else -1.0
    unsure = sorted((a for a, c in measured.items() if c.status in ("unsure", "no_data") and speed[a] > bar),
                    key=lambda a: -speed[a])
    closest = None
    if choice is None:
        closest = max(measured, key=lambda a: (measured[a].attainment.value
                                               if measured[a].attainment.total else -1.0, speed[a]))
    return SloChoice(scenario=key[0], concurrency=key[1], fastest=fastest, choice=choice,
                     choice_vs_fastest=vs_fastest, unsure=unsure, closest=closest, cells=dict(arms),
                     top=top)


def choice_family(analysis: RunAnalysis, k_of: dict[str, int] | None) -> int:
    """How many arms a choice under the SLO is a best among: the sweep's K arms (the K
    decision's count, `len(KDecision.k_of)`), else the run's arms. Its comparisons are read at
    `family_alpha(look_alpha, this)`: with two arms the look's own level."""
    return len(k_of) if k_of is not None else len(analysis.arms)


def _single(by_cell: dict[CellId, dict[str, SloCell]], weights: dict[CellId, float],
            arms: list[str], objective: str = "throughput", paired: RunVerdicts | None = None,
            family: int = 2, floor: float = 0.98,
            k_of: dict[str, int] | None = None) -> SingleUnderSlo | None:
    """The best fixed arm under the SLO: the candidates are the arms shown to meet it in every
    weighed cell; among them the best fixed K's rule (schedule.best_fixed, the one home of it),
    its gains from `paired` (the objective's verdicts: Total tok/s, or goodput's own) at the
    family level of `family` arms, as the per-cell choice reads its comparisons."""
    if not by_cell:
        return None
    weighed = [key for key, w in weights.items() if w > 0]
    missing: dict[str, list[CellId]] = {}
    candidates = []
    for arm in arms:
        misses = [key for key in weighed
                  if (c := by_cell.get(key, {}).get(arm)) is None or c.status != "meets"]
        if misses:
            missing[arm] = misses
        else:
            candidates.append(arm)

    def score(arm: str, by: str = objective) -> float:
        cells = [by_cell[key][arm] for key in weighed]
        values = [(c.goodput if by == "goodput" else c.throughput) or 1e-9 for c in cells]
        return sum(weights[key] * math.log(max(v, 1e-9)) for key, v in zip(weighed, values, strict=True))

    def gain_of(x: str, y: str) -> Gain | None:
        if paired is None:
            return None
        return combine_ratios([(weights[key], ratio) for key in weighed
                               if (ratio := family_ratio(paired, key[0], key[1], x, y, family)) is not None])

    # K values have a cost order (the smallest K first); arms that are not all K values do not,
    # and the answer is then the leader, shown best or not.
    by_cost = k_of is not None and all(a in k_of for a in candidates)
    options = sorted(candidates, key=lambda a: k_of[a]) if by_cost and k_of is not None else candidates
    best = best_fixed(options, score, gain_of, floor, by_cost=by_cost)
    measured = [arm for arm in arms if all(
        (c := by_cell.get(key, {}).get(arm)) is not None and c.throughput is not None for key in weighed)]
    fastest = max(measured, key=lambda arm: score(arm, "throughput")) if measured else None
    if best is None:
        return SingleUnderSlo(arm=None, candidates=candidates, weights=weights, missing_cells=missing,
                              fastest=fastest, floor=floor)
    return SingleUnderSlo(arm=best.option, candidates=candidates, weights=weights,
                          missing_cells=missing, fastest=fastest, leader=best.leader,
                          status=best.status, gains=best.gains, floor=floor)


# -- the K schedule under the SLO (K sweeps) -------------------------------------------------------

@dataclass(frozen=True)
class SloSchedule:
    """The K sweep's schedule (analysis/schedule.py, the same anchors and cuts) built from the
    choices under the SLO: each cell's K is its SLO choice, and where cells share an anchor
    only the K values shown to meet the SLO in all of them compete. A cell where no K meets it
    takes its closest K (the highest attainment) and is named in `without_k`."""

    schedule: Schedule
    config: dict[str, Any] | None
    without_k: list[CellId]

    def to_json(self) -> dict[str, Any]:
        return {"ranges": self.schedule.ranges, "keyed_on": self.schedule.keyed_on,
                "speculative_config": self.config,
                "cells_without_k_meeting": [f"{s}/c{c}" for s, c in self.without_k]}


def slo_schedule(analysis: RunAnalysis, answer: SloAnswer) -> SloSchedule | None:
    """None unless the run is a K sweep whose every cell has a choice or a closest K."""
    decision = decide_k(analysis)
    k_of = answer.k_of
    if decision is None or not decision.choices or k_of is None:
        return None
    by_key = {c.key: c for c in answer.choices}
    choices = []
    without: list[CellId] = []
    for ch in decision.choices:
        slo_choice = by_key.get(ch.key)
        arm = None if slo_choice is None else (slo_choice.choice or slo_choice.closest)
        if slo_choice is None or arm is None or arm not in k_of:
            return None
        if slo_choice.choice is None:
            without.append(ch.key)
        meeting = {k_of[a] for a, cell in slo_choice.cells.items() if a in k_of and cell.status == "meets"}
        k = k_of[arm]
        allowed = {kk: v for kk, v in ch.throughput.items() if kk in meeting} or {k: ch.throughput[k]}
        top = max(allowed, key=lambda kk: allowed[kk])
        choices.append(dataclasses.replace(ch, k=k, top_k=top, throughput=allowed))
    constrained = KDecision(decision.analysis, decision.k_of, decision.band, choices=choices)
    # The throughput schedule's set-up (analysis/schedule.py) over the constrained choices;
    # the /metrics counters are the same (they depend on the K values, not on the choices).
    plan = run_plan(analysis)
    counters = spec_counters(constrained)
    try:
        schedule = schedule_of(constrained, counters, place_cells(constrained, counters, plan), plan)
    except ValueError:  # cells sharing an anchor have no K in common that meets the SLO
        return None
    if schedule is None:
        return None
    method, _ = method_for(plan)
    return SloSchedule(schedule=schedule, config=schedule_config(schedule, method, plan),
                       without_k=without)


# -- goodput verdicts, paired by round -------------------------------------------------------------

def own_noise(settings: Settings) -> Settings:
    """The throughput verdicts' settings for a measure with noise of its own (goodput, a latency
    percentile): without the plan's session-noise prior. That prior states the box's session
    spread of log Total tok/s (`dspark-tui noise` pools it from throughput's own noise fits);
    goodput is a rate times an attainment, whose session spread adds to the rate's, and a
    latency percentile moves with its tail, so lent to them it would pool a smaller session
    variance into theirs, or stand in for it, and narrow their intervals (docs/statistics.md,
    "Goodput verdicts"). Each estimates its session term from its own rounds alone; an arm
    never restarted then has none (its intervals cover within-session noise, as throughput's
    without a prior)."""
    return dataclasses.replace(settings, prior=None, prior_source="")


def goodput_verdicts(rated: Sequence[CellResult], arms: Sequence[str],
                     settings: Settings) -> RunVerdicts:
    """Goodput compared as throughput is (docs/decision.md, "Under an SLO"): each measurement's
    requests meeting the SLO over its duration, put in the place of its Total tok/s and run
    through the throughput verdicts' analysis, so the pairing by round (the arms' sessions of
    one round against each other), the tie band and the per-look level are the same; the
    session noise is goodput's own, never throughput's prior (`own_noise`). A
    measurement with no request meeting the SLO counts half a request (a log ratio needs a
    positive rate; it is then far below any arm that meets it, as it should be). Measurements
    without per-request data or whose client fell behind give none, as for attainment.
    `rated`: the measurements as `goodput_rated` gives them."""
    return analyse_measurements(rated, list(arms), own_noise(settings))


def goodput_rated(measurements: Sequence[CellResult], tallies: Tallies) -> list[CellResult]:
    """The measurements `goodput_verdicts` compares: each with per-request data, its goodput
    in the place of its Total tok/s, from `tallies` (slo_cells' count of the requests meeting
    every limit, the one home of that rule: a measurement slo_cells did not read, for want of
    a raw file or because its client fell behind, has none)."""
    rated = []
    for m in measurements:
        if not m.ok or m.client_behind:
            continue
        known = tallies.get(m.provenance.raw_output or "")
        if known is None:
            continue
        hits, seconds = known
        if seconds <= 0:
            continue
        metrics = m.metrics.model_copy(update={"total_throughput": max(hits, 0.5) / seconds})
        rated.append(m.model_copy(update={"metrics": metrics}))
    return rated


# -- latency verdicts, paired by round -------------------------------------------------------------

_STAT = {50: "median", 90: "p90", 95: "p95", 99: "p99"}
_FIELD = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e_latency"}


def latency_field(limit: Limit) -> str:
    """The client's per-measurement number a limit's metric is compared by: its percentile
    (`p90_tpot_ms`; p50 is `median_…`), a plain limit's the percentile nearest its share. ITL
    there is per streamed chunk over all requests, not a request's mean gap."""
    percentile = limit.percentile or min(_STAT, key=lambda p: abs(p / 100 - limit.share))
    return f"{_STAT[percentile]}_{_FIELD[limit.metric]}_ms"


@dataclass(frozen=True)
class LatencyVerdict:
    """One latency metric in one cell, arm b against arm a: the ratio of b's latency to a's
    (below 1: b is faster), its interval and verdict — the throughput verdicts' method
    (docs/statistics.md) applied to 1 / latency, so the same pairing by round, tie band and
    per-look level hold; the session noise is the latency's own (`own_noise`). `lower`: the
    arm shown to have the lower latency (a win)."""

    metric: str
    scenario: str
    concurrency: int
    a: str
    b: str
    ratio: float
    low: float | None
    high: float | None
    verdict: str
    lower: str | None


def latency_verdicts(measurements: Sequence[CellResult], arms: Sequence[str], settings: Settings,
                     fields: Sequence[str]) -> list[LatencyVerdict]:
    """Per metric, cell and pair of arms. Measurements whose client fell behind give no latency
    (model/client_health.py), as in every latency table."""
    out = []
    for name in fields:
        speeds = []
        for m in measurements:
            value = getattr(m.metrics, name, None)
            if not m.ok or m.client_behind or value is None or not value > 0:
                continue
            metrics = m.metrics.model_copy(update={"total_throughput": 1000.0 / value})
            speeds.append(m.model_copy(update={"metrics": metrics}))
        for pair in analyse_measurements(speeds, arms, own_noise(settings)).pairs:
            # pair.ratio is b's speed over a's: a's latency over b's.
            out.append(LatencyVerdict(
                metric=name, scenario=pair.scenario, concurrency=pair.concurrency, a=pair.a, b=pair.b,
                ratio=1.0 / pair.ratio,
                low=None if pair.ci_high is None else 1.0 / pair.ci_high,
                high=None if pair.ci_low is None else 1.0 / pair.ci_low,
                verdict=str(pair.verdict),
                lower=pair.winner if pair.verdict == "wins" else None))
    return out
