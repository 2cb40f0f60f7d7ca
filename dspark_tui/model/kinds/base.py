"""What the tool must know of one kind of serving engine, in one place (the shape of Harlequin's
adapter base class: one abstract class, one subclass a kind, a registry by name).

A kind says, in plain names and pure functions:

- its metrics dialect: the /metrics names the scraper reads and what each means to us;
- readiness: the health path and the one tiny completion that say the server serves;
- speculation: the flags that carry K, the speculative-config flag and its K keys, and how an
  arm's `[arms.speculative]` table becomes server arguments (`{speculative}` in the command);
- its default batch limit and flag, and how a K schedule is exported for it.

The engine and the report ask the plan's kind (`Plan.kind`); nothing else spells these names.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator


@dataclass(frozen=True)
class MetricsDialect:
    """The /metrics sample names a kind exports, mapped to the names the scraper keeps."""

    counters: Mapping[str, str]  # cumulative counter -> our name (drafts, accepted_tokens …)
    per_position: str  # accepted tokens per draft position (label `position`)
    gauges: Mapping[str, str]  # gauge -> our name (running, waiting, kv_usage)
    kv_usage: tuple[str, ...]  # the KV-usage gauges, preferred first (older names after)
    label: str  # the engine's name in a warning ("vLLM")
    family: str  # what a page without any of them lacks, for the warning ("vllm:*")
    path: str = "/metrics"

    @property
    def wanted(self) -> frozenset[str]:
        return frozenset([*self.counters, self.per_position, *self.gauges])


@dataclass(frozen=True)
class Readiness:
    """Ready means alive, `health_path` answering 200 and one tiny completion succeeding."""

    health_path: str = "/health"
    completion_path: str = "/v1/completions"

    def completion_body(self, model: str) -> dict[str, Any]:
        return {"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0.0}


JsonValue = str | int | float | bool | list[Any] | dict[str, Any]


class SpeculativeSettings(BaseModel):
    """An arm's `[arms.speculative]` table: the method, K (`num_speculative_tokens`, or `k`) and
    the method's own keys (`prompt_lookup_max` for ngram, `model` for a draft model …), passed
    to the server as they are. K = 0 starts the server without any speculative flag."""

    model_config = ConfigDict(extra="allow", strict=True)

    method: str | None = Field(default=None, min_length=1)
    num_speculative_tokens: int = Field(
        ge=0, validation_alias=AliasChoices("num_speculative_tokens", "k", "K")
    )

    @model_validator(mode="before")
    @classmethod
    def _one_k(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [key for key in ("num_speculative_tokens", "k", "K") if key in data]
            if len(given) > 1:
                raise ValueError(f"sets K twice ({' and '.join(given)}); keep one")
            if not given:
                raise ValueError("needs num_speculative_tokens (or k): the number of draft tokens")
        return data

    @model_validator(mode="after")
    def _json_values(self) -> SpeculativeSettings:
        for key, value in (self.model_extra or {}).items():
            if not _is_json(value):
                raise ValueError(
                    f"{key}: {value!r} is no JSON value (a string, number, boolean, array or table)"
                )
        return self

    @property
    def k(self) -> int:
        return self.num_speculative_tokens

    def method_keys(self) -> dict[str, Any]:
        """The keys besides method and K, in the order given."""
        return dict(self.model_extra or {})

    def config(self) -> dict[str, Any]:
        """Everything the table says, method first, then K, then the method's keys."""
        out: dict[str, Any] = {}
        if self.method is not None:
            out["method"] = self.method
        out["num_speculative_tokens"] = self.num_speculative_tokens
        out.update(self.method_keys())
        return out


def _is_json(value: Any) -> bool:
    if isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


class ServerKind(ABC):
    """One kind of serving engine. Subclasses fill the class attributes and the two methods."""

    name: ClassVar[str]
    label: ClassVar[str]
    metrics: ClassVar[MetricsDialect]
    readiness: ClassVar[Readiness] = Readiness()
    # Flags whose value is K, the flag that takes a JSON speculative config, and its K keys
    # (fixed, or per running batch size).
    k_flags: ClassVar[tuple[str, ...]]
    spec_config_flag: ClassVar[str]
    k_keys: ClassVar[tuple[str, ...]]
    # The key of a K schedule inside the speculative config.
    schedule_key: ClassVar[str]
    # The running-batch limit: its flag and the server's default where the plan sets none.
    batch_limit_flag: ClassVar[str]
    default_batch_limit: ClassVar[int]

    @abstractmethod
    def speculative_args(self, config: Mapping[str, Any] | None) -> list[str]:
        """The server arguments for one speculative config (an arm's table as `config()`, or a
        schedule's); [] for none or K = 0: the server starts without speculation."""

    @abstractmethod
    def schedule_config(
        self, ranges: Sequence[Sequence[int]], method: str, base: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """The speculative config that deploys a K schedule ([[lo, hi, K], …] over the running
        batch), the method's keys from `base`; None when the schedule never speculates."""

    def speculative_json(self, config: Mapping[str, Any]) -> str:
        return json.dumps(dict(config), separators=(",", ":"))
