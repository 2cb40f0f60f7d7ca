"""Two runs side by side (History's "compare two runs"): the same cells, ratio b / a.

Cells are matched by (arm, scenario, concurrency); a cell present in only one run is counted,
not guessed at. A cell measured in several rounds counts as the mean of its ok measurements, as
the report's tables show it. What makes the ratios mean something else than the server's
change is said first: a different model, server command, prompts or warmup.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dspark_tui.analysis.layout import layout_of
from dspark_tui.analysis.measurements import aggregate_cells, measurements_of
from dspark_tui.model.cpus import cpu_list
from dspark_tui.report.tables import markdown_table, num
from dspark_tui.report.words import Texts
from dspark_tui.results.store import LoadedRun

COMPARED = {
    "total_throughput": "total",
    "p99_ttft_ms": "p99_ttft",
    "mean_tpot_ms": "mean_tpot",
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
        for cell in aggregate_cells(measurements_of(run)).values()
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
    a = {k for k, c in aggregate_cells(measurements_of(run_a)).items() if c.ok}
    b = {k for k, c in aggregate_cells(measurements_of(run_b)).items() if c.ok}
    return len(a - b), len(b - a)


def arm_ratios(frame: pd.DataFrame) -> list[tuple[str, float, int, int]]:
    """Per arm, in the frame's order: (arm, geometric mean of the Total tok/s ratios, cells B is
    faster in, cells compared) — the one line a user comparing two runs reads first."""
    out = []
    for arm in dict.fromkeys(frame["arm"]):
        ratios = frame.loc[frame["arm"] == arm, "total_ratio"]
        positive = ratios[ratios > 0].dropna()
        geo = float(np.exp(np.log(positive).mean())) if len(positive) else float("nan")
        out.append((str(arm), geo, int((ratios > 1).sum()), len(ratios)))
    return out


def run_differences(run_a: LoadedRun, run_b: LoadedRun, lang: str = "zh") -> list[tuple[str, str]]:
    """What differs between the two runs besides the server's speed: (what, detail) for the
    model, the server command, the prompts (dataset, seed, lengths, counts) and the warmup."""
    text = Texts(lang, "compare")
    a, b = run_a.manifest, run_b.manifest
    plan_a, plan_b = a.plan or {}, b.plan or {}
    found: list[tuple[str, str]] = []
    if a.model != b.model:
        found.append(("model", f"{a.model or '?'} vs {b.model or '?'}"))
    command_a = (plan_a.get("server") or {}).get("command")
    command_b = (plan_b.get("server") or {}).get("command")
    if command_a and command_b and command_a != command_b:
        found.append(("command", _first_difference(command_a, command_b, text)))
    cpus_a, cpus_b = _cpus(plan_a), _cpus(plan_b)
    if cpus_a != cpus_b:  # a server on fewer CPUs is another server (docs/vllm-cpu.md, Pinning)
        found.append(("cpus", f"{cpus_a} vs {cpus_b}"))
    prompts = _prompt_differences(plan_a, plan_b)
    if prompts:  # one line: the first few, and how many more
        more = text("more", n=len(prompts) - PROMPTS_SHOWN) if len(prompts) > PROMPTS_SHOWN else ""
        found.append(("prompts", "; ".join(prompts[:PROMPTS_SHOWN]) + more))
    warm_a, warm_b = _warmup(a.warmup_requests, plan_a), _warmup(b.warmup_requests, plan_b)
    if warm_a is not None and warm_b is not None and warm_a != warm_b:
        found.append(("warmup", f"{warm_a} vs {warm_b}"))
    return found


def _cpus(plan: dict) -> str:
    """`server.cpus` as `taskset -c` lists them, `-` when the server was not pinned."""
    cpus = (plan.get("server") or {}).get("cpus")
    if not isinstance(cpus, list) or not all(isinstance(c, int) for c in cpus):
        return "-"
    return cpu_list(cpus)


def _warmup(requests: int | None, plan: dict) -> object:
    return requests if requests is not None else (plan.get("bench") or {}).get("warmup_requests")


def _first_difference(a: list[str], b: list[str], text: Texts) -> str:
    """`--max-num-seqs 256 vs 128`: the first argument where the two commands part. A plan's
    `{python}` (the interpreter the runner starts it with) reads `python`, not a raw placeholder."""
    a, b = [_shown_arg(x) for x in a], [_shown_arg(x) for x in b]
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            flag = a[index - 1] + " " if index and str(a[index - 1]).startswith("-") else ""
            return f"{flag}{x} vs {y}"
    longer, side = (a, "A") if len(a) > len(b) else (b, "B")
    return text("only_has", side=side, args=" ".join(longer[min(len(a), len(b)):]))


def _shown_arg(arg: object) -> str:
    return str(arg).replace("{python}", "python")


PROMPT_KEYS = ("dataset", "input_len", "output_len", "range_ratio", "num_prompts")
PROMPTS_SHOWN = 2


def _value(value: object) -> str:
    """`{'per_concurrency': 4, 'min': 8}` as `per_concurrency=4,min=8`: short enough for a line."""
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items() if v is not None)
    return str(value)


def _prompt_differences(plan_a: dict, plan_b: dict) -> list[str]:
    bench_a, bench_b = plan_a.get("bench") or {}, plan_b.get("bench") or {}
    found = []
    for key in ("seed", "range_ratio"):
        if key in bench_a and key in bench_b and bench_a[key] != bench_b[key]:
            found.append(f"{key} {bench_a[key]} vs {bench_b[key]}")
    scenarios_b = {s.get("name"): s for s in plan_b.get("scenarios") or [] if isinstance(s, dict)}
    for scenario in plan_a.get("scenarios") or []:
        if not isinstance(scenario, dict) or scenario.get("name") not in scenarios_b:
            continue
        other = scenarios_b[scenario["name"]]
        for key in PROMPT_KEYS:
            if scenario.get(key) != other.get(key):
                found.append(f"{scenario['name']} {key} {_value(scenario.get(key))} vs "
                             f"{_value(other.get(key))}")
    return found


def _ratio(value: float) -> str:
    return "—" if value != value else f"{value:.3f}"


def summary_lines(run_a: LoadedRun, run_b: LoadedRun, frame: pd.DataFrame, lang: str = "zh",
                  *, which_runs: bool = True) -> list[str]:
    """The Markdown list that opens a comparison: which runs (unless `which_runs` is False: the
    screen's title says it), how many cells matched, the ratio over all cells and per arm, then
    what differs between the runs besides the server."""
    text = Texts(lang, "compare")
    only_a, only_b = _unmatched(run_a, run_b)
    lines = []
    if which_runs:
        for side, run in (("a", run_a), ("b", run_b)):
            lines.append(text(side, name=run.manifest.name, path=run.path))
    lines.append(text("matched", n=len(frame), only_a=only_a, only_b=only_b))
    if not frame.empty:
        ratios = frame["total_ratio"].dropna()
        ratios = ratios[ratios > 0]
        geo = float(np.exp(np.log(ratios).mean())) if len(ratios) else float("nan")
        faster = int((frame["total_ratio"] > 1).sum())
        lines.append(text("summary", geo=_ratio(geo), faster=faster, n=len(frame)))
        for arm, arm_geo, arm_faster, cells in arm_ratios(frame):
            lines.append(text("arm", arm=arm, geo=_ratio(arm_geo), faster=arm_faster, n=cells))
    for what, detail in run_differences(run_a, run_b, lang):
        lines.append(text("differ", what=text(what), detail=detail))
    return lines


def render_comparison(run_a: LoadedRun, run_b: LoadedRun, lang: str = "zh") -> str:
    text = Texts(lang, "compare")
    frame = run_comparison_frame(run_a, run_b)
    lines = [text("title"), "", *summary_lines(run_a, run_b, frame, lang)]
    if frame.empty:
        return "\n".join([*lines, "", text("none")]) + "\n"
    lines.extend(["", text("ratio"), ""])
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


def none_text(lang: str) -> str:
    return Texts(lang, "compare")("none")


def ratio_text(value: float) -> str:
    return _ratio(value)
