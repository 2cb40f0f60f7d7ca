"""Turning the seed's hand-made report back into a run directory (sample_results/).

Only what the seed's core metrics table says is kept, plus what follows exactly from it
(completed = duration x req/s, an integer the rounding cannot blur); every other metric stays
None. Run it with `python -m tests.report.make_sample_run` (it needs the shipped plan).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.analysis.frames import CORE_COLUMNS
from dspark_tui.model import CellResult, ClientMetrics, Plan, Provenance, UserError
from dspark_tui.results.manifest import RunManifest, manifest_for_plan
from dspark_tui.results.store import RunStore

SEED_RUN_NAME = "dspark_st_comparison_20260707-150649"
SEED_ORIGINAL_DIR = "/data/user1/yy/bench_results/dspark_st_comparison_20260707-150649"
SEED_STARTED_AT = "2026-07-07T15:06:49"
SEED_SOURCE = (
    "transcribed from the hand-made report seed/000_a9ad07d41d2a76d0.txt "
    "(its core metrics table, two decimals as published)"
)
SEED_CLIENT = "sglang.bench_serving --backend vllm"

# The seed's core table columns after Scenario / Concurrency / Spec are the report's own.
SEED_COLUMNS = tuple(CORE_COLUMNS)
_ROW = re.compile(r"^\|\s*([A-Za-z0-9_.-]+)\s*\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|((?:\s*[\d.]+\s*\|){11})\s*$")
# Both numbers are published to two decimals, so each may be off by up to half a cent.
_HALF_CENT = 0.005


@dataclass(frozen=True)
class SeedRow:
    scenario: str
    concurrency: int
    spec: str
    values: tuple[float, ...]


def parse_seed_table(text: str) -> list[SeedRow]:
    """The rows of the seed's 核心指标对比 table (the first table with 14 columns)."""
    rows = []
    for line in text.splitlines():
        match = _ROW.match(line.strip())
        if match is None:
            continue
        numbers = tuple(float(v) for v in match.group(4).strip(" |").split("|"))
        rows.append(SeedRow(match.group(1), int(match.group(2)), match.group(3), numbers))
    if not rows:
        raise UserError("seed report: no core metrics table rows found")
    return rows


def completed_requests(duration: float, request_throughput: float) -> int:
    """duration x req/s, which must land on an integer: a check that the row was read right."""
    product = duration * request_throughput
    nearest = round(product)
    rounding = _HALF_CENT * (duration + request_throughput) + _HALF_CENT**2
    if abs(product - nearest) > rounding:
        raise UserError(f"seed report: {duration} s x {request_throughput} req/s is not a request count")
    return int(nearest)


def seed_cells(rows: list[SeedRow], plan: Plan, var: str = "spec_tokens") -> list[CellResult]:
    arm_by_value = {str(arm.vars.get(var)): arm.name for arm in plan.arms}
    cells = []
    for row in rows:
        if row.spec not in arm_by_value:
            raise UserError(f"seed report: spec {row.spec!r} matches no arm of plan {plan.name!r}")
        metrics = ClientMetrics.model_validate(dict(zip(SEED_COLUMNS, row.values, strict=True)))
        metrics.completed = completed_requests(row.values[0], row.values[1])
        scenario = plan.scenario(row.scenario)
        notes = ["input_len/output_len/range_ratio are the plan's, inferred from the seed's ratios"]
        if metrics.completed != scenario.prompts_for(row.concurrency):
            notes.append(f"plan would send {scenario.prompts_for(row.concurrency)} prompts")
        cells.append(
            CellResult(
                arm=arm_by_value[row.spec],
                scenario=row.scenario,
                concurrency=row.concurrency,
                metrics=metrics,
                provenance=Provenance(
                    driver="sglang",
                    source=SEED_SOURCE,
                    input_len=scenario.input_len,
                    output_len=scenario.output_len,
                    range_ratio=plan.bench.range_ratio,
                    num_prompts=metrics.completed,
                    notes=notes,
                ),
            )
        )
    return cells


def seed_manifest(plan: Plan, plan_source: str, total_cells: int) -> RunManifest:
    manifest = manifest_for_plan(plan, plan_source=plan_source)
    manifest.original_dir = SEED_ORIGINAL_DIR
    manifest.started_at = SEED_STARTED_AT
    manifest.finished_at = None
    manifest.status = "completed"
    manifest.host = ""
    manifest.versions = {}
    manifest.client = SEED_CLIENT
    manifest.total_cells = total_cells
    manifest.notes = [SEED_SOURCE, "no server metrics, series, logs or raw client output exist"]
    return manifest


def build_seed_run(seed_text: str, plan: Plan, plan_source: str, out_dir: Path) -> RunStore:
    """Write run.json, the cells and results.csv of the seed's run into `out_dir`."""
    cells = seed_cells(parse_seed_table(seed_text), plan)
    store = RunStore(out_dir)
    store.path.mkdir(parents=True, exist_ok=True)
    store.write_manifest(seed_manifest(plan, plan_source, len(cells)))
    for cell in cells:
        store.save_cell(cell)
    store.write_results_csv(cells)
    return store
