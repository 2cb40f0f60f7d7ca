"""The native client's raw output: per-request timings, and the cell's metrics rebuilt from them.

A measurement's every inter-token latency (ITL) costs about 10 bytes of JSON each, megabytes a
decode-heavy cell. The raw file (version 2) therefore keeps one line per request (TTFT, E2E,
tokens, its ITL count) under a header holding the cell's duration and the summary of all ITLs
(mean, median, std, p90/p95/p99 of the successful requests' gaps, in request order), computed
from the full data before it is dropped. The full ITLs are kept only on request
(`[bench] keep_itl = true`), beside it in `{stem}.itl.npz`: unsigned microseconds, compressed.

Times are whole microseconds (the resolution version 1 files were written at), so the numbers
rebuilt from either file are the numbers the driver saved in the cell, exactly. Version 1
files (no header, an `itl_s` list on every line) are still read.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dspark_tui.model import ClientMetrics, UserError
from dspark_tui.results.atomic import atomic_write_bytes
from dspark_tui.stats.descriptive import SUMMARY_STATS, Summary, summarize

RAW_FORMAT = "dspark-tui native raw"
RAW_VERSION = 2
ITL_SUFFIX = ".itl.npz"
_US = 1_000_000


class NativeRawError(UserError):
    """A native raw file that cannot be read; the message names the file and line."""


def to_microseconds(seconds: float) -> float:
    """`seconds` rounded to the microsecond, as the float every reader parses back."""
    return round(seconds * _US) / _US


@dataclass(frozen=True)
class RequestTiming:
    """One request as saved: times in seconds (whole microseconds) from the request's start."""

    index: int
    input_tokens: int
    requested_output_tokens: int
    output_tokens: int
    start_s: float
    ttft_s: float
    e2e_s: float
    usage_reported: bool
    itl_count: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def tpot_s(self) -> float | None:
        if self.output_tokens > 1:
            return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)
        return None

    def as_json(self) -> dict[str, object]:
        line: dict[str, object] = {
            "i": self.index,
            "input_tokens": self.input_tokens,
            "requested_output_tokens": self.requested_output_tokens,
            "output_tokens": self.output_tokens,
            "start_s": self.start_s,
            "ttft_s": self.ttft_s,
            "e2e_s": self.e2e_s,
            "usage_reported": self.usage_reported,
            "itl_n": self.itl_count,
        }
        if self.error:
            line["error"] = self.error
        return line


@dataclass
class NativeRaw:
    """A measurement's client data: what the cell's metrics are computed from."""

    requests: list[RequestTiming]
    duration_s: float | None  # None: a version 1 file, which did not record it
    itl_summary: Summary | None  # over the successful requests' ITLs, in seconds
    itl_count: int  # those ITLs' number
    itl_us: np.ndarray | None = None  # every request's ITLs in request order, when kept
    version: int = RAW_VERSION
    notes: list[str] = field(default_factory=list)


def ok_itl_seconds(requests: Sequence[RequestTiming], itl_us: np.ndarray) -> np.ndarray:
    """The successful requests' gaps, in request order, in seconds: the cell's ITL sample."""
    ok = np.fromiter((r.ok for r in requests), dtype=bool, count=len(requests))
    counts = np.fromiter((r.itl_count for r in requests), dtype=np.int64, count=len(requests))
    return itl_us[np.repeat(ok, counts)] / _US


def from_measurement(requests: list[RequestTiming], duration_s: float, itl_us: np.ndarray) -> NativeRaw:
    """A measurement's raw data with its ITL summary taken from the full ITLs."""
    sample = ok_itl_seconds(requests, itl_us)
    return NativeRaw(requests=requests, duration_s=duration_s, itl_summary=summarize(sample),
                     itl_count=len(sample), itl_us=itl_us)


