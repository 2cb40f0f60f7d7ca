"""The plan's optional `[traffic]` table: what the user's own traffic looks like, so that "the
best single K" and its expected gain refer to it rather than to the grid's equal weights."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class TrafficMix(BaseModel):
    """Weights per scenario, and how load is spread: either over client concurrency or as a
    histogram of running batch sizes (`vllm:num_requests_running` from production /metrics).

    Weights are relative (they need not sum to 1). A scenario not listed gets weight 0 when
    `scenarios` is given; a concurrency or batch size not in the grid lends its weight to the
    nearest measured one (on a log2 scale).
    """

    model_config = ConfigDict(extra="forbid")

    scenarios: dict[str, float] = Field(default_factory=dict)
    concurrency: dict[int, float] = Field(default_factory=dict)
    running_batch: dict[int, float] = Field(default_factory=dict)
    description: str = ""

    @field_validator("scenarios", "concurrency", "running_batch")
    @classmethod
    def _weights(cls, value: dict) -> dict:
        if any(w < 0 for w in value.values()):
            raise ValueError("weights must be >= 0")
        if value and not any(w > 0 for w in value.values()):
            raise ValueError("at least one weight must be positive")
        if any(isinstance(k, int) and k <= 0 for k in value):
            raise ValueError("concurrencies and batch sizes must be positive")
        return value

    @model_validator(mode="after")
    def _one_load_axis(self) -> TrafficMix:
        if self.concurrency and self.running_batch:
            raise ValueError("give either concurrency or running_batch, not both")
        return self

    def unknown_scenarios(self, names: list[str]) -> list[str]:
        return [name for name in self.scenarios if name not in names]
