"""A cell's identity and its result: the unit of progress, persistence and resume."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from dspark_tui.model.client_health import ClientHealth
from dspark_tui.model.naming import safe_name
from dspark_tui.model.numbers import OUT_OF_RANGE, out_of_range

CELL_SCHEMA_VERSION = 2  # 2: a cell holds several measurements (round, repeat, session, node)

# Why a measurement failed, as a kind readers count by (the words stay in `error`):
# `server_start`: its session's server never came up, so it was never measured;
# `server_died`: the server died or stopped answering while it was measured.
FailureKind = Literal["server_start", "server_died"]
# The words the runner writes before the reason of a `server_start` failure. A measurement
# saved before `failure` existed is known as one by them alone (CellResult's fallback).
START_FAILED = "server failed to start"


class CellKey(BaseModel):
    """(arm, scenario, concurrency): what a cell is, independent of how it went."""

    model_config = ConfigDict(frozen=True)

    arm: str
    scenario: str
    concurrency: int

    @property
    def id(self) -> str:
        return f"{self.arm}/{self.scenario}/c{self.concurrency}"

    @property
    def file_stem(self) -> str:
        return f"{safe_name(self.scenario)}__c{self.concurrency}"

    def relpath(self, folder: str, suffix: str) -> str:
        """`cells/st_3/chat_short__c8.json` for folder `cells`, suffix `.json`."""
        return f"{folder}/{safe_name(self.arm)}/{self.file_stem}{suffix}"


class CellStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


_PCT = ("mean", "median", "std", "p90", "p95", "p99")


class ClientMetrics(BaseModel):
    """What the benchmark client measured, named as sglang.bench_serving names it.

    Every field is optional: an imported or hand-made run may not have them all, and a
    missing number is shown as missing, never invented.
    """

    model_config = ConfigDict(extra="ignore")

    duration: float | None = None
    completed: int | None = None
    failed: int | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_throughput: float | None = None
    input_throughput: float | None = None
    output_throughput: float | None = None
    total_throughput: float | None = None
    concurrency: float | None = None

    mean_e2e_latency_ms: float | None = None
    median_e2e_latency_ms: float | None = None
    std_e2e_latency_ms: float | None = None
    p90_e2e_latency_ms: float | None = None
    p95_e2e_latency_ms: float | None = None
    p99_e2e_latency_ms: float | None = None

    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    std_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p95_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None

    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    std_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p95_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None

    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    std_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p95_itl_ms: float | None = None
    p99_itl_ms: float | None = None

    # Reported by clients that read the server's spec-decode counters (vllm bench serve).
    accept_length: float | None = None

    @field_validator("*")
    @classmethod
    def _finite_and_not_negative(cls, value: float | None) -> float | None:
        """Counts, times and rates: a negative or infinite one is a damaged or forged file,
        which must read as unreadable (and be measured again), never as a result."""
        if out_of_range(value) and not (isinstance(value, float) and math.isinf(value)):
            raise ValueError(OUT_OF_RANGE)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"must be a finite number ≥ 0, got {value!r}")
        return value

    @classmethod
    def field_names(cls) -> list[str]:
        return list(cls.model_fields)


class ServerSummary(BaseModel):
    """What /metrics said over the cell's window (counter deltas, gauge statistics)."""

    model_config = ConfigDict(extra="ignore")

    samples: int = 0
    scrape_gaps: int = 0
    counter_resets: int = 0
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    drafts: float | None = None
    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position_acceptance: list[float] = Field(default_factory=list)
    kv_usage_mean: float | None = None
    kv_usage_peak: float | None = None
    running_mean: float | None = None
    running_peak: float | None = None
    # Readings of the running batch in the window (the scraper reads it every 0.25 s inside a
    # cell); None: a file from before it was counted. The K schedule's key needs 4 (docs/decision.md).
    running_samples: int | None = None
    # The median reading without the window's first and last: the batch the cell held.
    running_steady: float | None = None
    waiting_mean: float | None = None
    waiting_peak: float | None = None
    preemptions: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    gpu_util_mean: float | None = None
    gpu_memory_peak_mib: float | None = None
    gpu_power_mean_w: float | None = None