def native_metrics(raw: NativeRaw, duration_s: float | None = None) -> ClientMetrics:
    """The cell's client metrics as sglang.bench_serving defines them: successful requests only,
    ITL per chunk. `duration_s` stands in for a version 1 file's unrecorded duration."""
    duration_s = raw.duration_s if raw.duration_s is not None else duration_s
    if duration_s is None:
        raise ValueError("the raw file records no duration; pass the cell's")
    ok = [r for r in raw.requests if r.ok]
    total_input = sum(r.input_tokens for r in ok)
    total_output = sum(r.output_tokens for r in ok)
    e2es = [r.e2e_s for r in ok]

    def rate(amount: float) -> float | None:
        return amount / duration_s if duration_s > 0 else None  # no time: no rate, never NaN

    values: dict[str, float | int | None] = {
        "duration": duration_s,
        "completed": len(ok),
        "failed": len(raw.requests) - len(ok),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": rate(len(ok)),
        "input_throughput": rate(total_input),
        "output_throughput": rate(total_output),
        "total_throughput": rate(total_input + total_output),
        "concurrency": rate(math.fsum(e2es)) if e2es else None,
    }
    _fill(values, "e2e_latency", summarize(e2es))
    _fill(values, "ttft", summarize([r.ttft_s for r in ok]))
    _fill(values, "tpot", summarize([t for r in ok if (t := r.tpot_s) is not None]))
    _fill(values, "itl", raw.itl_summary)
    return ClientMetrics.model_validate(values)


def _fill(metrics: dict[str, float | int | None], name: str, summary: Summary | None) -> None:
    if summary is None:
        return
    for stat, value in summary.scaled(1000.0).items():
        metrics[f"{stat}_{name}_ms"] = value


# -- writing ---------------------------------------------------------------------------------


def itl_path(path: Path) -> Path:
    """`chat__c8.jsonl` -> `chat__c8.itl.npz`."""
    return path.with_name(path.name.removesuffix(".jsonl") + ITL_SUFFIX)


