"""The 优化建议 / recommendations section: a setting per load type, then next steps.

Recommendations follow the verdicts of the analysis (bands, workload groups); adjacent bands
with the same verdict are merged into one row, as the seed's "c ≤ 32" row does. A verification
run's A-vs-A cells (analysis/verification.same_k_apart) are no choice: the rows and the unsure
cells to re-run count without them.
"""

from __future__ import annotations

import pandas as pd

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.analysis import RunAnalysis
from dspark_tui.analysis.bands import NOT_SHOWN, UNDECIDED, band_interval_against, majority_verdict
from dspark_tui.analysis.counting import start_failure
from dspark_tui.analysis.verification import same_k_apart, without_same_k
from dspark_tui.report.findings import band_label, group_words, not_shown_words
from dspark_tui.report.headline import is_simulated
from dspark_tui.report.phrases import (
    counts,
    decisive_wins,
    exceptions,
    lower_p99_count,
    where,
    win_range,
)
from dspark_tui.report.tables import markdown_table
from dspark_tui.report.words import Texts


def advice_section(analysis: RunAnalysis, t: Texts) -> list[str]:
    lines = [t("advice_heading"), ""]
    rows = _recommendation_rows(analysis, t)
    if rows:
        layout = analysis.layout
        if layout.compared_flag:
            setting = f"`{layout.compared_flag}`"
        elif layout.compared_var:
            setting = f"`{layout.compared_var}`"
        else:
            setting = "arm"
        sim = "_sim" if is_simulated(analysis.run.manifest) else ""
        header = t(f"recommend_header{sim}", setting=setting).strip("| ").split(" | ")
        lines.extend([t(f"recommend_heading{sim}"), "", *markdown_table(header, rows, left=3), ""])
    lines.extend([t("next_heading"), ""])
    steps = _next_steps(analysis, t)
    lines.extend(f"{i}. {step}" for i, step in enumerate(steps, start=1))
    return lines


def _setting_cell(analysis: RunAnalysis, t: Texts, verdict: str) -> str:
    layout = analysis.layout
    if verdict in layout.arms:
        return f"**{layout.spec_label(verdict)}**"
    if verdict in (UNDECIDED, NOT_SHOWN):
        return t("rec_undecided")
    if verdict == fr.EVEN:
        sep = " 或 " if t.lang == "zh" else " / "
        return t("rec_even", values=sep.join(layout.spec_label(a) for a in layout.arms))
    return t("rec_mixed")


def _note(analysis: RunAnalysis, t: Texts, group: pd.DataFrame, verdict: str,
          cells: int | None = None) -> str:
    arms = analysis.arms
    ties = int(group["tie"].sum())
    if verdict == UNDECIDED:
        return t("rec_note_undecided", decided=len(group), cells=cells if cells is not None else len(group))
    if verdict in arms:
        won = decisive_wins(group, verdict)
        better, compared = lower_p99_count(analysis, won)
        return t(
            "rec_note_arm",
            wins=len(won),
            cells=len(group),
            range=win_range(t, won),
            latency=t("rec_latency", n=better, m=compared) if compared else "",
            exceptions=exceptions(t, group, verdict),
        )
    if verdict == fr.EVEN:
        return t(
            "rec_note_even",
            ties=ties,
            cells=len(group),
            tie=analysis.band.percent,
            exceptions=exceptions(t, group, None),
        )
    tally = pd.Series(
        {"ties": ties, **{f"wins:{a}": int((decisive_wins(group, a)).shape[0]) for a in arms}}
    )
    return t("rec_note_mixed", counts=counts(t, tally, arms))


def _merged_bands(analysis: RunAnalysis) -> list[tuple[list[str], list[int], str]]:
    """Consecutive bands with one answer become one row: (band ids, concurrencies, verdict).
    The answer counts every compared cell of the band (analysis/bands.py), so a band whose
    cells are mostly unsure is "not decided", never an arm."""
    merged: list[tuple[list[str], list[int], str]] = []
    decided = without_same_k(analysis, analysis.decided)
    for band in same_k_apart(analysis)[0]:
        if band.decided == 0 and band.verdict == UNDECIDED and decided.empty:
            continue
        if merged and merged[-1][2] == band.verdict:
            merged[-1][0].append(band.band)
            merged[-1][1].extend(band.concurrencies)
        else:
            merged.append(([band.band], list(band.concurrencies), band.verdict))
    return merged


def _merged_label(band_ids: list[str], concurrencies: list[int]) -> str:
    if len(band_ids) == 1:
        return band_label(band_ids[0], concurrencies)
    if band_ids[-1] == "high":
        return f"c ≥ {min(concurrencies)}"
    if band_ids[0] == "single":
        return f"c ≤ {max(concurrencies)}"
    return f"c = {min(concurrencies)}~{max(concurrencies)}"


