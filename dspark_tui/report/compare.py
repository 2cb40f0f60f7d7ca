"""Two runs side by side (History's "compare two runs"): the same cells, ratio b / a.

Cells are matched by (arm, scenario, concurrency); a cell present in only one run is counted,
not guessed at.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dspark_tui.report.layout import layout_of
from dspark_tui.report.tables import markdown_table, num
from dspark_tui.report.texts import Texts
from dspark_tui.results.store import LoadedRun

COMPARED = {
    "total_throughput": "total",
    "p99_ttft_ms": "p99_ttft",
    "mean_tpot_ms": "mean_tpot",
}

_TEXT = {
    "zh": {
        "title": "# 两次运行对比",
        "a": "- A：`{name}`（`{path}`）",
        "b": "- B：`{name}`（`{path}`）",
        "ratio": "比值 = B / A；吞吐比值 > 1 表示 B 更快，延迟比值 < 1 表示 B 更快。",
        "matched": "- 匹配的单元：{n}；只在 A 中：{only_a}；只在 B 中：{only_b}",
        "summary": "- Total tok/s 几何平均比值：{geo}；B 更快的单元：{faster}/{n}",
        "none": "两次运行没有相同的 (arm, scenario, concurrency) 单元可比。",
    },
    "en": {
        "title": "# Two runs compared",
        "a": "- A: `{name}` (`{path}`)",
        "b": "- B: `{name}` (`{path}`)",
        "ratio": "Ratio = B / A; a throughput ratio > 1 means B is faster, a latency ratio < 1 "
        "means B is faster.",
        "matched": "- Matched cells: {n}; only in A: {only_a}; only in B: {only_b}",
        "summary": "- Geometric mean Total tok/s ratio: {geo}; cells where B is faster: {faster}/{n}",
        "none": "The two runs share no (arm, scenario, concurrency) cell.",
    },
}


def _ok_frame(run: LoadedRun) -> pd.DataFrame:
    layout = layout_of(run)
    scenario_pos = {name: i for i, name in enumerate(layout.scenario_names())}
    arm_pos = {arm: i for i, arm in enumerate(layout.arms)}
    records = [
        {
            "arm": cell.arm,
            "scenario": cell.scenario,
            "concurrency": cell.concurrency,
            "scenario_pos": scenario_pos.get(cell.scenario, len(scenario_pos)),
            "arm_pos": arm_pos.get(cell.arm, len(arm_pos)),
            **{name: getattr(cell.metrics, name) for name in COMPARED},
        }
        for cell in run.cells.values()
        if cell.ok
    ]
    columns = ["arm", "scenario", "concurrency", "scenario_pos", "arm_pos", *COMPARED]
    frame = pd.DataFrame(records, columns=columns)
    for name in COMPARED:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    return frame


def run_comparison_frame(run_a: LoadedRun, run_b: LoadedRun) -> pd.DataFrame:
    """One row per cell both runs finished: a, b and b/a for Total tok/s, P99 TTFT, mean TPOT."""
    a, b = _ok_frame(run_a), _ok_frame(run_b)
    keys = ["arm", "scenario", "concurrency"]
    merged = a.merge(b.drop(columns=["scenario_pos", "arm_pos"]), on=keys, suffixes=("_a", "_b"))
    for name, short in COMPARED.items():
        merged[f"{short}_a"] = merged.pop(f"{name}_a")
        merged[f"{short}_b"] = merged.pop(f"{name}_b")
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = merged[f"{short}_b"] / merged[f"{short}_a"]
        merged[f"{short}_ratio"] = ratio.replace([np.inf, -np.inf], np.nan)
    merged = merged.sort_values(["scenario_pos", "concurrency", "arm_pos"]).reset_index(drop=True)
    return merged.drop(columns=["scenario_pos", "arm_pos"])


def _unmatched(run_a: LoadedRun, run_b: LoadedRun) -> tuple[int, int]:
    a = {k for k, c in run_a.cells.items() if c.ok}
    b = {k for k, c in run_b.cells.items() if c.ok}
    return len(a - b), len(b - a)


def _ratio(value: float) -> str:
    return "—" if value != value else f"{value:.3f}"


def render_comparison(run_a: LoadedRun, run_b: LoadedRun, lang: str = "zh") -> str:
    Texts(lang)  # validates the language with the report's own message
    text = _TEXT[lang]
    frame = run_comparison_frame(run_a, run_b)
    only_a, only_b = _unmatched(run_a, run_b)
    lines = [text["title"], ""]
    lines.append(text["a"].format(name=run_a.manifest.name, path=run_a.path))
    lines.append(text["b"].format(name=run_b.manifest.name, path=run_b.path))
    lines.append(text["matched"].format(n=len(frame), only_a=only_a, only_b=only_b))
    if frame.empty:
        return "\n".join([*lines, "", text["none"]]) + "\n"
    ratios = frame["total_ratio"].dropna()
    ratios = ratios[ratios > 0]
    geo = float(np.exp(np.log(ratios).mean())) if len(ratios) else float("nan")
    faster = int((frame["total_ratio"] > 1).sum())
    lines.append(text["summary"].format(geo=_ratio(geo), faster=faster, n=len(frame)))
    lines.extend(["", text["ratio"], ""])
    header = [
        "Scenario", "Concurrency", "Arm",
        "A Total tok/s", "B Total tok/s", "B/A",
        "A P99 TTFT(ms)", "B P99 TTFT(ms)", "B/A",
        "A Mean TPOT(ms)", "B Mean TPOT(ms)", "B/A",
    ]
    rows = [
        [
            r.scenario, str(int(r.concurrency)), r.arm,
            num(r.total_a), num(r.total_b), _ratio(r.total_ratio),
            num(r.p99_ttft_a), num(r.p99_ttft_b), _ratio(r.p99_ttft_ratio),
            num(r.mean_tpot_a), num(r.mean_tpot_b), _ratio(r.mean_tpot_ratio),
        ]
        for r in frame.itertuples(index=False)
    ]
    lines.extend(markdown_table(header, rows, left=3))
    return "\n".join(lines) + "\n"