def write_native_raw(path: Path, raw: NativeRaw, keep_itl: bool = False) -> list[Path]:
    """Writes the raw file (and the full ITLs when `keep_itl`); returns the files written.

    The ITL file goes first, so a raw file that names one always has it beside it."""
    written: list[Path] = []
    itl_file: str | None = None
    if keep_itl and raw.itl_us is not None:
        full = itl_path(path)
        atomic_write_bytes(full, _npz_bytes(raw.itl_us))
        written.append(full)
        itl_file = full.name
    summary = raw.itl_summary
    header = {
        "format": RAW_FORMAT,
        "version": RAW_VERSION,
        "duration_s": raw.duration_s,
        "requests": len(raw.requests),
        "itl_count": raw.itl_count,
        "itl_summary_s": None if summary is None else {s: getattr(summary, s) for s in SUMMARY_STATS},
        "itl_file": itl_file,
    }
    lines = [header, *(r.as_json() for r in raw.requests)]
    atomic_write_bytes(path, "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines).encode())
    written.append(path)
    return written


def _npz_bytes(itl_us: np.ndarray) -> bytes:
    # Gaps fit 32 bits below 71 minutes; a longer one keeps the file exact at 64.
    dtype = np.uint32 if itl_us.size == 0 or int(itl_us.max()) <= np.iinfo(np.uint32).max else np.int64
    buffer = io.BytesIO()
    np.savez_compressed(buffer, itl_us=itl_us.astype(dtype))
    return buffer.getvalue()


# -- reading ---------------------------------------------------------------------------------


def is_native_raw(first_line: dict[str, Any]) -> bool:
    """Whether a JSONL file's first object is a native raw file's (either version)."""
    return first_line.get("format") == RAW_FORMAT or ("itl_s" in first_line and "e2e_s" in first_line)


def read_native_raw(path: str | Path) -> NativeRaw:
    """Either version; a file it cannot use is one NativeRawError naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise NativeRawError(f"{path}: cannot read the raw file ({exc})") from None
    objects = [_json_object(path, n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not objects:
        raise NativeRawError(f"{path}: empty raw file")
    if objects[0].get("format") == RAW_FORMAT:
        return _read_v2(path, objects[0], objects[1:])
    return _read_v1(path, objects)


def _json_object(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError:
        raise NativeRawError(f"{path}:{number}: not a JSON line") from None
    if not isinstance(obj, dict):
        raise NativeRawError(f"{path}:{number}: expected a JSON object")
    return obj


def _request(path: Path, number: int, obj: dict[str, Any], itl_count: int) -> RequestTiming:
    try:
        return RequestTiming(
            index=int(obj["i"]),
            input_tokens=int(obj["input_tokens"]),
            requested_output_tokens=int(obj["requested_output_tokens"]),
            output_tokens=int(obj["output_tokens"]),
            start_s=float(obj["start_s"]),
            ttft_s=float(obj["ttft_s"]),
            e2e_s=float(obj["e2e_s"]),
            usage_reported=bool(obj.get("usage_reported", False)),
            itl_count=itl_count,
            error=str(obj.get("error") or ""),
        )
    except KeyError as exc:
        raise NativeRawError(f"{path}:{number}: request line without {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise NativeRawError(f"{path}:{number}: bad request line ({exc})") from None


def _read_v1(path: Path, objects: list[dict[str, Any]]) -> NativeRaw:
    gaps: list[float] = []
    requests = []
    for number, obj in enumerate(objects, 1):
        itl = obj.get("itl_s")
        if not isinstance(itl, list):
            raise NativeRawError(f"{path}:{number}: request line without an 'itl_s' list")
        requests.append(_request(path, number, obj, len(itl)))
        gaps.extend(float(x) for x in itl)
    itl_us = np.rint(np.asarray(gaps, dtype=float) * _US).astype(np.int64)
    sample = ok_itl_seconds(requests, itl_us)
    return NativeRaw(requests=requests, duration_s=None, itl_summary=summarize(sample),
                     itl_count=len(sample), itl_us=itl_us, version=1,
                     notes=["version 1 raw file: no duration recorded"])


def _read_v2(path: Path, header: dict[str, Any], objects: list[dict[str, Any]]) -> NativeRaw:
    version = header.get("version")
    if not isinstance(version, int) or version > RAW_VERSION:
        raise NativeRawError(f"{path}:1: raw file version {version!r} was written by a newer dspark-tui")
    requests = []
    for number, obj in enumerate(objects, 2):
        count = obj.get("itl_n")
        if not isinstance(count, int) or count < 0:
            raise NativeRawError(f"{path}:{number}: request line without an 'itl_n' count")
        requests.append(_request(path, number, obj, count))
    stored = header.get("itl_summary_s")
    try:
        duration = header.get("duration_s")
        summary = Summary(**{s: float(stored[s]) for s in SUMMARY_STATS}) if stored else None
        raw = NativeRaw(requests=requests, duration_s=None if duration is None else float(duration),
                        itl_summary=summary, itl_count=int(header.get("itl_count") or 0))
    except (KeyError, TypeError, ValueError) as exc:
        raise NativeRawError(f"{path}:1: bad header ({exc!r})") from None
    if isinstance(header.get("itl_file"), str):
        raw.itl_us = _read_itl_file(path.with_name(header["itl_file"]), requests)
    return raw


def _read_itl_file(full: Path, requests: Sequence[RequestTiming]) -> np.ndarray:
    try:
        with np.load(full, allow_pickle=False) as data:
            itl_us = np.asarray(data["itl_us"], dtype=np.int64)
    except (OSError, KeyError, ValueError) as exc:
        raise NativeRawError(f"{full}: cannot read the kept ITLs ({exc})") from None
    expected = sum(r.itl_count for r in requests)
    if itl_us.size != expected:
        raise NativeRawError(f"{full}: {itl_us.size} ITLs, the raw file counts {expected}")
    return itl_us
