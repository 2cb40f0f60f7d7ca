"""The report's "verification" section (zh, en): a verification run's schedule against the best
fixed K, per cell and on the plan's traffic. Empty for every other run."""

from __future__ import annotations

from dspark_tui.analysis.decision import Ratio
from dspark_tui.analysis.schedule import Gain
from dspark_tui.analysis.verdicts import Verdict
from dspark_tui.analysis.verification import VerificationResult
from dspark_tui.report.tables import markdown_table
from dspark_tui.report.texts import Texts

_ZH: dict[str, str] = {
    "heading": "## K 调度验证",
    "lead": "本次运行复核 `{sweep}`（{path}）推荐的调度 `{schedule}`（按{keyed}）与其固定 K 最佳值 "
    "K={k}：同一网格、同样的轮数，两者各为一个 arm（`{schedule_arm}` 与 `{fixed_arm}`）。",
    "keyed.running_batch": "运行 batch",
    "keyed.client_concurrency": "客户端并发",
    "header": "| 场景 | 并发 | 运行 batch | 调度的 K | 流量权重 | 调度 / {fixed_arm} | 区间 | 判定 |",
    "gain": "- 按{traffic}加权，调度相对 {fixed_arm} 的实际收益：{gain}，判定 **{verdict}**"
    "（持平带 ±{band}%）。",
    "traffic.plan": "计划的 `[traffic]`",
    "traffic.equal": "等权（计划没有 `[traffic]`）",
    "gain_interval": "- 区间：各单元 log 比值区间端点的加权平均（每个单元是判定分析的 t 区间，"
    "置信水平 {level}%，自由度同判定分析）；单元误差完全同向时准确，否则偏宽。",
    "gain_single": "- 只有单次测量（只有一轮）：收益没有区间，只是点估计；用 `rounds ≥ 2` 重跑。",
    "fixed_wins": "- {fixed_arm} 胜过调度的单元：{cells}。",
    "no_fixed_wins": "- 没有任何单元 {fixed_arm} 胜过调度。",
    "schedule_wins": "- 调度胜出的单元：{cells}。",
    "verdict.wins": "胜出",
    "verdict.loses": "落后",
    "verdict.tie": "持平",
    "verdict.unsure": "不确定",
    "verdict.single": "单次",
}

_EN: dict[str, str] = {
    "heading": "## Verification of the K schedule",
    "lead": "This run verifies the schedule `{schedule}` (keyed on {keyed}) recommended by `{sweep}` "
    "({path}) against its best fixed K = {k}: the same grid and rounds, each as one arm "
    "(`{schedule_arm}` and `{fixed_arm}`).",
    "keyed.running_batch": "the running batch",
    "keyed.client_concurrency": "client concurrency",
    "header": "| Scenario | Concurrency | Running batch | Schedule's K | Traffic weight | "
    "Schedule / {fixed_arm} | Interval | Verdict |",
    "gain": "- Realised gain of the schedule over {fixed_arm}, weighted by {traffic}: {gain}, "
    "**{verdict}** (tie band ±{band}%).",
    "traffic.plan": "the plan's `[traffic]`",
    "traffic.equal": "equal weights (the plan has no `[traffic]`)",
    "gain_interval": "- Interval: the weighted mean of the cells' log-ratio interval ends (each the "
    "verdict analysis' t interval at {level}%, with its degrees of freedom); exact when the "
    "cells' errors move together, wider otherwise.",
    "gain_single": "- Single measurements (one round): the gain has no interval, it is a "
    "point estimate; rerun with `rounds ≥ 2`.",
    "fixed_wins": "- Cells where {fixed_arm} beats the schedule: {cells}.",
    "no_fixed_wins": "- {fixed_arm} beats the schedule in no cell.",
    "schedule_wins": "- Cells the schedule wins: {cells}.",
    "verdict.wins": "wins",
    "verdict.loses": "loses",
    "verdict.tie": "tie",
    "verdict.unsure": "unsure",
    "verdict.single": "single",
}

_TABLES = {"zh": _ZH, "en": _EN}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{(value - 1.0) * 100:+.1f}%"


def _verdict(texts: dict[str, str], verdict: Verdict, ratio: float) -> str:
    if verdict == Verdict.WINS:
        return texts["verdict.wins" if ratio > 1.0 else "verdict.loses"]
    return texts.get(f"verdict.{verdict}", verdict)


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"{_pct(low)} … {_pct(high)}"


def verification_section(result: VerificationResult | None, t: Texts) -> list[str]:
    if result is None:
        return []
    x = _TABLES[t.lang]
    record = result.record
    fixed = record.fixed_arm
    lines = [x["heading"], "", x["lead"].format(
        sweep=record.sweep_name, path=record.sweep, schedule=record.schedule,
        keyed=x.get(f"keyed.{record.keyed_on}", record.keyed_on), k=record.fixed_k,
        schedule_arm=record.schedule_arm, fixed_arm=fixed), ""]
    rows = []
    for cell in result.cells:
        ratio: Ratio | None = cell.ratio
        rows.append([
            cell.scenario, str(cell.concurrency),
            "—" if cell.batch is None else f"{cell.batch:.1f}",
            "—" if cell.schedule_k is None else str(cell.schedule_k),
            f"{cell.weight:.2f}",
            "—" if ratio is None else _pct(ratio.value),
            "—" if ratio is None or not ratio.has_interval else _interval(ratio.low, ratio.high),
            "—" if ratio is None else _verdict(x, ratio.verdict, ratio.value),
        ])
    lines += markdown_table(x["header"].format(fixed_arm=fixed).strip("| ").split(" | "), rows)
    lines.append("")
    gain: Gain | None = result.gain
    if gain is not None:
        text = _pct(gain.ratio)
        if gain.low is not None:
            text += f" ({_interval(gain.low, gain.high)})"
        lines.append(x["gain"].format(fixed_arm=fixed, traffic=x[f"traffic.{result.traffic_source}"],
                                      gain=text, verdict=_verdict(x, result.gain_verdict, gain.ratio),
                                      band=result.band.percent))
        lines.append(x["gain_single"] if gain.low is None else
                     x["gain_interval"].format(level=f"{result.level * 100:.4g}"))
    names = [f"{c.scenario} c={c.concurrency}" for c in result.fixed_wins]
    lines.append(x["fixed_wins"].format(fixed_arm=fixed, cells=", ".join(names)) if names
                 else x["no_fixed_wins"].format(fixed_arm=fixed))
    won = [f"{c.scenario} c={c.concurrency}" for c in result.cells if c.schedule_wins]
    if won:
        lines.append(x["schedule_wins"].format(cells=", ".join(won)))
    return lines
