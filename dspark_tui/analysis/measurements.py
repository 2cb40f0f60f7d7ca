"""From measurements to one row per cell: what the report's tables show for a cell measured
several times (repeats, rounds), and which measurement records a run holds."""

from __future__ import annotations

from collections.abc import Iterable

from dspark_tui.model import CellKey, CellResult, ClientMetrics, ServerSummary
from dspark_tui.results.store import LoadedRun


def measurements_of(run: LoadedRun) -> list[CellResult]:
    """Every measurement record of a run (older loaders knew only one per cell)."""
    return list(run.measurements or run.cells.values())


def aggregate_cells(measurements: Iterable[CellResult]) -> dict[CellKey, CellResult]:
    """One CellResult per cell: a single measurement as it is; several ok ones as the mean of
    each client and server number (latency percentiles too: the mean of the measurements'
    percentiles, not a percentile of the pooled requests; the report says so). A cell with no ok
    measurement shows its latest failed or skipped one. A measurement whose client fell behind
    (model/client_health.py) gives no latency: its TTFT, TPOT, ITL and E2E are the client's."""
    by_key: dict[CellKey, list[CellResult]] = {}
    for m in measurements:
        by_key.setdefault(m.key, []).append(without_client_latencies(m) if m.client_behind else m)
    out: dict[CellKey, CellResult] = {}
    for key, group in by_key.items():
        ok = [m for m in group if m.ok]
        if len(ok) == 1:
            out[key] = ok[0]
        elif ok:
            out[key] = _mean_of(ok)
        else:
            out[key] = max(group, key=lambda m: (m.round, m.repeat))
    return out


_CLIENT_LATENCIES = ("_ttft_ms", "_tpot_ms", "_itl_ms", "_e2e_latency_ms")


def without_client_latencies(m: CellResult) -> CellResult:
    """The measurement with its latencies unset: what it says about the server is its
    throughput and counts, not the times a late client gave its tokens."""
    unset = {name: None for name in ClientMetrics.model_fields if name.endswith(_CLIENT_LATENCIES)}
    return m.model_copy(update={"metrics": m.metrics.model_copy(update=unset)})


def _mean_of(group: list[CellResult]) -> CellResult:
    latest = max(group, key=lambda m: (m.round, m.repeat))
    metrics = ClientMetrics.model_validate(_mean_fields([m.metrics.model_dump() for m in group]))
    servers = [m.server for m in group if m.server is not None]
    server = None
    if servers:
        dumps = [s.model_dump() for s in servers]
        fields = _mean_fields(dumps)
        fields["per_position_acceptance"] = _mean_lists([s.per_position_acceptance for s in servers])
        for peak in ("kv_usage_peak", "running_peak", "waiting_peak", "gpu_memory_peak_mib"):
            values = [d[peak] for d in dumps if d.get(peak) is not None]
            fields[peak] = max(values) if values else None
        for total in ("samples", "scrape_gaps", "counter_resets"):
            fields[total] = sum(int(d.get(total) or 0) for d in dumps)
        counted = [int(d["running_samples"]) for d in dumps if d.get("running_samples") is not None]
        fields["running_samples"] = sum(counted) if counted else None
        server = ServerSummary.model_validate(fields)
    return latest.model_copy(update={"metrics": metrics, "server": server})


def _mean_fields(dumps: list[dict[str, object]]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for name in dumps[0]:
        values = [v for d in dumps if isinstance(v := d.get(name), int | float) and not isinstance(v, bool)]
        if values:
            mean = sum(values) / len(values)
            fields[name] = mean if any(isinstance(v, float) for v in values) else round(mean)
    return fields


def _mean_lists(lists: list[list[float]]) -> list[float]:
    width = max((len(values) for values in lists), default=0)
    out = []
    for i in range(width):
        column = [values[i] for values in lists if len(values) > i]
        out.append(sum(column) / len(column))
    return out


def acceptance_length(cell: CellResult) -> float | None:
    """Measured on the server when scraped, else what the client read from it, else unknown."""
    if cell.server is not None and cell.server.mean_acceptance_length is not None:
        return cell.server.mean_acceptance_length
    return cell.metrics.accept_length
