"""How many bytes does the native client leave in raw/ per measurement, and what does writing cost?

    python bench/raw_size.py [--speed 1] [--spec-tokens 3] [--quick]

Runs a decode_heavy cell (512/2048 tokens, c=32, 512 prompts) and a stress cell (1024/256,
c=128, 1024 prompts) of the shipped plan against the simulator with the native driver keeping
every ITL, then writes the same measurement three ways and times each write (CPU seconds,
median of 3): version 1 (every gap as JSON on its request's line, what dspark-tui wrote before),
version 2 (a line a request and the ITL summary: the default) and version 2 with
`keep_itl = true` (plus the gaps as compressed microseconds). The simulator runs `--speed` times
faster than the modelled server; the gaps are multiplied back by it before writing, so the
sizes are those of a real-time run. `--quick`: 32 and 64 prompts, speed 4.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, simulator

from dspark_tui.engine.drivers import DriverContext
from dspark_tui.engine.drivers.native import NativeDriver
from dspark_tui.engine.drivers.stats import RequestRecord, measured_raw
from dspark_tui.model import BenchConfig, CellKey, CellSpec
from dspark_tui.results.atomic import atomic_write_text
from dspark_tui.results.native_raw import NativeRaw, read_native_raw, write_native_raw

CELLS = {  # scenario: (input_len, output_len, concurrency, prompts) as in dspark-st3-vs-st5.toml
    "decode_heavy": (512, 2048, 32, 512),
    "stress_standard": (1024, 256, 128, 1024),
}
QUICK_PROMPTS = {"decode_heavy": 32, "stress_standard": 64}


def measure(url: str, folder: Path, scenario: str, prompts: int) -> NativeRaw:
    input_len, output_len, concurrency, _ = CELLS[scenario]
    cell = CellSpec(key=CellKey(arm="st=3", scenario=scenario, concurrency=concurrency),
                    input_len=input_len, output_len=output_len, range_ratio=0.0, num_prompts=prompts)
    ctx = DriverContext(base_url=url, host="127.0.0.1", port=int(url.rsplit(":", 1)[1]),
                        served_model_name="bench-model", model_path="bench-model",
                        bench=BenchConfig(driver="native", seed=1, keep_itl=True),
                        raw_dir=folder / "run" / "raw" / "measured")
    result = asyncio.run(NativeDriver().run(cell, ctx, lambda p: None))
    return read_native_raw(folder / "run" / str(result.provenance.raw_output))


def records_at_real_time(raw: NativeRaw, speed: float) -> tuple[list[RequestRecord], float]:
    """The measurement as the driver held it, its times scaled back to the modelled server's."""
    assert raw.itl_us is not None and raw.duration_s is not None
    gaps = (raw.itl_us / 1e6 * speed).tolist()
    records, at = [], 0
    for r in raw.requests:
        records.append(RequestRecord(
            index=r.index, input_tokens=r.input_tokens, requested_output_tokens=r.requested_output_tokens,
            start=r.start_s * speed, output_tokens=r.output_tokens, ttft=r.ttft_s * speed,
            e2e=r.e2e_s * speed, itl=gaps[at : at + r.itl_count], usage_reported=r.usage_reported,
            error=r.error))  # fmt: skip
        at += r.itl_count
    return records, raw.duration_s * speed


def write_version_1(path: Path, records: list[RequestRecord]) -> list[Path]:
    """What the native driver wrote before version 2 (its as_json and _write_raw), to compare."""
    lines = []
    for r in records:
        line: dict[str, object] = {
            "i": r.index, "input_tokens": r.input_tokens,
            "requested_output_tokens": r.requested_output_tokens,
            "output_tokens": r.output_tokens, "start_s": round(r.start, 6), "ttft_s": round(r.ttft, 6),
            "e2e_s": round(r.e2e, 6), "usage_reported": r.usage_reported,
            "itl_s": [round(gap, 6) for gap in r.itl],
        }  # fmt: skip
        if r.error:
            line["error"] = r.error
        lines.append(json.dumps(line, separators=(",", ":")) + "\n")
    atomic_write_text(path, "".join(lines))
    return [path]


def cpu_and_bytes(write: Callable[[], list[Path]]) -> tuple[float, int]:
    times, written = [], []
    for _ in range(3):
        start = time.process_time()
        written = write()
        times.append(time.process_time() - start)
    return statistics.median(times), sum(p.stat().st_size for p in written)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speed", type=float, default=1.0, help="simulator speed-up (default 1)")
    parser.add_argument("--spec-tokens", type=int, default=3,
                        help="the simulated server's K (0: a chunk per token, the most gaps)")
    parser.add_argument("--quick", action="store_true", help="32 and 64 prompts at speed 4")
    args = parser.parse_args()
    speed = 4.0 if args.quick else args.speed
    rows = []
    with (tempfile.TemporaryDirectory(prefix="raw-size-") as tmp,
          simulator(speed=speed, spec_tokens=args.spec_tokens) as (url, _)):
        folder = Path(tmp)
        for scenario, (*_, prompts) in CELLS.items():
            prompts = QUICK_PROMPTS[scenario] if args.quick else prompts
            records, duration = records_at_real_time(measure(url, folder, scenario, prompts), speed)
            out = folder / scenario
            gaps = sum(len(r.itl) for r in records)

            def version_2(keep: bool, out: Path = out, records=records, duration=duration) -> list[Path]:
                return write_native_raw(out / f"v2_{keep}.jsonl", measured_raw(records, duration), keep)

            for label, write in (
                ("version 1 (every gap)", lambda out=out, records=records: write_version_1(out / "v1.jsonl",
                                                                                         records)),
                ("version 2 (default)", lambda: version_2(False)),
                ("version 2, keep_itl", lambda: version_2(True)),
            ):
                cpu, size = cpu_and_bytes(write)
                rows.append([scenario, prompts, gaps, label, size, f"{size / prompts:.0f}", f"{cpu:.4f}"])
    print(f"\n## Raw output of one measurement (simulator at --speed {speed:g}, K={args.spec_tokens}, "
          "gaps scaled to real time)")
    print_table(["cell", "prompts", "ITLs", "format", "bytes", "bytes/request", "write CPU s"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
