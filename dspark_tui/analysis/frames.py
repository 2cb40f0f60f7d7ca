"""The analysis behind the report, as pandas frames: one function per question the report asks.

Gaps between two arms are measured as ln(base / other) so that "st=3 +30%" and "st=5 +30%"
weigh the same and trends can be fitted against log2(concurrency).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dspark_tui.analysis.layout import RunLayout
from dspark_tui.analysis.measurements import acceptance_length
from dspark_tui.analysis.verdicts import SINGLE, TIE, RunVerdicts
from dspark_tui.model import CellResult
from dspark_tui.model.statistics import TieBand
from dspark_tui.stats.outliers import outliers

EVEN = "even"
MIXED = "mixed"


@dataclass(frozen=True)
class Band:
    """A concurrency range the findings talk about; the seed's c=1 / 8~32 / 64 / >=96."""

    id: str
    low: int
    high: float


BANDS = (
    Band("single", 1, 1),
    Band("low", 2, 32),
    Band("mid", 33, 64),
    Band("high", 65, math.inf),
)

CORE_COLUMNS = [
    "duration",
    "request_throughput",
    "output_throughput",
    "total_throughput",
    "mean_e2e_latency_ms",
    "p95_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p99_tpot_ms",
]
SERVER_COLUMNS = [
    "accept_length",
    "acceptance_rate",
    "kv_usage_peak",
    "preemptions",
    "running_peak",
    "waiting_peak",
]


def band_of(concurrency: int) -> str:
    for band in BANDS:
        if band.low <= concurrency <= band.high:
            return band.id
    return BANDS[0].id


# -- cells ----------------------------------------------------------------------------------


def cells_frame(cells: Iterable[CellResult], layout: RunLayout) -> pd.DataFrame:
    """One row per cell file (ok or not) with the report's metrics and plan-order positions."""
    arm_pos = {arm: i for i, arm in enumerate(layout.arms)}
    scenario_pos = {name: i for i, name in enumerate(layout.scenario_names())}
    columns: dict[str, list[object]] = {
        name: []
        for name in [
            "arm", "scenario", "concurrency", "arm_pos", "scenario_pos", "status", "error",
            *CORE_COLUMNS, *SERVER_COLUMNS, "has_server",
        ]
    }
    for cell in cells:
        metrics = cell.metrics
        server = cell.server
        columns["arm"].append(cell.arm)
        columns["scenario"].append(cell.scenario)
        columns["concurrency"].append(cell.concurrency)
        columns["arm_pos"].append(arm_pos.get(cell.arm, len(arm_pos)))
        columns["scenario_pos"].append(scenario_pos.get(cell.scenario, len(scenario_pos)))
        columns["status"].append(cell.status.value)
        columns["error"].append(cell.error or "")
        for name in CORE_COLUMNS:
            columns[name].append(getattr(metrics, name))
        columns["accept_length"].append(acceptance_length(cell))
        for name in SERVER_COLUMNS[1:]:
            columns[name].append(getattr(server, name) if server is not None else None)
        columns["has_server"].append(server is not None and server.samples > 0)
    frame = pd.DataFrame(columns)
    for name in [*CORE_COLUMNS, *SERVER_COLUMNS]:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    frame["concurrency"] = frame["concurrency"].astype(int)
    frame["has_server"] = frame["has_server"].astype(bool)
    return frame.sort_values(["scenario_pos", "concurrency", "arm_pos"], kind="stable").reset_index(
        drop=True
    )


def core_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The seed's core metrics table: ok cells, scenario x concurrency x arm in plan order."""
    ok = frame[frame["status"] == "ok"]
    return ok[["scenario", "concurrency", "arm", *CORE_COLUMNS]].reset_index(drop=True)


def server_table(frame: pd.DataFrame) -> pd.DataFrame:
    ok = frame[(frame["status"] == "ok") & frame["has_server"]]
    return ok[["scenario", "concurrency", "arm", *SERVER_COLUMNS]].reset_index(drop=True)


# -- winners --------------------------------------------------------------------------------


