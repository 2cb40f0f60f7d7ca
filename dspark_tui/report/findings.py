"""The 关键发现 / key findings section: bands, best arm per scenario, the moving gap, outliers.

Every sentence is filled from the analysis; causes are stated only with server metrics behind
them, otherwise the text says they were not measured. A verification run's A-vs-A cells (the
schedule runs the fixed K there: analysis/verification.same_k_apart) are no choice of an arm:
the bands and the best arm per scenario count without them, and a band names them apart.
"""

from __future__ import annotations

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.analysis import RunAnalysis, cell_noise
from dspark_tui.analysis.bands import NOT_SHOWN, UNDECIDED, BandAnswer, majority_verdict, uniform_arm
from dspark_tui.analysis.verdicts import GroupVerdict
from dspark_tui.analysis.verification import same_k_apart, without_same_k
from dspark_tui.report.phrases import (
    counts,
    decisive_wins,
    evidence_text,
    exceptions,
    gap_text,
    lower_p99_count,
    where,
    win_range,
)
from dspark_tui.report.tables import markdown_table, num, pct, signed, tokens
from dspark_tui.report.verification_section import same_k_results
from dspark_tui.report.words import Texts
from dspark_tui.stats.outliers import OUTLIER_LOG_DEVIATION, OUTLIER_NOISE_Z


def band_label(band: str, concurrencies: list[int]) -> str:
    """`c=1`, `c=8~32`, `c≥96`: the tested concurrencies of a band, as the seed writes them."""
    low, high = min(concurrencies), max(concurrencies)
    if band == "high":
        return f"c≥{low}"
    return f"c={low}" if low == high else f"c={low}~{high}"


def lean_text(t: Texts, band: BandAnswer) -> str:
    """`to K=3 in 2 (by 11.0%–14.2%), to K=5 in 1 (by 3.1%)`: the unsure cells' point leaders."""
    items = []
    for arm, n in band.lean.items():
        low, high = band.lean_margins[arm]
        by = pct(low, 1) if pct(low, 1) == pct(high, 1) else f"{pct(low, 1)}–{pct(high, 1)}"
        items.append(t("lean_item", arm=arm, n=n, by=by))
    return t.join(items)


def not_shown_words(band: BandAnswer) -> dict[str, str]:
    """The placeholders of a NOT_SHOWN band's sentence: the majority arm, the arm it is not shown
    faster than, and the band's interval of their ratio (analysis/bands.py)."""
    assert band.band_interval is not None and band.majority is not None
    return group_words(band.majority, band.band_interval, band.wins.get(band.majority, 0), band.cells)


def group_words(arm: str, group: GroupVerdict, wins: int, cells: int) -> dict[str, str]:
    """The same placeholders for any group of cells (a band, a workload)."""
    return {"arm": arm, "other": group.a, "ratio": signed(group.ratio),
            "low": signed(group.ci_low), "high": signed(group.ci_high),
            "wins": str(wins), "cells": str(cells)}


def findings_section(analysis: RunAnalysis, t: Texts) -> list[str]:
    lines = [t("findings_heading"), ""]
    if analysis.winners.empty:
        return [*lines, t("no_findings")]
    blocks = [
        _bands(analysis, t),
        _best_per_scenario(analysis, t),
        _gap_story(analysis, t),
        _outliers(analysis, t),
    ]
    number = 0
    for block in blocks:
        if not block:
            continue
        number += 1
        block[0] = block[0].replace("{n}", str(number))
        lines.extend([*block, ""])
    return lines[:-1]


