"""Small computed phrases the findings and the recommendations share."""

from __future__ import annotations

import pandas as pd

from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.model.statistics import TieBand
from dspark_tui.report.tables import MISSING, num, pct
from dspark_tui.report.words import Texts


def where(scenario: str, concurrency: int) -> str:
    return f"{scenario} c={int(concurrency)}"


def decisive_wins(group: pd.DataFrame, arm: str) -> pd.DataFrame:
    return group[(~group["tie"]) & (group["winner"] == arm)]


def win_range(t: Texts, won: pd.DataFrame, name_scenario: bool = True) -> str:
    """`（提升 3.65%–22.84%，最大在 rag_medium c=1）` over the cells an arm won."""
    if won.empty:
        return ""
    top = won.loc[won["margin"].idxmax()]
    at = where(top["scenario"], top["concurrency"]) if name_scenario else f"c={int(top['concurrency'])}"
    high, low = pct(top["margin"]), pct(won["margin"].min())
    if len(won) == 1:
        return t("win_single", high=high, where=at)
    if low == high:
        return t("win_same", high=high)
    return t("win_range", low=low, high=high, where=at)


def lower_p99_count(analysis: RunAnalysis, won: pd.DataFrame) -> tuple[int, int]:
    """Of the cells an arm won on throughput, how many it also won on P99 E2E latency."""
    better = compared = 0
    for row in won.itertuples(index=False):
        mine = analysis.metric(row.scenario, row.concurrency, row.winner, "p99_e2e_latency_ms")
        theirs = analysis.metric(row.scenario, row.concurrency, row.runner_up, "p99_e2e_latency_ms")
        if mine is None or theirs is None:
            continue
        compared += 1
        better += mine < theirs
    return better, compared


def exceptions(t: Texts, group: pd.DataFrame, verdict_arm: str | None) -> str:
    """Decisive wins that go against the group's verdict, so a summary never hides them."""
    against = group[~group["tie"]]
    if verdict_arm is not None:
        against = against[against["winner"] != verdict_arm]
    if against.empty:
        return ""
    items = [
        t("exception_item", where=where(r.scenario, r.concurrency), arm=r.winner, margin=pct(r.margin))
        for r in against.itertuples(index=False)
    ]
    return t("exceptions", items=t.join(items))


def counts(t: Texts, tally: pd.Series, arms: list[str]) -> str:
    items = [t("counts_item", arm=arm, n=int(tally[f"wins:{arm}"])) for arm in arms]
    if int(tally["ties"]):
        items.append(t("ties_item", n=int(tally["ties"])))
    return t.join(items)


def evidence_text(t: Texts, evidence: dict[str, dict[str, float]], arms: list[str]) -> str:
    """`接受长度 st=3 2.61 / st=5 3.40；KV 峰值 …；抢占 …` for the arms that have numbers."""

    def per_arm(name: str, fmt: str) -> str:
        parts = []
        for arm in arms:
            value = evidence.get(arm, {}).get(name)
            if value is None:
                parts.append(f"{arm} {MISSING}")
            elif fmt == "pct":
                parts.append(f"{arm} {value * 100:.0f}%")
            elif fmt == "int":
                parts.append(f"{arm} {value:.0f}")
            else:
                parts.append(f"{arm} {num(value)}")
        return " / ".join(parts)

    return t(
        "evidence",
        accept=per_arm("accept_length", "num"),
        kv=per_arm("kv_usage_peak", "pct"),
        preempt=per_arm("preemptions", "int"),
    )


def gap_text(t: Texts, leader: str, lead_margin: float, band: TieBand) -> str:
    """`about even` for a lead under the run's tie band, else the leader and its lead."""
    if band.holds(lead_margin):
        return t("gap_even")
    return t("gap_lead", arm=leader, margin=pct(lead_margin, 1))
