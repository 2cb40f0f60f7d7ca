"""The header's line on the benchmark client's own health (model/client_health.py): all kept
up, or which measurements fell behind, what that leaves out and why their throughput stands."""

from __future__ import annotations

from dspark_tui.analysis.measurements import measurements_of
from dspark_tui.model.client_health import (
    BURST_LIMIT,
    LAG_FLOOR_MS,
    LAG_SHARE,
    THROUGHPUT_LAG_SHARE,
)
from dspark_tui.model.cpus import cpu_list
from dspark_tui.model.measurements import slot_label
from dspark_tui.report.words import Texts
from dspark_tui.results.store import LoadedRun

_NAMED = 3  # measurements named in the line; the rest counted


def client_health_line(run: LoadedRun, t: Texts) -> str | None:
    """None when no ok measurement carries the client's health (peer drivers, older runs)."""
    measured = [m for m in measurements_of(run) if m.ok and m.client is not None]
    if not measured:
        return None
    worst_lag = max(m.client.loop_lag_p99_ms for m in measured if m.client is not None)
    behind = [m for m in measured if m.client_behind]
    if not behind:
        worst_same = max(m.client.same_read_fraction for m in measured if m.client is not None)
        return t("client_kept_up", n=len(measured), lag=f"{worst_lag:.1f}", same=f"{worst_same:.0%}")
    behind.sort(key=lambda m: (m.arm, m.scenario, m.concurrency, m.round, m.repeat))
    items = []
    for m in behind[:_NAMED]:
        assert m.client is not None
        items.append(f"{m.key.id} {slot_label(m.round, m.repeat)}: {'; '.join(m.client.reasons)}")
    if len(behind) > _NAMED:
        items.append(f"+{len(behind) - _NAMED}")
    lag = max(m.client.loop_lag_p99_ms for m in behind if m.client is not None)
    e2es = [m.metrics.mean_e2e_latency_ms for m in behind if m.metrics.mean_e2e_latency_ms]
    e2e = sum(e2es) / len(e2es) if e2es else None
    share = lag / e2e if e2e else None
    numbers = {"lag": f"{lag:.1f}", "e2e": f"{e2e:,.0f}" if e2e else "?",
               "share": f"{share:.0%}" if share is not None else "?"}
    doubtful = share is None or share > THROUGHPUT_LAG_SHARE
    throughput = t("client_throughput_doubtful" if doubtful else "client_throughput_stands", **numbers)
    return t("client_behind", k=len(behind), n=len(measured), items="; ".join(items),
             same_limit=f"{BURST_LIMIT:.0%}", lag_fraction=f"{LAG_SHARE:.0%}",
             floor=f"{LAG_FLOOR_MS:g}", throughput=throughput)


def cpus_line(run: LoadedRun, t: Texts) -> str | None:
    """Where the server's process tree and the client ran, when the plan pinned the server
    (`[server] cpus`, model/cpus.py); None otherwise (and for every run from before the key)."""
    plan = run.manifest.plan or {}
    server = plan.get("server") if isinstance(plan, dict) else None
    cpus = server.get("cpus") if isinstance(server, dict) else None
    if not isinstance(cpus, list) or not cpus or not all(isinstance(c, int) for c in cpus):
        return None
    client = sorted({cpu for m in measurements_of(run) if m.client is not None and m.client.cpus
                     for cpu in m.client.cpus})
    where = t("cpus_client", client=cpu_list(client)) if client else t("cpus_client_unknown")
    return t("cpus_pinned", server=cpu_list(cpus), client=where)
