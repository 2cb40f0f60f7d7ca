"""The `vllm` driver: `vllm bench serve ... --save-result`, parsed with its spec_decode keys.

vllm's random dataset draws lengths from [L(1-b), L(1+b)] around L, where sglang (and the plan)
mean [L*r, L]. The plan's range is translated: L' = L(1+r)/2 and b = (1-r)/(1+r), so both
clients draw from the same interval with the same mean. vllm requires b < 1, so r = 0 becomes
b = 0.99 (lengths from about L/200 instead of 1); the provenance notes say so.
"""

from __future__ import annotations

from dspark_tui.engine.drivers.base import DriverContext, ProgressCallback
from dspark_tui.engine.drivers.cli_driver import CliRun, run_cli_cell
from dspark_tui.model import CellResult, CellSpec
from dspark_tui.results.importers import import_vllm_json

TOOL = "vllm bench serve"
_MAX_VLLM_RANGE = 0.99


def vllm_range(full_len: int, range_ratio: float) -> tuple[int, float]:
    """(length, ratio) for vllm's symmetric range that covers sglang's [L*r, L]."""
    if range_ratio >= 1.0:
        return full_len, 0.0
    center = max(1, round(full_len * (1.0 + range_ratio) / 2.0))
    spread = min((1.0 - range_ratio) / (1.0 + range_ratio), _MAX_VLLM_RANGE)
    return center, round(spread, 6)


def vllm_argv(cell: CellSpec, ctx: DriverContext, result_filename: str) -> list[str]:
    bench = ctx.bench
    input_len, ratio = vllm_range(cell.input_len, cell.range_ratio)
    output_len, _ = vllm_range(cell.output_len, cell.range_ratio)
    return [
        bench.vllm_executable, "bench", "serve",
        "--backend", "vllm",
        "--base-url", ctx.base_url,
        "--endpoint", "/v1/completions",
        "--model", ctx.served_model_name,
        "--tokenizer", ctx.model_path,
        "--dataset-name", "random",
        "--random-input-len", str(input_len),
        "--random-output-len", str(output_len),
        "--random-range-ratio", repr(ratio),
        "--num-prompts", str(cell.num_prompts),
        "--max-concurrency", str(cell.key.concurrency),
        "--request-rate", "inf",
        "--ignore-eos",
        # greedy, as the native client and sglang.bench_serving ask: vllm bench (0.32, 0.33) leaves
        # the temperature to the server (1.0), another workload (sampling and detokenizing cost,
        # draft acceptance under rejection sampling) than the other clients' (docs/client.md)
        "--temperature", "0",
        "--seed", str(bench.seed),
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", "50,90,95,99",
        "--save-result",
        "--result-dir", str(ctx.raw_dir),
        "--result-filename", result_filename,
        *bench.extra_args,
    ]  # fmt: skip


class VllmDriver:
    name = "vllm"

    async def run(self, cell: CellSpec, ctx: DriverContext, on_progress: ProgressCallback) -> CellResult:
        filename = f"{cell.key.file_stem}.json"
        run = CliRun(tool=TOOL, driver=self.name, argv=vllm_argv(cell, ctx, filename),
                     result_path=ctx.raw_dir / filename, parse=import_vllm_json)
        result = await run_cli_cell(run, cell, ctx, on_progress)
        if cell.range_ratio < 1.0:
            length, ratio = vllm_range(cell.input_len, cell.range_ratio)
            result.provenance.notes.append(
                f"range ratio {cell.range_ratio:g} sent to vllm as length {length} +/- {ratio:g}"
            )
        return result

