"""What the native client's health measures read with the client on a core of its own, and with
it starved (docs/client.md, model/client_health.py).

The client (this process) is pinned to core 0 and the simulator to core 1. `--hog` adds a
process spinning on core 0, so the client gets about half of its core, as when a server's worker
shares the client's core. Each row is one native measurement at the demo plan's simulator speed.

    python bench/client_health.py [--hog] [--speed 4] [--concurrencies 1,16,64] [--quick]

`--quick`: one short measurement at c = 1 (the smoke run of tests/test_bench_quick.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, simulator

from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.model import BenchConfig, CellKey, CellSpec

CLIENT_CORE, SERVER_CORE = 0, 1


async def measure(url: str, concurrency: int, output_len: int, raw: Path) -> list[object]:
    cell = CellSpec(key=CellKey(arm="a", scenario="s", concurrency=concurrency), input_len=512,
                    output_len=output_len, range_ratio=1.0, num_prompts=max(8, 2 * concurrency))
    ctx = DriverContext(base_url=url, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]),
                        served_model_name="bench-model", model_path="bench-model",
                        bench=BenchConfig(driver="native", seed=1, cell_timeout_s=300), raw_dir=raw)
    result = await NativeDriver().run(cell, ctx, lambda p: None)
    h, m = result.client, result.metrics
    assert h is not None
    return [concurrency, h.loop_lag_p50_ms, h.loop_lag_p99_ms, h.loop_lag_max_ms,
            f"{h.same_read_fraction:.1%}", h.gaps, m.mean_itl_ms, m.median_itl_ms, m.p99_itl_ms,
            m.mean_tpot_ms, "behind" if h.behind else "ok", "; ".join(h.reasons)[:60]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hog", action="store_true", help="a busy loop on the client's core")
    parser.add_argument("--speed", default="4")
    parser.add_argument("--concurrencies", default="1,16,64")
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--quick", action="store_true", help="one short cell at c = 1")
    args = parser.parse_args()
    if args.quick:
        args.concurrencies, args.output_len = "1", 32
    pin = (os.cpu_count() or 1) >= 2
    if pin:
        os.sched_setaffinity(0, {CLIENT_CORE})
    hog = None
    if args.hog:
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        if pin:
            os.sched_setaffinity(hog.pid, {CLIENT_CORE})
    rows = []
    try:
        with simulator(spec_tokens=3, speed=float(args.speed)) as (url, proc), \
                tempfile.TemporaryDirectory() as raw:
            if pin:
                os.sched_setaffinity(proc.pid, {SERVER_CORE})
            for c in (int(x) for x in args.concurrencies.split(",")):
                rows.append(asyncio.run(measure(url, c, args.output_len, Path(raw))))
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    print(f"load average {os.getloadavg()[0]:.1f}; hog on the client's core: {args.hog}")
    print_table(["c", "lag p50", "lag p99", "lag max", "same-read", "gaps", "ITL mean", "ITL p50",
                 "ITL p99", "TPOT mean", "client", "why"], rows)


if __name__ == "__main__":
    main()
