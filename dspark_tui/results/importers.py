"""Turning benchmark result files into our ClientMetrics.

Three formats: sglang.bench_serving's `--output-file` (JSONL, one object appended per run),
`vllm bench serve --save-result` (one JSON object) and our native client's raw file (either
version, `results/native_raw.py`). Every field ClientMetrics has is mapped
where the file has it or it follows from what the file has (vllm's per-request `latencies`
give the E2E statistics); nothing is invented. A file we cannot use is one UserError line.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dspark_tui.model import CellResult, ClientMetrics, Provenance, UserError
from dspark_tui.results.native_raw import is_native_raw, native_metrics, read_native_raw
from dspark_tui.stats.descriptive import SUMMARY_STATS, summarize


@dataclass
class ImportedMetrics:
    """What one result file says: the client metrics, where they came from, the raw object."""

    metrics: ClientMetrics
    provenance: Provenance
    raw: dict[str, Any] = field(default_factory=dict)
    spec_decode: dict[str, Any] = field(default_factory=dict)


class ResultFileError(UserError):
    """A benchmark result file that cannot be read; the message names the file."""


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such result file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: cannot read the result file ({exc})") from None


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    number = _finite(value)
    return int(number) if number is not None else None


# -- sglang.bench_serving ------------------------------------------------------------------


def last_complete_json_line(path: Path) -> tuple[dict[str, Any], int]:
    """The last line that parses as a JSON object, and its 1-based line number.

    sglang appends one line per run; a run killed while writing leaves a torn last line,
    which is skipped so the previous complete result is still found.
    """
    text = _read_text(path)
    lines = text.splitlines()
    for number in range(len(lines), 0, -1):
        line = lines[number - 1].strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj, number
    if not text.strip():
        raise ResultFileError(f"{path}: empty result file (the client wrote no result line)")
    raise ResultFileError(f"{path}: no complete JSON result line (truncated or not JSONL)")


def _derive_rates(values: dict[str, Any]) -> None:
    """Rates an older client left out (sglang 0.5.3 writes no total_throughput) follow exactly
    from the token totals and the duration it did write."""
    duration = values.get("duration")
    if not duration or duration <= 0:
        return
    tokens_in = values.get("total_input_tokens")
    tokens_out = values.get("total_output_tokens")
    if values.get("input_throughput") is None and tokens_in is not None:
        values["input_throughput"] = tokens_in / duration
    if values.get("output_throughput") is None and tokens_out is not None:
        values["output_throughput"] = tokens_out / duration
    if values.get("total_throughput") is None and tokens_in is not None and tokens_out is not None:
        values["total_throughput"] = (tokens_in + tokens_out) / duration


def parse_sglang_result(obj: dict[str, Any], source: str) -> ImportedMetrics:
    """One sglang.bench_serving result object; its keys are ClientMetrics' own names."""
    if _count(obj.get("completed")) is None or _finite(obj.get("duration")) is None:
        raise ResultFileError(
            f"{source}: not a sglang.bench_serving result (no 'completed'/'duration' numbers)"
        )
    values: dict[str, Any] = {}
    for name, info in ClientMetrics.model_fields.items():
        if name not in obj:
            continue
        annotation = str(info.annotation)
        values[name] = _count(obj[name]) if "int" in annotation else _finite(obj[name])
    _derive_rates(values)
    errors = obj.get("errors")
    if values.get("failed") is None and isinstance(errors, list):
        values["failed"] = sum(1 for e in errors if e)
    metrics = ClientMetrics.model_validate(values)
    provenance = Provenance(
        driver="sglang",
        client_version=None,
        raw_output=source,
        input_len=_count(obj.get("random_input_len")),
        output_len=_count(obj.get("random_output_len")),
        range_ratio=_finite(obj.get("random_range_ratio")),
        num_prompts=None,
        source="sglang.bench_serving",
    )
    dataset = obj.get("dataset_name")
    if isinstance(dataset, str):
        provenance.notes.append(f"dataset {dataset}")
    return ImportedMetrics(metrics=metrics, provenance=provenance, raw=obj)


def import_sglang_jsonl(path: str | Path) -> ImportedMetrics:
    path = Path(path)
    obj, line = last_complete_json_line(path)
    imported = parse_sglang_result(obj, f"{path}:{line}")
    imported.provenance.raw_output = str(path)
    return imported


# -- vllm bench serve ---------------------------------------------------------------------

# vllm names its E2E latency `e2el`; the rest match sglang's names.
_VLLM_PREFIX = {"e2e_latency": "e2el", "ttft": "ttft", "tpot": "tpot", "itl": "itl"}