def winner_frame(frame: pd.DataFrame, arms: list[str], band: TieBand) -> pd.DataFrame:
    """Per (scenario, concurrency) with two or more ok arms: the arm with the highest Total
    tok/s, the runner-up, and margin = winner / runner-up - 1 (a tie under the run's band)."""
    ok = frame[(frame["status"] == "ok") & (frame["total_throughput"] > 0)]
    result_columns = ["scenario", "concurrency", *arms, "winner", "runner_up", "margin", "tie", "band"]
    if ok.empty:
        return pd.DataFrame(columns=result_columns)
    table = ok.pivot_table(
        index=["scenario_pos", "scenario", "concurrency"],
        columns="arm",
        values="total_throughput",
        aggfunc="first",
    )
    table = table.reindex(columns=arms).sort_index()
    values = table.to_numpy(dtype=float)
    filled = np.where(np.isnan(values), -np.inf, values)
    order = np.argsort(-filled, axis=1, kind="stable")
    rows = np.arange(len(filled))
    best = filled[rows, order[:, 0]]
    second = filled[rows, order[:, 1]] if len(arms) > 1 else np.full(len(rows), -np.inf)
    keep = np.isfinite(second)
    out = table.reset_index().drop(columns="scenario_pos")
    out.columns.name = None
    arm_array = np.array(arms, dtype=object)
    out["winner"] = arm_array[order[:, 0]]
    out["runner_up"] = arm_array[order[:, 1]] if len(arms) > 1 else None
    with np.errstate(divide="ignore", invalid="ignore"):
        out["margin"] = best / second - 1.0
    out = out[keep].reset_index(drop=True)
    out["tie"] = out["margin"] < band.fraction
    out["band"] = out["concurrency"].map(band_of)
    return out[result_columns]


def with_verdicts(winners: pd.DataFrame, verdicts: RunVerdicts) -> pd.DataFrame:
    """The winner table under the run's verdicts: where a pair rests on repeated sessions, the
    leader, margin and tie come from its paired interval (so every screen agrees), with the
    margin's interval and the verdict; single measurements keep the seed's rule (a margin under
    the tie band is a tie) and verdict `single`."""
    out = winners.copy()
    out["verdict"] = SINGLE
    out["margin_low"] = np.nan
    out["margin_high"] = np.nan
    out["rounds_to_settle"] = np.nan
    out["tie"] = out["margin"] < verdicts.settings.band.fraction
    for i, row in enumerate(out[["scenario", "concurrency", "winner", "runner_up"]].itertuples(index=False)):
        pair = verdicts.pair(row.scenario, int(row.concurrency), row.winner, row.runner_up)
        if pair is None or pair.verdict == SINGLE:
            continue
        interval = pair.margin_interval()
        leader = pair.leader
        other = pair.a if leader == pair.b else pair.b
        out.loc[out.index[i], ["winner", "runner_up", "verdict", "tie"]] = [
            leader, other, pair.verdict, pair.verdict == TIE]
        out.loc[out.index[i], ["margin", "margin_low", "margin_high", "rounds_to_settle"]] = [
            pair.margin, interval[0] if interval else np.nan, interval[1] if interval else np.nan,
            pair.rounds_to_settle if pair.rounds_to_settle is not None else np.nan]
    return out


def verdict(cells: int, ties: int, wins: dict[str, int]) -> str:
    """An arm only when it wins a majority of the cells outright; EVEN when most are ties."""
    if cells == 0:
        return MIXED
    if ties * 2 >= cells:
        return EVEN
    ranked = sorted(wins.items(), key=lambda kv: -kv[1])
    top_arm, top = ranked[0]
    others = ranked[1][1] if len(ranked) > 1 else 0
    return top_arm if top * 2 > cells and top > others else MIXED


def ties_and_wins(group: pd.DataFrame, arms: list[str]) -> tuple[int, dict[str, int]]:
    """How many of `group`'s decided cells are ties, and how many each arm wins outright."""
    wins = dict.fromkeys(arms, 0)
    ties = 0
    for winner, tie in zip(group["winner"].tolist(), group["tie"].tolist(), strict=True):
        if tie:
            ties += 1
        else:
            wins[winner] += 1
    return ties, wins


def _tally(group: pd.DataFrame, arms: list[str]) -> dict[str, object]:
    ties, wins = ties_and_wins(group, arms)
    return {
        "cells": len(group),
        "ties": ties,
        **{f"wins:{arm}": n for arm, n in wins.items()},
        "verdict": verdict(len(group), ties, wins),
    }


def _tally_columns(arms: list[str]) -> list[str]:
    """The columns _tally fills, so a frame of no decided cells still has them (all unsure)."""
    return ["cells", "ties", *(f"wins:{arm}" for arm in arms), "verdict"]


def band_frame(winners: pd.DataFrame, arms: list[str]) -> pd.DataFrame:
    """Wins per arm in each concurrency band that has cells, and who the band belongs to."""
    rows = []
    for band in BANDS:
        group = winners[winners["band"] == band.id]
        if group.empty:
            continue
        concurrencies = sorted(int(c) for c in group["concurrency"].unique())
        rows.append({"band": band.id, "concurrencies": concurrencies, **_tally(group, arms)})
    return pd.DataFrame(rows, columns=["band", "concurrencies", *_tally_columns(arms)])