def _bands(analysis: RunAnalysis, t: Texts) -> list[str]:
    arms = analysis.arms
    band_answers, apart = same_k_apart(analysis)
    bands = analysis.bands if not apart else fr.band_frame(
        without_same_k(analysis, analysis.decided).reset_index(drop=True), arms)
    if bands.empty:  # no cell decided (every comparison unsure): the summary says so
        return []
    # The band's line rests on its decided cells (the frame above): an unsure cell leaning to
    # an arm is not one of its wins ("wins 2/1 cells" counted a lean as a win)
    winners = without_same_k(analysis, analysis.decided)
    verdicts = list(bands["verdict"])
    arm_verdicts = {v for v in verdicts if v in arms}
    answers = {a.band: a for a in band_answers}
    uniform = uniform_arm(list(answers.values()), arms)  # counting the unsure cells too
    if uniform is not None:
        heading = t("band_heading_uniform", n="{n}", arm=uniform)
    elif len(set(verdicts)) > 1 and arm_verdicts:
        heading = t("band_heading_decisive", n="{n}")
    else:
        heading = t("band_heading_plain", n="{n}")
    lines = [heading, ""]
    for _, band in bands.iterrows():
        group = winners[winners["band"] == band.band]
        name = t(f"band.{band.band}")
        label = band_label(band.band, band.concurrencies)
        tally = band
        if band.verdict in arms:
            won = decisive_wins(group, band.verdict)
            better, compared = lower_p99_count(analysis, won)
            lines.append(
                t(
                    "band_arm",
                    name=name,
                    label=label,
                    arm=band.verdict,
                    wins=len(won),
                    cells=band.cells,
                    range=win_range(t, won),
                    ties=t("ties_note", n=band.ties) if band.ties else "",
                    latency=t("latency_note", n=better, m=compared) if compared else "",
                )
            )
        elif band.verdict == fr.EVEN:
            lines.append(
                t(
                    "band_even",
                    name=name,
                    label=label,
                    both=t("both.2") if len(arms) == 2 else t("both.n"),
                    ties=band.ties,
                    cells=band.cells,
                    tie=analysis.band.percent,
                    exceptions=exceptions(t, group, None),
                )
            )
        else:
            lines.append(t("band_mixed", name=name, label=label, counts=counts(t, tally, arms)))
        answer = answers.get(band.band)
        if answer is not None and answer.verdict == NOT_SHOWN:
            lines.append("  " + t("band_not_shown", **not_shown_words(answer)))
        if answer is not None and answer.unsure:
            lines.append("  " + t("band_unsure_note", n=answer.unsure, cells=answer.cells,
                                  lean=lean_text(t, answer),
                                  undecided=t("band_undecided") if answer.verdict == UNDECIDED else ""))
        if band.band in apart:
            lines.append("  " + t("band_same_k_note", results=same_k_results(apart[band.band], t)))
        keys = list(zip(group["scenario"], group["concurrency"].astype(int), strict=True))
        evidence = analysis.evidence(keys)
        if evidence:
            lines.append("  " + t("evidence_prefix") + evidence_text(t, evidence, arms))
    return lines


def _scenario_label(analysis: RunAnalysis, name: str) -> str:
    shape = analysis.layout.shape(name)
    if shape.input_len and shape.output_len:
        return f"{name} ({tokens(shape.input_len)} in / {tokens(shape.output_len)} out)"
    return name


def _best_per_scenario(analysis: RunAnalysis, t: Texts) -> list[str]:
    arms = analysis.arms
    apart = same_k_apart(analysis)[1]
    best = analysis.best if not apart else fr.best_arm_frame(
        without_same_k(analysis, analysis.decided).reset_index(drop=True), arms,
        analysis.layout.scenario_names())
    if best.empty:
        return []
    lines = [t("best_heading", n="{n}"), ""]
    # decided or not; without a verification run's A-vs-A cells
    compared = without_same_k(analysis, analysis.winners)["scenario"].value_counts().to_dict()
    for arm in arms:
        unanimous = [
            row["scenario"]
            for _, row in best.iterrows()
            if row["verdict"] == arm and row["cells"] >= 2 and row[f"wins:{arm}"] == row["cells"]
            and compared.get(row["scenario"], 0) == row["cells"]
        ]
        if unanimous:
            lines.append(t("best_lead_unanimous", arm=arm, scenarios=t.join(unanimous)))
    if len(lines) > 2:
        lines.append("")
    spec = analysis.layout.spec_header()
    rows = []
    for _, row in best.iterrows():
        tally = row
        group = without_same_k(analysis, analysis.scenario_winners(row.scenario))
        total = int(compared.get(row.scenario, row.cells))
        wins = {arm: int(tally[f"wins:{arm}"]) for arm in arms}
        if majority_verdict(total, int(row.cells), int(row.ties), wins) == UNDECIDED:
            rows.append([_scenario_label(analysis, row.scenario), t("best_undecided"),
                         t("best_reason_undecided", decided=int(row.cells), cells=total,
                           counts=counts(t, tally, arms))])
            continue
        if row.verdict in arms:
            shown = row.verdict
            reason = t(
                "best_reason_arm",
                wins=int(tally[f"wins:{row.verdict}"]),
                cells=row.cells,
                range=win_range(t, decisive_wins(group, row.verdict), name_scenario=False),
            )
        elif row.verdict == fr.EVEN:
            shown = t("best_even")
            reason = t("best_reason_even", ties=row.ties, cells=row.cells, tie=analysis.band.percent)
        else:
            shown = t("best_mixed")
            reason = t("best_reason_mixed", counts=counts(t, tally, arms))
        keys = list(zip(group["scenario"], group["concurrency"].astype(int), strict=True))
        evidence = analysis.evidence(keys)
        if evidence:
            reason += t("clause_sep") + evidence_text(t, evidence, arms)
        rows.append([_scenario_label(analysis, row.scenario), shown, reason])
    header = t("best_table_header", spec=spec.lower()).strip("| ").split(" | ")
    lines.extend(markdown_table(header, rows, left=3))
    return lines