def _spec_decode(obj: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
    """Mean acceptance length and the raw spec-decode keys vllm adds when the server drafts."""
    found = {k: v for k, v in obj.items() if k.startswith("spec_decode_")}
    length = _finite(found.get("spec_decode_acceptance_length"))
    if length is None:
        accepted = _finite(found.get("spec_decode_accepted_tokens"))
        drafts = _finite(found.get("spec_decode_num_drafts"))
        if accepted is not None and drafts:
            length = 1.0 + accepted / drafts
    return length, found


def parse_vllm_result(obj: dict[str, Any], source: str) -> ImportedMetrics:
    duration = _finite(obj.get("duration"))
    completed = _count(obj.get("completed"))
    if duration is None or completed is None:
        raise ResultFileError(
            f"{source}: not a vllm bench serve result (no 'completed'/'duration' numbers)"
        )
    total_input = _count(obj.get("total_input_tokens"))
    total_output = _count(obj.get("total_output_tokens"))
    values: dict[str, Any] = {
        "duration": duration,
        "completed": completed,
        "failed": _count(obj.get("failed")),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": _finite(obj.get("request_throughput")),
        "output_throughput": _finite(obj.get("output_throughput")),
        "total_throughput": _finite(obj.get("total_token_throughput")),
    }
    if duration > 0 and total_input is not None:
        values["input_throughput"] = _finite(obj.get("input_throughput")) or total_input / duration
    for ours, theirs in _VLLM_PREFIX.items():
        for stat in SUMMARY_STATS:
            value = _finite(obj.get(f"{stat}_{theirs}_ms"))
            if value is not None:
                values[f"{stat}_{ours}_ms"] = value
    latencies = obj.get("latencies")
    if isinstance(latencies, list) and latencies:
        seconds = [v for v in (_finite(x) for x in latencies) if v is not None]
        summary = summarize(seconds)
        if summary is not None:
            for stat, value in summary.scaled(1000.0).items():
                values.setdefault(f"{stat}_e2e_latency_ms", value)
            if duration > 0:
                values["concurrency"] = math.fsum(seconds) / duration
    accept_length, spec = _spec_decode(obj)
    values["accept_length"] = accept_length
    metrics = ClientMetrics.model_validate(values)
    provenance = Provenance(
        driver="vllm",
        raw_output=source,
        num_prompts=_count(obj.get("num_prompts")),
        source="vllm bench serve",
    )
    if spec:
        rate = _finite(spec.get("spec_decode_acceptance_rate"))
        provenance.notes.append(
            "client-reported spec decode: "
            + ", ".join(
                part
                for part in (
                    f"acceptance length {accept_length:.3f}" if accept_length is not None else "",
                    f"acceptance rate {rate:.2f}%" if rate is not None else "",
                )
                if part
            )
        )
    return ImportedMetrics(metrics=metrics, provenance=provenance, raw=obj, spec_decode=spec)


def import_vllm_json(path: str | Path) -> ImportedMetrics:
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise ResultFileError(f"{path}: empty result file (the client wrote no result)")
    try:
        obj = json.loads(text)
    except ValueError:
        # `--append-result` writes one object per line; a torn last one is skipped.
        obj, line = last_complete_json_line(path)
        return parse_vllm_result(obj, f"{path}:{line}")
    if not isinstance(obj, dict):
        raise ResultFileError(f"{path}: expected one JSON object, found {type(obj).__name__}")
    imported = parse_vllm_result(obj, str(path))
    return imported


# -- the native client's raw file -----------------------------------------------------------


def import_native_raw(path: str | Path, duration_s: float | None = None) -> ImportedMetrics:
    """The metrics the native driver saved for the cell, rebuilt from its raw file.

    A version 1 file did not record the cell's duration: `duration_s` (the cell file's) stands
    in, else the span from the first request's start to the last one's end, said in a note."""
    path = Path(path)
    raw = read_native_raw(path)
    notes = list(raw.notes)
    if raw.duration_s is None and duration_s is None:
        duration_s = max((r.start_s + r.e2e_s for r in raw.requests), default=0.0)
        notes.append("duration taken as the requests' span")
    try:
        metrics = native_metrics(raw, duration_s)
    except ValueError as exc:
        raise ResultFileError(f"{path}: {exc}") from None
    provenance = Provenance(driver="native", raw_output=str(path), num_prompts=len(raw.requests),
                            source="native", notes=notes)
    return ImportedMetrics(metrics=metrics, provenance=provenance)


def cell_from_native_raw(cell: CellResult, run_dir: str | Path) -> CellResult:
    """The cell with its client metrics rebuilt from the raw file it names (re-analysis)."""
    if cell.provenance.driver != "native" or not cell.provenance.raw_output:
        raise ResultFileError(f"{cell.arm} {cell.scenario} c{cell.concurrency}: no native raw file")
    duration = cell.metrics.duration
    imported = import_native_raw(Path(run_dir) / cell.provenance.raw_output, duration)
    return cell.model_copy(update={"metrics": imported.metrics})


def _first_line_object(text: str) -> dict[str, Any] | None:
    for line in text.splitlines():
        if line.strip():
            try:
                obj = json.loads(line)
            except ValueError:
                return None
            return obj if isinstance(obj, dict) else None
    return None


def import_result_file(path: str | Path) -> ImportedMetrics:
    """Any format, told apart by content: vllm's file is one object with `date`/`latencies`,
    the native raw file starts with its header (version 1: a request line with `itl_s`)."""
    path = Path(path)
    text = _read_text(path)
    first = _first_line_object(text)
    if first is not None and is_native_raw(first):
        return import_native_raw(path)
    if path.suffix == ".jsonl":
        return import_sglang_jsonl(path)
    try:
        obj = json.loads(text)
    except ValueError:
        return import_sglang_jsonl(path)
    if isinstance(obj, dict) and ("total_token_throughput" in obj or "latencies" in obj):
        return parse_vllm_result(obj, str(path))
    if isinstance(obj, dict):
        imported = parse_sglang_result(obj, str(path))
        imported.provenance.raw_output = str(path)
        return imported
    raise ResultFileError(f"{path}: expected a JSON object, found {type(obj).__name__}")
