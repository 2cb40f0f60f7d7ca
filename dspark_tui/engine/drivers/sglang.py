"""The `sglang` driver: the seed's own client, `python -m sglang.bench_serving --backend vllm`.

The dataset is `random-ids` (token ids drawn by seeded numpy, decoded with the tokenizer), which
needs no download on an offline GPU box. The seed used `random`, which samples ShareGPT text and
downloads it when no `--dataset-path` is given: to reproduce that, put
`["--dataset-name", "random", "--dataset-path", "/path/ShareGPT.json"]` in `bench.extra_args`
(they come last, and argparse keeps the last value). Lengths are drawn the same way by both.
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
        "--dataset-name", "random-ids",
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
