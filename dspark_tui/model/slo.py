"""The plan's optional `[slo]` table: the latency a service must keep, so that the decision can
be "the fastest setting that keeps it" rather than the fastest (issue 24, docs/decision.md).

    [slo]
    attainment = 0.95        # share of requests that must meet every plain limit
    tpot_ms = 25             # plain limits: per request
    ttft_ms = 2000
    p99_e2e_ms = 8000        # percentile limits: the p99 of the cell's requests' E2E
    [slo.scenarios.rag_medium]
    ttft_ms = 4000           # a scenario's own limits replace the plan's, key by key
    # objective = "goodput"  # choose by requests a second meeting the SLO (default: throughput)

Every limit is a threshold on one per-request latency and the share of requests that must stay
under it: a plain limit's share is `attainment`, a `pNN_` limit's NN %. A request *meets the
SLO* when it stays under every threshold; a cell's attainment is the share of its requests that
do, its goodput the rate of them. The metrics of one request (analysis/slo.py reads them from
the native client's raw file): TTFT, E2E, TPOT = (E2E − TTFT) / (output tokens − 1) and ITL =
its mean gap between streamed chunks, (E2E − TTFT) / chunks after the first.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

METRICS = ("ttft", "tpot", "itl", "e2e")
PERCENTILES = (50, 90, 95, 99)
DEFAULT_ATTAINMENT = 0.95
METRIC_LABELS = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E"}


def limit_keys() -> list[str]:
    """Every limit key a `[slo]` table may hold: `tpot_ms`, `p95_tpot_ms`, …"""
    return [f"{m}_ms" for m in METRICS] + [f"p{p}_{m}_ms" for p in PERCENTILES for m in METRICS]


class Limit(BaseModel):
    """One threshold: `metric` of a request ≤ `ms` for at least `share` of the requests."""

    model_config = ConfigDict(frozen=True)

    key: str  # as the plan wrote it: `tpot_ms`, `p95_tpot_ms`
    metric: str
    ms: float
    share: float
    percentile: int | None  # None: a plain limit (its share is the attainment level)

    @property
    def label(self) -> str:
        """`TPOT ≤ 25 ms` or `p95 TPOT ≤ 25 ms`."""
        prefix = f"p{self.percentile} " if self.percentile is not None else ""
        return f"{prefix}{METRIC_LABELS[self.metric]} ≤ {self.ms:g} ms"


def _limit_field() -> Any:
    return Field(default=None, gt=0, le=86_400_000)


class SloLimits(BaseModel):
    """The limits of one table (the plan's, or a scenario's overrides)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    ttft_ms: float | None = _limit_field()
    tpot_ms: float | None = _limit_field()
    itl_ms: float | None = _limit_field()
    e2e_ms: float | None = _limit_field()
    p50_ttft_ms: float | None = _limit_field()
    p50_tpot_ms: float | None = _limit_field()
    p50_itl_ms: float | None = _limit_field()
    p50_e2e_ms: float | None = _limit_field()
    p90_ttft_ms: float | None = _limit_field()
    p90_tpot_ms: float | None = _limit_field()
    p90_itl_ms: float | None = _limit_field()
    p90_e2e_ms: float | None = _limit_field()
    p95_ttft_ms: float | None = _limit_field()
    p95_tpot_ms: float | None = _limit_field()
    p95_itl_ms: float | None = _limit_field()
    p95_e2e_ms: float | None = _limit_field()
    p99_ttft_ms: float | None = _limit_field()
    p99_tpot_ms: float | None = _limit_field()
    p99_itl_ms: float | None = _limit_field()
    p99_e2e_ms: float | None = _limit_field()

    @field_validator("*", mode="before")
    @classmethod
    def _int_is_a_number(cls, value: Any) -> Any:
        """`tpot_ms = 25` is as good as 25.0 (strict mode refuses an int for a float)."""
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value

    def given(self) -> dict[str, float]:
        return {key: value for key in limit_keys() if (value := getattr(self, key)) is not None}

    @model_serializer(mode="wrap")
    def _only_given(self, handler: Any) -> Any:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


class Slo(SloLimits):
    """`[slo]`: limits, the attainment level and per-scenario overrides."""

    attainment: float = Field(default=DEFAULT_ATTAINMENT, gt=0.0, lt=1.0)
    scenarios: dict[str, SloLimits] = Field(default_factory=dict)
    # What the choices under the SLO maximise among the arms that meet it: Total tok/s, or the
    # requests a second that meet the SLO (goodput).
    objective: Literal["throughput", "goodput"] = "throughput"

    @model_validator(mode="after")
    def _some_limit(self) -> Slo:
        if not self.given() and not any(s.given() for s in self.scenarios.values()):
            raise ValueError("gives no limit; set at least one of " + ", ".join(limit_keys()[:4])
                             + " or a percentile form such as p95_tpot_ms")
        return self

    @model_serializer(mode="wrap")
    def _only_given(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if v is not None}
            if not data.get("scenarios"):
                data.pop("scenarios", None)
            if data.get("objective") == "throughput":
                data.pop("objective", None)
        return data

    def limits_for(self, scenario: str) -> list[Limit]:
        """The scenario's limits: the plan's, with the scenario's own replacing them key by key."""
        merged = {**self.given(), **(self.scenarios[scenario].given() if scenario in self.scenarios else {})}
        out = []
        for key in limit_keys():
            if key not in merged:
                continue
            parts = key.removesuffix("_ms").split("_")
            if len(parts) == 2:
                percentile = int(parts[0][1:])
                out.append(Limit(key=key, metric=parts[1], ms=merged[key], share=percentile / 100,
                                 percentile=percentile))
            else:
                out.append(Limit(key=key, metric=parts[0], ms=merged[key], share=self.attainment,
                                 percentile=None))
        return out
