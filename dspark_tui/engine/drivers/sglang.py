"""The `sglang` driver: the seed's own client, `python -m sglang.bench_serving --backend vllm`.

The plan's dataset passes through: `random-ids` (token ids drawn by seeded numpy, decoded with
the tokenizer) needs no file; `random` (the seed's: ShareGPT text cut or repeated to the drawn
lengths) and `sharegpt` get `--dataset-path`, always a local file, since sglang would otherwise
download ShareGPT. The native client draws the same prompts (engine/datasets). `jsonl` is
native only (plan validation says so).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dspark_tui.engine.drivers.base import CellError, DriverContext, ProgressCallback
from dspark_tui.engine.drivers.cli_driver import CliRun, run_cli_cell
from dspark_tui.model import CellResult, CellSpec
from dspark_tui.results.importers import ImportedMetrics, import_sglang_jsonl

TOOL = "sglang.bench_serving"


def sglang_argv(cell: CellSpec, ctx: DriverContext, output_file: Path) -> list[str]:
    bench = ctx.bench
    return [
        bench.python, "-m", "sglang.bench_serving",
        "--backend", "vllm",
        "--host", ctx.host,
        "--port", str(ctx.port),
        "--model", ctx.served_model_name,
        "--tokenizer", ctx.model_path,
        "--dataset-name", cell.dataset,
        *(["--dataset-path", cell.dataset_path] if cell.dataset_path else []),
        "--random-input-len", str(cell.input_len),
        "--random-output-len", str(cell.output_len),
        "--random-range-ratio", repr(float(cell.range_ratio)),
        "--num-prompts", str(cell.num_prompts),
        "--max-concurrency", str(cell.key.concurrency),
        "--request-rate", "inf",
        "--seed", str(bench.seed),
        "--output-file", str(output_file),
        *bench.extra_args,
    ]  # fmt: skip


def _check_matches(cell: CellSpec) -> Callable[[ImportedMetrics], None]:
    def check(imported: ImportedMetrics) -> None:
        limit = imported.raw.get("max_concurrency")
        if limit is not None and limit != cell.key.concurrency:
            raise CellError(
                f"{TOOL}: its result is for max concurrency {limit}, not {cell.key.concurrency}"
            )

    return check


class SglangDriver:
    name = "sglang"

    async def run(self, cell: CellSpec, ctx: DriverContext, on_progress: ProgressCallback) -> CellResult:
        output_file = ctx.raw_dir / f"{cell.key.file_stem}.jsonl"
        run = CliRun(tool=TOOL, driver=self.name, argv=sglang_argv(cell, ctx, output_file),
                     result_path=output_file, parse=import_sglang_jsonl, check=_check_matches(cell))
        return await run_cli_cell(run, cell, ctx, on_progress)
