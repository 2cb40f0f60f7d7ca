"""The statistics a run decides with: its settings and the tie band, one home for each rule.

`StatisticsSettings` is the plan's statistics keys (`bench.tie_band`, `alpha`, `rounds`,
`adaptive_rounds`, `parallel`, `session_noise_prior`) and the arms never restarted between
rounds (`external_arms`), as a run was started with them. The runner builds it from the plan
(`of_plan`), `RunStarted` carries it as it is, `RunState` keeps it, and the verdicts read it
(`analysis/verdicts.Settings.of`); a finished run's comes from its run.json plan snapshot
(`from_snapshot`). Nothing converts it to a dict and back on the way.

Old runs: the field defaults here are what a run recorded before the key existed (one round, no
adaptive rounds, one lane, the 2 % band, alpha 0.05, no prior), and they are the only defaults
a reader applies: a `RunStarted` without `statistics` (`RunState.settings`), a snapshot or an
event dict lacking a key. A new plan's defaults are the plan's (`model/plan.BenchConfig`), which
always writes every key, so these never replace a key a plan stated.

`TieBand` is the band inside which two arms count as even, applied the same way everywhere:
a ratio's log within ±`log_edge` (the verdicts, single measurements; an interval inside it is
a tie, stats/paired.classify), a lower bound at or above `floor` of the best (the K decision,
on the ratio or its log, `log_floor`), a margin under `fraction` (the seed's rule for a winner
table without intervals) and `percent` for the words. `stats/paired.decide` takes the fraction
and puts its edge at `log1p(fraction)`, which is `log_edge` (stats imports nothing of ours).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The band and level a run states unless its plan says otherwise (and every run before the
# keys existed used): plan.BenchConfig's defaults are these.
DEFAULT_TIE_BAND = 0.02
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class TieBand:
    """± `fraction` around an even ratio (0.02: two arms within 2 % of each other are even)."""

    fraction: float = DEFAULT_TIE_BAND

    @property
    def log_edge(self) -> float:
        """The band's edge for a log ratio: |log(b / a)| below it is even."""
        return math.log1p(self.fraction)

    @property
    def floor(self) -> float:
        """The lowest ratio to the best that still counts as even with it (1 - band)."""
        return 1.0 - self.fraction

    @property
    def log_floor(self) -> float:
        """`floor` on the log scale: log(1 - band), added to the best's log value."""
        return math.log1p(-self.fraction)

    def holds(self, margin: float) -> bool:
        """A lead (winner / runner-up - 1) under the band: even, by the seed's rule."""
        return margin < self.fraction

    def within_log(self, log_ratio: float) -> bool:
        """A single log ratio inside the band (the seed's rule for a single measurement)."""
        return abs(log_ratio) < self.log_edge

    @property
    def percent(self) -> str:
        """The band as the words print it: `2` for 0.02, `2.5` for 0.025."""
        return f"{self.fraction * 100:g}"


class SessionNoisePrior(BaseModel):
    """Between-session spread of log(Total tok/s) ratios, as a standard deviation, with the
    degrees of freedom it was estimated with (and where it came from, for the report)."""

    # strict, as every plan table: TOML has real numbers (model/plan.py).
    model_config = ConfigDict(extra="forbid", strict=True)

    sd: float = Field(ge=0.0, lt=1.0)
    df: int = Field(ge=1)
    source: str = ""


class StatisticsSettings(BaseModel):
    """The statistics keys a run was started with; the defaults are an old run's (above)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    tie_band: float = DEFAULT_TIE_BAND
    alpha: float = DEFAULT_ALPHA
    rounds: int = 1
    adaptive_rounds: int = 0
    parallel: int = 1
    session_noise_prior: SessionNoisePrior | None = None
    # Arms whose server something else runs (plan `url`): never restarted between rounds.
    external_arms: tuple[str, ...] = ()

    @property
    def band(self) -> TieBand:
        return TieBand(self.tie_band)

    @classmethod
    def from_snapshot(cls, plan: Mapping[str, Any] | None) -> StatisticsSettings:
        """From a plan as run.json keeps it (a dict): its `bench` table's keys, the defaults
        above for the keys an old run lacks, and the arms that give a `url`."""
        plan = plan or {}
        bench = plan.get("bench")
        arms = plan.get("arms")
        external = [str(a.get("name")) for a in (arms if isinstance(arms, list) else [])
                    if isinstance(a, dict) and a.get("url")]
        return cls.model_validate({**(bench if isinstance(bench, Mapping) else {}),
                                   "external_arms": external})
