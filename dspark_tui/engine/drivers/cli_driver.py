"""What the sglang and vllm drivers share: run the CLI for a cell, then judge its result file.

Policy for partial failure (the same as the native driver's): a run where some requests
failed is still a result, saved with `failed` = prompts - completed and a note, because its
numbers describe what the server did; a run where none completed is a CellError.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.engine.drivers.base import CellError, DriverContext, ProgressCallback
from dspark_tui.engine.drivers.external import ChildOutcome, run_child
from dspark_tui.model import CellResult, CellSpec, ClientMetrics, UserError
from dspark_tui.model.events import CellProgress
from dspark_tui.model.secrets import redact_argv, secret_values
from dspark_tui.results.importers import ImportedMetrics
from dspark_tui.results.manifest import now_iso

PROGRESS_INTERVAL_S = 0.25


def raw_relpath(ctx: DriverContext, path: Path) -> str:
    """`raw/st_3/chat_short__c8.jsonl`: stable when the run directory moves."""
    try:
        return str(path.relative_to(ctx.raw_dir.parent.parent))
    except ValueError:
        return str(path)


class ProgressRelay:
    """Turns the client's `n/total` into CellProgress events, at most ~4 a second."""

    def __init__(self, cell: CellSpec, on_progress: ProgressCallback) -> None:
        self._cell = cell
        self._on_progress = on_progress
        self._last_sent = 0.0
        self._last_count = -1

    def __call__(self, done: int, total: int) -> None:
        if total != self._cell.num_prompts:
            return  # another bar (dataset preparation, warmup), not the benchmark's
        now = time.monotonic()
        if done == self._last_count:
            return
        if done < total and now - self._last_sent < PROGRESS_INTERVAL_S:
            return
        self._last_sent = now
        self._last_count = done
        self._on_progress(CellProgress(key=self._cell.key, completed=done, total=total))


def api_key_env(ctx: DriverContext) -> dict[str, str]:
    """The key travels in the environment (OPENAI_API_KEY), never on a logged command line."""
    env = dict(ctx.extra_env)
    if ctx.bench.api_key:
        env["OPENAI_API_KEY"] = ctx.bench.api_key
    return env


def _accept_any(imported: ImportedMetrics) -> None:
    return None


@dataclass(frozen=True)
class CliRun:
    """One benchmark CLI invocation for a cell: the command, where it writes its result, and how
    that file is read and checked against the cell (`check` raises CellError on a mismatch)."""

    tool: str
    driver: str
    argv: list[str]
    result_path: Path
    parse: Callable[[Path], ImportedMetrics]
    check: Callable[[ImportedMetrics], None] = _accept_any


async def run_cli_cell(
    run: CliRun, cell: CellSpec, ctx: DriverContext, on_progress: ProgressCallback
) -> CellResult:
    tool, argv, result_path = run.tool, run.argv, run.result_path
    log_path = ctx.raw_dir / f"{cell.key.file_stem}.log"
    ctx.raw_dir.mkdir(parents=True, exist_ok=True)
    # Both tools append to an existing result file; a stale one from an earlier try must go.
    result_path.unlink(missing_ok=True)
    started_at = now_iso()
    env = api_key_env(ctx)
    outcome: ChildOutcome = await run_child(
        argv,
        log_path,
        timeout_s=ctx.bench.cell_timeout_s,
        on_count=ProgressRelay(cell, on_progress),
        env=env,
        what=tool,
        # Both clients print their parsed args: extra_args' `--header Authorization=Bearer …`.
        secrets=secret_values(argvs=[argv], env=env, keys=[ctx.bench.api_key]),
    )
    if outcome.returncode != 0:
        why = outcome.last_words() or f"see {raw_relpath(ctx, log_path)}"
        raise CellError(f"{tool} exited with code {outcome.returncode}: {why}")
    if not result_path.exists():
        raise CellError(
            f"{tool} exited 0 but wrote no result file {raw_relpath(ctx, result_path)}"
        )
    try:
        imported = run.parse(result_path)
    except UserError as exc:
        raise CellError(f"{tool}: {exc}") from None
    run.check(imported)
    metrics = imported.metrics
    notes = list(imported.provenance.notes)
    completed = metrics.completed or 0
    if completed == 0:
        raise CellError(f"{tool}: no request completed (0 of {cell.num_prompts})")
    if completed < cell.num_prompts:
        metrics = metrics.model_copy(update={"failed": cell.num_prompts - completed})
        notes.append(f"{cell.num_prompts - completed} of {cell.num_prompts} requests failed")
    elif metrics.failed is None:
        metrics = metrics.model_copy(update={"failed": 0})
    provenance = cell.provenance(
        run.driver,
        command=redact_argv(argv),
        raw_output=raw_relpath(ctx, result_path),
        started_at=started_at,
        finished_at=now_iso(),
        source=imported.provenance.source,
        notes=notes,
    )
    on_progress(
        CellProgress(
            key=cell.key,
            completed=completed,
            total=cell.num_prompts,
            failed=metrics.failed or 0,
            output_tok_s=metrics.output_throughput,
            ttft_p50_ms=metrics.median_ttft_ms,
            ttft_p99_ms=metrics.p99_ttft_ms,
            tpot_p50_ms=metrics.median_tpot_ms,
            tpot_p99_ms=metrics.p99_tpot_ms,
        )
    )
    return CellResult(
        arm=cell.key.arm,
        scenario=cell.key.scenario,
        concurrency=cell.key.concurrency,
        metrics=ClientMetrics.model_validate(metrics.model_dump()),
        provenance=provenance,
    )