def _recommendation_rows(analysis: RunAnalysis, t: Texts) -> list[list[str]]:
    winners = without_same_k(analysis, analysis.decided)
    if winners.empty:
        return []
    rows: list[list[str]] = []
    separator = "、" if t.lang == "zh" else " / "
    band_arm: dict[str, str] = {}  # band id -> the arm its row recommends
    every = without_same_k(analysis, analysis.winners)
    for band_ids, concurrencies, verdict in _merged_bands(analysis):
        group = winners[winners["band"].isin(band_ids)]
        names = separator.join(t(f"band.{b}") for b in band_ids)
        label = _merged_label(band_ids, concurrencies)
        if verdict in analysis.arms:
            band_arm.update(dict.fromkeys(band_ids, verdict))
        if verdict == NOT_SHOWN:
            answer = next(a for a in same_k_apart(analysis)[0]
                          if a.band in band_ids and a.verdict == NOT_SHOWN)
            note = t("rec_note_not_shown", **not_shown_words(answer), tie=analysis.band.percent)
        else:
            note = _note(analysis, t, group, verdict, cells=int(every["band"].isin(band_ids).sum()))
        rows.append([t("rec_band", names=names, label=label), _setting_cell(analysis, t, verdict), note])
    thresholds = {"rec_long_input": 4096, "rec_long_output": 1024, "rec_short": 0}
    for key, scenarios in analysis.workload_groups():
        group = winners[winners["scenario"].isin(scenarios)]
        ties = int(group["tie"].sum())
        wins = {a: len(decisive_wins(group, a)) for a in analysis.arms}
        compared = int(every["scenario"].isin(scenarios).sum())
        verdict = majority_verdict(compared, len(group), ties, wins)
        label_n = f"{thresholds[key] // 1024}K" if thresholds[key] else ""
        weakest = None
        if verdict in analysis.arms and analysis.verdicts is not None:  # the band rule's check
            cells = every[every["scenario"].isin(scenarios)]
            keys = list(zip(cells["scenario"], cells["concurrency"].astype(int), strict=True))
            weakest = band_interval_against(analysis.verdicts, keys, verdict, analysis.arms,
                                            analysis.layout.plans)
        if weakest is not None:
            rows.append([t(key, n=label_n, scenarios=t.join(scenarios)), t("rec_undecided"),
                         t("rec_note_not_shown", **group_words(verdict, weakest, wins[verdict], compared),
                           tie=analysis.band.percent)])
            continue
        # One answer a workload: a group whose cells a concurrency row above gives another arm
        # does not give its own (the rows would overlap with two answers for one cell).
        others = sorted({band_arm[b] for b in group["band"] if b in band_arm} - {verdict})
        if verdict in analysis.arms and others:
            overlap = [b for b in dict.fromkeys(group["band"]) if band_arm.get(b, verdict) != verdict]
            rows.append([
                t(key, n=label_n, scenarios=t.join(scenarios)),
                t("rec_mixed"),
                t("rec_note_overlap", bands=t.join(t(f"band.{b}") for b in overlap)),
            ])
            continue
        rows.append(
            [
                t(key, n=label_n, scenarios=t.join(scenarios)),
                _setting_cell(analysis, t, verdict),
                _note(analysis, t, group, verdict, cells=compared),
            ]
        )
    return rows


def _next_steps(analysis: RunAnalysis, t: Texts) -> list[str]:
    layout = analysis.layout
    steps: list[str] = []
    # A simulated run shows what the simulator favours; a GPU run decides the default.
    sim = "_sim" if is_simulated(analysis.run.manifest) else ""
    merged = _merged_bands(analysis)
    arm_verdicts = [v for _, _, v in merged if v in layout.arms]
    if merged and len(merged) == 1 and arm_verdicts:
        steps.append(t(f"next_uniform{sim}", setting=f"`{layout.setting(arm_verdicts[0])}`"))
    elif len(set(arm_verdicts)) > 1 or (arm_verdicts and any(
            v not in (UNDECIDED, NOT_SHOWN) for _, _, v in merged if v not in layout.arms)):
        band_ids, concurrencies, verdict = merged[-1]
        others = {v for _, _, v in merged[:-1] if v in layout.arms}
        if band_ids[-1] == "high" and verdict in layout.arms and others - {verdict}:
            steps.append(
                t(
                    f"next_high{sim}",
                    label=_merged_label(band_ids, concurrencies),
                    setting=f"`{layout.setting(verdict)}`",
                )
            )
        steps.append(t("next_route"))
    unsure = without_same_k(analysis, analysis.unsure)
    if not unsure.empty:
        steps.append(t("next_unsure", n=len(unsure)))
    if not analysis.outliers.empty:
        cells = t.join(dict.fromkeys(  # one cell an outlier of several pairs is named once
            f"`{where(r.scenario, r.concurrency)}`" for r in analysis.outliers.itertuples(index=False)
        ))
        steps.append(t("next_outlier", cells=cells))
    if not analysis.has_server_metrics and start_failure(analysis.run) is None:
        steps.append(t("next_server"))
    broken = len(analysis.failed) + len(analysis.missing)
    if broken:
        steps.append(t("next_resume", n=broken, path=analysis.run.path))
    return steps or [t("next_none")]
