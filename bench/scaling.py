"""How the tool's costs grow: report generation, history scan, and the native client's CPU per token.

    python bench/scaling.py [--quick]

Each section prints absolute times (noisy on a shared machine) and the growth factor between
sizes against the size factor: growth/size <= ~1 is linear or better.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, median_seconds, print_table, simulator

from dspark_tui.analysis.verdicts import Settings, analyse_measurements
from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.model import BenchConfig, CellKey, CellResult, CellSpec, ClientMetrics
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run, scan_runs

SAMPLE = REPO / "sample_results" / "dspark_st_comparison_20260707-150649"


def make_run(folder: Path, copies: int) -> Path:
    """The sample run's 36 cells repeated under `copies` scenario families: 36 * copies cells."""
    run = load_run(SAMPLE)
    manifest = run.manifest.model_copy(deep=True)
    manifest.plan = {}
    manifest.scenarios = []
    manifest.total_cells = 36 * copies
    store = RunStore(folder / f"scale_{copies}")
    store.path.mkdir(parents=True)
    store.write_manifest(manifest)
    for n in range(copies):
        for cell in run.cells.values():
            store.save_cell(cell.model_copy(update={"scenario": f"{cell.scenario}_{n:03d}"}))
    return store.path


def bench_report(tmp: Path, sizes: list[int], repeats: int) -> None:
    rows, previous = [], None
    for copies in sizes:
        path = make_run(tmp, copies)
        load_s = median_seconds(lambda path=path: load_run(path), repeats)
        loaded = load_run(path)
        render_s = median_seconds(lambda loaded=loaded: render_report(loaded, "zh"), repeats)
        total = load_s + render_s
        growth = f"{total / previous[1]:.1f}x for {copies / previous[0]:.0f}x" if previous else "-"
        rows.append([36 * copies, load_s, render_s, total * 1e3 / (36 * copies), growth])
        previous = (copies, total)
    print("\n## Report generation (load_run + render_report), median seconds")
    print_table(["cells", "load s", "render s", "ms per cell", "growth"], rows)


def measurements(cells: int, rounds: int, repeats: int) -> list[CellResult]:
    """`cells` cells (two arms) measured rounds x repeats times, with noise."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = []
    for index in range(cells // 2):
        scenario, concurrency = f"s{index // 6:04d}", 2 ** (index % 6)
        for arm, effect in (("st=3", 1.0), ("st=5", 1.05)):
            for rnd in range(1, rounds + 1):
                for rep in range(1, repeats + 1):
                    value = 1000.0 * effect * float(np.exp(rng.normal(0, 0.03)))
                    out.append(CellResult(arm=arm, scenario=scenario, concurrency=concurrency,
                                          round=rnd, repeat=rep,
                                          metrics=ClientMetrics(total_throughput=value)))
    return out


def bench_verdicts(sizes: list[int], rounds: int, repeats: int, repeats_timing: int) -> None:
    """The one analysis every screen calls (analysis/verdicts.py); target: 3,600 cells x 10
    measurements in <= 2 s."""
    settings = Settings(rounds=rounds, adaptive_rounds=2)
    rows = []
    for cells in sizes:
        data = measurements(cells, rounds, repeats)
        seconds = median_seconds(
            lambda data=data: analyse_measurements(data, ["st=3", "st=5"], settings), repeats_timing)
        rows.append([cells, len(data), seconds, "yes" if seconds <= 2.0 * cells / 3600 else "NO"])
    print(f"\n## Verdicts (analyse_measurements), {rounds} rounds x {repeats} repeats, median seconds")
    print_table(["cells", "measurements", "seconds", "within 2 s per 3,600 cells"], rows)


def make_runs(folder: Path, count: int) -> None:
    manifest = json.loads((SAMPLE / "run.json").read_text())
    manifest.pop("plan", None)
    for n in range(count):
        run = folder / f"run_{n:05d}"
        (run / "cells" / "st_3").mkdir(parents=True)
        manifest["started_at"] = f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}"
        (run / "run.json").write_text(json.dumps(manifest))
        for c in range(3):
            (run / "cells" / "st_3" / f"s__c{c}.json").write_text("{}")


def bench_scan(tmp: Path, sizes: list[int], repeats: int) -> None:
    rows, previous = [], None
    for count in sizes:
        folder = tmp / f"runs_{count}"
        make_runs(folder, count)
        seconds = median_seconds(lambda folder=folder: scan_runs([folder]), repeats)
        growth = f"{seconds / previous[1]:.1f}x for {count / previous[0]:.0f}x" if previous else "-"
        rows.append([count, seconds, seconds * 1e3 / count, growth])
        previous = (count, seconds)
        shutil.rmtree(folder)
    print("\n## History scan (scan_runs), median seconds")
    print_table(["runs", "scan s", "ms per run", "growth"], rows)


def bench_client(tmp: Path, concurrencies: list[int], output_len: int) -> None:
    rows = []
    with simulator("--max-num-seqs", "512", spec_tokens=3, speed=20) as (url, _proc):
        port = int(url.rsplit(":", 1)[1])
        for concurrency in concurrencies:
            prompts = max(8, concurrency * 2)
            cell = CellSpec(key=CellKey(arm="a", scenario="s", concurrency=concurrency),
                            input_len=256, output_len=output_len, range_ratio=1.0, num_prompts=prompts)
            ctx = DriverContext(base_url=url, host="127.0.0.1", port=port, served_model_name="bench-model",
                                model_path="bench-model", bench=BenchConfig(), raw_dir=tmp / "raw")
            cpu0, wall0 = time.process_time(), time.perf_counter()
            result = asyncio.run(NativeDriver().run(cell, ctx, lambda _p: None))
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            tokens = result.metrics.total_output_tokens or 0
            rows.append([concurrency, prompts, tokens, wall, cpu, cpu * 1000 / max(tokens, 1), cpu / wall])
    print("\n## Native client CPU (this process) against the simulator (--speed 20)")
    print_table(["concurrency", "requests", "out tokens", "wall s", "cpu s", "cpu s/1k tok", "cores"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for the test suite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dspark-scaling-") as tmp_name:
        tmp = Path(tmp_name)
        if args.quick:
            bench_report(tmp, [1, 2], repeats=1)
            bench_scan(tmp, [5, 10], repeats=1)
            bench_client(tmp, [1, 4], output_len=16)
            bench_verdicts([360], rounds=5, repeats=2, repeats_timing=1)
        else:
            bench_report(tmp, [1, 10, 100], repeats=3)
            bench_scan(tmp, [50, 500, 5000], repeats=3)
            bench_client(tmp, [1, 32, 128, 256], output_len=256)
            bench_verdicts([360, 3600], rounds=5, repeats=2, repeats_timing=3)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