def _gap_story(analysis: RunAnalysis, t: Texts) -> list[str]:
    story = analysis.gap_story
    if story is None:
        return []
    trend = story.trend
    scenario = trend["scenario"]
    gaps = story.gaps[story.gaps["scenario"] == scenario]
    first, last = gaps.iloc[0], gaps.iloc[-1]
    shape = trend["shape"]
    anchor = last if shape == "widens" else first
    leader = anchor["leader"]
    trailer = story.other if leader == story.base else story.base
    lines = [t("gap_heading", n="{n}", scenario=scenario), ""]
    lines.append(
        t(
            f"gap_lead.{shape}",
            scenario=scenario,
            leader=leader,
            trailer=trailer,
            first=int(first["concurrency"]),
            last=int(last["concurrency"]),
            first_text=gap_text(t, first["leader"], first["lead_margin"], analysis.band),
            last_text=gap_text(t, last["leader"], last["lead_margin"], analysis.band),
        )
    )
    lines.append("")
    header = [
        t("gap_col_conc"),
        f"{story.base} Total tok/s",
        f"{story.other} Total tok/s",
        t("gap_col_gap"),
    ]
    rows = [
        [
            str(int(g.concurrency)),
            num(g.total_throughput_base),
            num(g.total_throughput_other),
            gap_text(t, g.leader, g.lead_margin, analysis.band),
        ]
        for g in gaps.itertuples(index=False)
    ]
    lines.extend(markdown_table(header, rows))
    lines.append("")
    c = int(last["concurrency"])
    fast = last["leader"]
    slow = story.other if fast == story.base else story.base
    fast_tpot = analysis.metric(scenario, c, fast, "mean_tpot_ms")
    slow_tpot = analysis.metric(scenario, c, slow, "mean_tpot_ms")
    if fast_tpot is not None and slow_tpot is not None:
        lines.append(
            t(
                "gap_latency",
                c=c,
                slow=slow,
                fast=fast,
                slow_tpot=num(slow_tpot),
                fast_tpot=num(fast_tpot),
                slow_e2e=num(analysis.metric(scenario, c, slow, "p99_e2e_latency_ms")),
                fast_e2e=num(analysis.metric(scenario, c, fast, "p99_e2e_latency_ms")),
            )
        )
    evidence = analysis.evidence([(scenario, c)], [story.base, story.other])
    if evidence:
        lines.append(t("evidence_prefix") + evidence_text(t, evidence, [story.base, story.other]))
    else:
        lines.append(t("gap_no_server"))
    others = []
    firsts = story.gaps.groupby("scenario", sort=False).first()
    lasts = story.gaps.groupby("scenario", sort=False).last()
    for row in story.other_trends.itertuples(index=False):
        if row.scenario == scenario:
            continue
        a, b = firsts.loc[row.scenario], lasts.loc[row.scenario]
        others.append(
            t(
                "gap_other_item",
                scenario=row.scenario,
                first_text=f"c={int(a['concurrency'])} "
                + gap_text(t, a["leader"], a["lead_margin"], analysis.band),
                last_text=f"c={int(b['concurrency'])} "
                + gap_text(t, b["leader"], b["lead_margin"], analysis.band),
            )
        )
    if others:
        lines.extend(["", t("gap_others", items=t.join(others))])
    return lines


def _outliers(analysis: RunAnalysis, t: Texts) -> list[str]:
    lines = [t("outlier_heading", n="{n}"), ""]
    outliers = analysis.outliers
    if outliers.empty:
        noises = [n for base, other in fr.arm_pairs(analysis.arms)
                  if (n := cell_noise(analysis.verdicts, base, other)) is not None]
        if noises:  # the threshold the run's own noise set (stats/outliers.py)
            even = OUTLIER_NOISE_Z * max(noises) * 1.5 ** 0.5  # neighbours evenly spaced in log2 c
            return [*lines, t("no_outliers_noise", threshold=f"{OUTLIER_LOG_DEVIATION:.2f}",
                              z=f"{OUTLIER_NOISE_Z:g}", noisy=f"{even:.2f}")]
        return [*lines, t("no_outliers", threshold=f"{OUTLIER_LOG_DEVIATION:.2f}")]
    several_pairs = len(analysis.arms) > 2
    for row in outliers.itertuples(index=False):
        neighbours = t.join(
            [
                t("outlier_neighbour", c=c, text=gap_text(t, leader, margin, analysis.band))
                for c, leader, margin in row.neighbours
            ]
        )
        prefix = f"`{row.other}` vs `{row.base}`: " if several_pairs else ""
        text = t(
            "outlier_item",
            scenario=row.scenario,
            c=row.concurrency,
            leader=row.leader,
            margin=pct(row.lead_margin),
            neighbours=neighbours,
            deviation=f"{row.deviation:.2f}",
        )
        lines.append(text.replace("- ", "- " + prefix, 1))
        pair = [row.base, row.other]
        evidence = analysis.evidence([(row.scenario, row.concurrency)], pair)
        around = analysis.evidence([(row.scenario, c) for c, _, _ in row.neighbours], pair)
        if evidence and around:
            lines.append(
                t(
                    "outlier_server",
                    evidence=evidence_text(t, evidence, pair),
                    neighbours=evidence_text(t, around, pair),
                )
            )
        else:
            lines.append(t("outlier_no_server"))
    return lines


__all__ = ["band_label", "findings_section", "where"]