def best_arm_frame(winners: pd.DataFrame, arms: list[str], scenarios: list[str]) -> pd.DataFrame:
    """Per scenario: who wins across its concurrencies (an arm, EVEN, or MIXED)."""
    groups = dict(tuple(winners.groupby("scenario", sort=False)))
    rows = [
        {"scenario": name, **_tally(groups[name], arms)} for name in scenarios if name in groups
    ]
    return pd.DataFrame(rows, columns=["scenario", *_tally_columns(arms)])


# -- gaps between a pair of arms ------------------------------------------------------------


def arm_pairs(arms: list[str]) -> list[tuple[str, str]]:
    """Each arm against the first (the baseline): for two arms, simply the one pair."""
    return [(arms[0], other) for other in arms[1:]]


def pair_gap_frame(frame: pd.DataFrame, base: str, other: str) -> pd.DataFrame:
    """Per (scenario, concurrency) where both arms are ok: log_gap = ln(base / other)."""
    ok = frame[(frame["status"] == "ok") & (frame["total_throughput"] > 0)]
    left = ok[ok["arm"] == base][["scenario_pos", "scenario", "concurrency", "total_throughput"]]
    right = ok[ok["arm"] == other][["scenario", "concurrency", "total_throughput"]]
    merged = left.merge(right, on=["scenario", "concurrency"], suffixes=("_base", "_other"))
    merged = merged.sort_values(["scenario_pos", "concurrency"]).reset_index(drop=True)
    merged["log_gap"] = np.log(merged["total_throughput_base"] / merged["total_throughput_other"])
    merged["leader"] = np.where(merged["log_gap"] >= 0, base, other)
    merged["lead_margin"] = np.exp(merged["log_gap"].abs()) - 1.0
    merged["base"] = base
    merged["other"] = other
    return merged


def gap_trend_frame(gaps: pd.DataFrame, band: TieBand) -> pd.DataFrame:
    """Per scenario tested at 2+ concurrencies: the slope of ln(base/other) against
    log2(concurrency), and `change`, the fitted move across the tested range."""
    rows = []
    for name, group in gaps.groupby("scenario_pos", sort=True):
        if len(group) < 2:
            continue
        x = np.log2(group["concurrency"].to_numpy(dtype=float))
        y = group["log_gap"].to_numpy(dtype=float)
        slope = float(np.polyfit(x, y, 1)[0])
        first, last = y[0], y[-1]
        rows.append(
            {
                "scenario": group["scenario"].iloc[0],
                "points": len(group),
                "first_concurrency": int(group["concurrency"].iloc[0]),
                "last_concurrency": int(group["concurrency"].iloc[-1]),
                "first_gap": float(first),
                "last_gap": float(last),
                "slope": slope,
                "change": slope * float(x[-1] - x[0]),
                "shape": _trend_shape(float(first), float(last), band),
            }
        )
        del name
    return pd.DataFrame(rows)


def _trend_shape(first: float, last: float, band: TieBand) -> str:
    if not band.within_log(first) and not band.within_log(last) and (first > 0) != (last > 0):
        return "reverses"
    return "widens" if abs(last) > abs(first) else "narrows"


def most_moving(trends: pd.DataFrame) -> pd.Series | None:
    """The scenario whose gap moves most with concurrency (by the fitted change)."""
    if trends.empty:
        return None
    return trends.loc[trends["change"].abs().idxmax()]


def outlier_frame(gaps: pd.DataFrame, noise: float | None = None) -> pd.DataFrame:
    """Cells whose gap is far from the line through their neighbours in the same scenario
    (stats/outliers.py, the rule the runner re-measures by too), judged with the run's own
    noise (`noise`: the standard error of one cell's log ratio for this pair) when it has one."""
    rows = []
    for _, group in gaps.groupby("scenario_pos", sort=True):
        if len(group) < 3:
            continue
        records = group.to_dict("records")
        for found in outliers(group["concurrency"].to_numpy(dtype=float),
                              group["log_gap"].to_numpy(dtype=float), noise):
            cell = records[found.index]
            neighbours = [records[i] for i in found.neighbours]
            rows.append(
                {
                    "scenario": cell["scenario"],
                    "concurrency": int(cell["concurrency"]),
                    "base": cell["base"],
                    "other": cell["other"],
                    "leader": cell["leader"],
                    "lead_margin": float(cell["lead_margin"]),
                    "deviation": found.deviation,
                    "neighbours": [
                        (int(p["concurrency"]), str(p["leader"]), float(p["lead_margin"]))
                        for p in neighbours
                    ],
                }
            )
    return pd.DataFrame(rows)