class Provenance(BaseModel):
    """Where a number came from, so a reader can trust or redo it."""

    model_config = ConfigDict(extra="ignore")

    driver: str = "unknown"
    command: list[str] = Field(default_factory=list)
    client_version: str | None = None
    raw_output: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    input_len: int | None = None
    output_len: int | None = None
    range_ratio: float | None = None
    num_prompts: int | None = None
    source: str | None = None
    notes: list[str] = Field(default_factory=list)
    # What proved the server that answered was the session's own (engine/servers/identity.py): its
    # per-session served name on /v1/models, the port's socket in its process tree; None for
    # measurements from before 2026-12 or imported ones.
    server_identity: str | None = None

    @model_serializer(mode="wrap")
    def _without_absent_identity(self, handler: Any) -> Any:
        """A measurement without a proven server (imported, older) saves as it did before."""
        data = handler(self)
        if isinstance(data, dict) and data.get("server_identity") is None:
            data.pop("server_identity", None)
        return data


class CellResult(BaseModel):
    """One measurement of a cell (finished, failed or skipped), as saved in its own file.

    A cell is measured once per repeat (a pass within one server session) and round (one
    server session per arm); `session` names the server start that served it (a restart or a
    resume starts a new one), `node` the machine (None: this one). Schema 1 files carry none of
    these and load as round 1, repeat 1.
    """

    model_config = ConfigDict(extra="ignore")

    schema_version: int = CELL_SCHEMA_VERSION
    arm: str
    scenario: str
    concurrency: int = Field(ge=1)
    round: int = Field(default=1, ge=1)
    repeat: int = Field(default=1, ge=1)
    session: str | None = None
    node: str | None = None
    status: CellStatus = CellStatus.OK
    error: str | None = None
    failure: FailureKind | None = None
    metrics: ClientMetrics = Field(default_factory=ClientMetrics)
    server: ServerSummary | None = None
    provenance: Provenance = Field(default_factory=Provenance)
    # The native client's health over the measurement (model/client_health.py); None: not
    # measured (a peer driver, a file from before 2026-12). `behind`: its latencies are the
    # client's, kept out of latency comparisons.
    client: ClientHealth | None = None

    @property
    def client_behind(self) -> bool:
        return self.client is not None and self.client.behind

    @model_validator(mode="before")
    @classmethod
    def _failure_of_old_files(cls, data: Any) -> Any:
        """A measurement saved without `failure` (before the key): its error's words say it."""
        if isinstance(data, dict) and "failure" not in data:
            error = data.get("error")
            if isinstance(error, str) and error.startswith(START_FAILED):
                data = {**data, "failure": "server_start"}
        return data

    @model_serializer(mode="wrap")
    def _without_absent_keys(self, handler: Any) -> Any:
        """A measurement that did not fail for a known kind, or has no client health (peer
        drivers, imports), saves as it did before those keys existed (one serializer: pydantic
        keeps only the last a class defines)."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("failure", "client"):
                if key in data and data[key] is None:
                    del data[key]
        return data

    @classmethod
    def start_failed_error(cls, reason: str) -> str:
        """The words of a `server_start` failure (what every view shows as its error)."""
        return f"{START_FAILED}: {reason}"

    @property
    def failure_reason(self) -> str | None:
        """Why a `server_start` failure happened: its error without the kind's own words."""
        if self.failure != "server_start":
            return None
        error = self.error or ""
        if error.startswith(START_FAILED):
            error = error[len(START_FAILED):].lstrip(": ")
        return error.strip() or START_FAILED

    @property
    def key(self) -> CellKey:
        return CellKey(arm=self.arm, scenario=self.scenario, concurrency=self.concurrency)

    @property
    def ok(self) -> bool:
        return self.status == CellStatus.OK

    @property
    def total_throughput(self) -> float | None:
        return self.metrics.total_throughput

    def flat_row(self) -> dict[str, Any]:
        """One row of results.csv: identity, client metrics, server summary scalars."""
        row: dict[str, Any] = {
            "arm": self.arm,
            "scenario": self.scenario,
            "concurrency": self.concurrency,
            "status": self.status.value,
            "error": self.error or "",
        }
        metrics = self.metrics.model_dump()
        # The client's measured mean concurrency must not overwrite the cell's concurrency.
        metrics["measured_concurrency"] = metrics.pop("concurrency")
        row.update(metrics)
        if self.server is not None:
            for name, value in self.server.model_dump().items():
                if name == "per_position_acceptance":
                    value = ";".join(f"{v:.4f}" for v in value)
                row[f"server_{name}"] = value
        row["driver"] = self.provenance.driver
        return row
