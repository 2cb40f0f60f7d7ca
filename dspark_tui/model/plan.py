"""The plan file: what to compare (arms), on which workloads (scenarios), with which client.

Loaded from TOML and validated by pydantic; every mistake becomes one line that names the
file, the line, the key and what was expected.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from dspark_tui.model import safe_files, shown
from dspark_tui.model.cell import CellKey, Provenance
from dspark_tui.model.errors import UserError
from dspark_tui.model.kinds import DEFAULT_KIND, KINDS, ServerKind, SpeculativeSettings, server_kind
from dspark_tui.model.naming import safe_name
from dspark_tui.model.numbers import MAX_DEPTH, check_scalars, too_deep
from dspark_tui.model.secrets import mask_value, secret_values
from dspark_tui.model.slo import Slo
from dspark_tui.model.statistics import (
    DEFAULT_ALPHA,
    DEFAULT_TIE_BAND,
    SessionNoisePrior,
    StatisticsSettings,
)
from dspark_tui.model.toml_location import line_of
from dspark_tui.model.traffic import TrafficMix

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
BUILTIN_VARS = ("model", "port", "host", "served_model_name", "arm", "python")
# `"{speculative}"`, a whole argument of server.command: the arm's `[arms.speculative]` table as
# the server kind spells it (`--speculative-config '<json>'` for vLLM), or nothing for K = 0 or
# an arm without one.
SPECULATIVE = "speculative"
SPECULATIVE_ARG = "{speculative}"
# The arm variable a `{speculative}` plan compares: the table's K (0 for an arm without one).
SPECULATIVE_K_VAR = "num_speculative_tokens"

Scalar = str | int | float | bool
# Where prompts come from (README, "Datasets"): `random-ids` draws token ids (no text, no file);
# `random` and `sharegpt` read a ShareGPT JSON file as sglang.bench_serving does; `jsonl` reads
# one prompt a line (the shipped prompts file when no dataset_path is given).
Dataset = Literal["random-ids", "random", "sharegpt", "jsonl"]
# Arm, scenario and plan names become parts of file names (cells/{arm}/{scenario}__c8__r2p1.json,
# {name}_{stamp}/, the atomic writer's temporary names); at this length the longest of them stays
# far below the 255 bytes a file name may have (tests/test_name_limits.py measures it).
MAX_NAME_LEN = 100
# The plan's name, shorter: a verification plan is `{name}_verify`, and must pass this check too.
MAX_PLAN_NAME_LEN = 80
DEFAULT_LOG_MAX_BYTES = 2 << 20  # server.log_max_bytes: 2 MiB a session's server log


def _no_control(value: str) -> str:
    """A name or label is printed to terminals and written into Markdown, SVG and file names: a
    control character in it (ESC, NUL, a newline, a bidi override) is a mistake or an attack."""
    found = shown.first_control(value)
    if found is not None:
        raise ValueError(f"control characters are not allowed (found {found})")
    return value


# A string shown to people: names, labels, the model (model/shown.py escapes what files say).
Shown = Annotated[str, AfterValidator(_no_control)]


class PlanError(UserError):
    """A plan that cannot be used; the message is one line."""


class _Strict(BaseModel):
    # strict: TOML has real numbers and booleans, so `input_len = "128"` is a mistake to name,
    # not a string to convert.
    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_in_range(cls, value: Any) -> Any:
        """10**400 is a valid TOML integer; a float of it raises far from the plan (numbers.py)."""
        return check_scalars(value)


class NumPromptsRule(_Strict):
    """`per_concurrency * c`, clamped to [min, max]: enough requests to fill the batch a few times."""

    per_concurrency: int = Field(gt=0)
    min: int = Field(default=1, gt=0)
    max: int | None = Field(default=None, gt=0)

    def for_concurrency(self, concurrency: int) -> int:
        n = max(self.min, self.per_concurrency * concurrency)
        return min(n, self.max) if self.max is not None else n


class SlurmOptions(_Strict):
    """`[server.slurm]`: how `srun` asks for the server's node (docs/launchers.md)."""

    partition: str | None = None
    gres: str | None = None  # e.g. "gpu:8"
    time: str | None = None  # Slurm's time limit syntax, e.g. "04:00:00"
    account: str | None = None
    extra_args: list[str] = Field(default_factory=list)  # more srun options, before the command


class KubernetesOptions(_Strict):
    """`[server.kubernetes]`: the pod that serves an arm (docs/launchers.md)."""

    image: str = "vllm/vllm-openai:latest"
    namespace: str = "default"
    gpus: int = Field(default=1, ge=0)
    # A template of your own (Pod + Service, `{placeholders}` as in the shipped one);
    # a relative path is read from the directory the run starts in.
    manifest: str | None = None
    context: str | None = None  # kubectl's --context; None: the current one


class ServerConfig(_Strict):
    # Which serving engine (model/kinds/): its metrics, readiness and speculative flags.
    kind: str = DEFAULT_KIND
    # Empty only when every arm gives a `url`: a server that something else runs.
    command: list[str] = Field(default_factory=list)
    # Who starts the server: a local process (default), a Slurm job step, a Kubernetes pod.
    launcher: Literal["local", "slurm", "kubernetes"] = "local"
    slurm: SlurmOptions = Field(default_factory=SlurmOptions)
    kubernetes: KubernetesOptions = Field(default_factory=KubernetesOptions)
    host: str = "127.0.0.1"
    # 0: any free port, chosen when the run starts (the demo plan uses it, so demos never clash).
    port: int = Field(default=8000, ge=0, lt=65536)
    # Set by the engine when it replaced `port = 0` with a free port (engine/servers/ports.py):
    # the run's snapshot then says the port was picked, not chosen, and the suggested serve
    # command leaves `--port {port}` out. Not for plans to set; absent in older snapshots.
    port_picked: bool = False
    startup_timeout_s: float = Field(default=1800, gt=0)
    stop_timeout_s: float = Field(default=30, gt=0)
    # A serving server whose token counters stay frozen this long while a cell has requests
    # in flight is declared stalled (its /health may still say 200).
    stall_timeout_s: float = Field(default=120, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    served_model_name: Shown | None = None
    # Whether the command is given `--served-model-name dspark-session-<token>` at its end, so
    # the server proves it is this session's by name (engine/servers/identity.py). None: only a
    # command known to take it (vllm serve, the simulator); true: a container or wrapper whose
    # arguments reach vllm serve (its port is held by the runtime's proxy, outside the tree).
    session_name: bool | None = None
    # A session's server log is cut past this size: its start and its latest output are kept,
    # the cut is said in the log (engine/servers/log_relay.py); the disk budget counts it per session.
    log_max_bytes: int = Field(default=DEFAULT_LOG_MAX_BYTES, ge=65536, le=1 << 40)
    # The CPU ids the started server's whole process tree may use (its children inherit them);
    # the runner and its client keep to the CPUs this process may use minus these
    # (model/cpus.py, engine/servers/cpus.py). None: no pinning, the operating system places.
    cpus: list[int] | None = Field(default=None, min_length=1, max_length=4096)

    @field_validator("cpus")
    @classmethod
    def _cpu_ids(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if any(cpu < 0 for cpu in value):
            raise ValueError(f"CPU ids are 0 or more (as in /proc/cpuinfo and taskset -c), got "
                             f"{min(value)}")
        if len(set(value)) != len(value):
            raise ValueError("a CPU id repeats")
        return sorted(value)

    @model_serializer(mode="wrap")
    def _without_unused_launchers(self, handler: Any) -> Any:
        """A local plan snapshots as it did before launchers existed; a remote one keeps only
        its own launcher's table (and log_max_bytes only when it is not the default)."""
        data = handler(self)
        if isinstance(data, dict):
            if self.log_max_bytes == DEFAULT_LOG_MAX_BYTES:
                data.pop("log_max_bytes", None)
            if self.kind == DEFAULT_KIND:
                data.pop("kind", None)
            if self.session_name is None:
                data.pop("session_name", None)
            if not self.port_picked:
                data.pop("port_picked", None)
            if self.cpus is None:
                data.pop("cpus", None)
            if self.launcher == "local":
                data.pop("launcher", None)
            for name in ("slurm", "kubernetes"):
                if name != self.launcher:
                    data.pop(name, None)
        return data

    @field_validator("port_picked")
    @classmethod
    def _picked_by_the_run(cls, value: bool, info: ValidationInfo) -> bool:
        if value and (info.context or {}).get("plan_file"):
            raise ValueError("is recorded by a run whose port = 0 picked a free port; "
                             "a plan sets port")
        return value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"unknown server kind {value!r} (known: {', '.join(sorted(KINDS))})")
        return value


class Arm(_Strict):
    name: Shown = Field(min_length=1, max_length=MAX_NAME_LEN)
    vars: dict[str, Scalar] = Field(default_factory=dict)
    description: str = ""
    # A server that something else runs (docs/external.md): the tool checks and measures it,
    # never starts or stops it. None: the arm's server is started from server.command.
    url: str | None = None
    # `[arms.speculative]`: method, K and the method's keys, given to the server where the
    # command says `"{speculative}"`. None: no speculation (K = 0).
    speculative: SpeculativeSettings | None = None
    # Only these cells of the grid, per scenario (`cells = {chat = [8, 9]}`): the arm measures
    # nothing else, and a cell it leaves out is "not planned", never "not run" (a verify run's
    # neighbouring fixed-K arms, engine/run/verify.py). None: every cell of the grid.
    cells: dict[str, list[int]] | None = None

    @field_validator("cells")
    @classmethod
    def _some_cells(cls, value: dict[str, list[int]] | None) -> dict[str, list[int]] | None:
        if value is None:
            return None
        if not value or not all(value.values()):
            raise ValueError("cells lists no concurrency; leave the key out to measure every cell")
        return {name: sorted(set(concurrencies)) for name, concurrencies in value.items()}

    def plans(self, scenario: str, concurrency: int) -> bool:
        """Whether the arm measures the grid's cell (scenario, concurrency)."""
        return self.cells is None or concurrency in self.cells.get(scenario, ())

    @field_validator("url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else endpoint_url(value)

    @model_serializer(mode="wrap")
    def _without_absent_url(self, handler: Any) -> Any:
        """An arm the tool starts snapshots as it did before the key existed."""
        data = handler(self)
        if isinstance(data, dict) and data.get("url", 0) is None:
            del data["url"]
        if isinstance(data, dict) and data.get("speculative", 0) is None:
            del data["speculative"]
        if isinstance(data, dict) and data.get("cells", 0) is None:
            del data["cells"]
        return data

    @property
    def dirname(self) -> str:
        return safe_name(self.name)


def endpoint_url(value: str) -> str:
    """An arm's url as the clients use it: http(s)://host[:port][/prefix], no trailing slash.
    Credentials have their own key (bench.api_key), so a url never carries one to run.json."""
    parts = urllib.parse.urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} is not an http:// or https:// address of a server "
                         "(e.g. \"http://10.0.0.5:8000\")")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        raise ValueError(f"{value!r} has an invalid port") from None
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ValueError(f"{mask_value(value)!r}: give the server's address only; an API key goes in "
                         "bench.api_key (or DSPARK_API_KEY), never in the url")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        raise ValueError(f"{value!r}: give the server's root, without /v1 (the clients add it)")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class BenchConfig(_Strict):
    driver: Literal["native", "sglang", "vllm"] = "native"
    warmup_requests: int = Field(default=100, ge=0)
    range_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    cell_timeout_s: float = Field(default=1800, gt=0)
    seed: int = 1
    python: str = "python"
    vllm_executable: str = "vllm"
    extra_args: list[str] = Field(default_factory=list)
    scrape_interval_s: float = Field(default=1.0, gt=0)
    api_key: str | None = None
    # The native client keeps every inter-token latency (compressed, beside its raw file) only
    # when asked: a decode-heavy cell has a million of them (results/native_raw.py).
    keep_itl: bool = False
    # The prompts (overridable per scenario); text datasets are prepared once per run.
    dataset: Dataset = "random-ids"
    dataset_path: str | None = Field(default=None, min_length=1)
    # Deciding under noise (docs/statistics.md). A round is one server session per arm, run in
    # alternating arm order; a repeat is one pass over the arm's cells within a session.
    repeats: int = Field(default=1, ge=1, le=20)
    rounds: int = Field(default=2, ge=1, le=20)
    # Up to this many planned rounds at once, each on a cluster node of its own running every
    # arm of the round in turn (a Slurm or Kubernetes launcher; docs/launchers.md). Adaptive
    # rounds still run one at a time: each is decided by a look at everything before it.
    parallel: int = Field(default=1, ge=1, le=20)
    # Extra rounds the runner may add, only for the cells still unsure after the planned ones:
    # no cell is measured in more than rounds + adaptive_rounds sessions per arm.
    adaptive_rounds: int = Field(default=2, ge=0, le=20)
    tie_band: float = Field(default=DEFAULT_TIE_BAND, gt=0.0, lt=0.5)
    alpha: float = Field(default=DEFAULT_ALPHA, gt=0.0, lt=0.5)
    # The box's session-to-session noise learned elsewhere (an A-vs-A run, earlier runs):
    # a stated prior with its degrees of freedom; None = this run's rounds alone.
    session_noise_prior: SessionNoisePrior | None = None
    # Greedy equivalence (docs/greedy.md): after warmup each session answers this many fixed
    # prompts at temperature 0, twice; the arms' answers are compared. 0: no check.
    check_greedy: int = Field(default=0, ge=0, le=256)

    @model_serializer(mode="wrap")
    def _without_serial_rounds(self, handler: Any) -> Any:
        """A plan that runs its rounds one at a time snapshots as it did before `parallel`."""
        data = handler(self)
        if isinstance(data, dict) and data.get("parallel") == 1:
            del data["parallel"]
        return data


class Scenario(_Strict):
    name: Shown = Field(min_length=1, max_length=MAX_NAME_LEN)
    input_len: int = Field(gt=0)
    output_len: int = Field(gt=0)
    range_ratio: float | None = Field(default=None, ge=0.0, le=1.0)
    concurrencies: list[int] = Field(min_length=1)
    num_prompts: int | list[int] | NumPromptsRule = 32
    # None: the plan's [bench] dataset and dataset_path.
    dataset: Dataset | None = None
    dataset_path: str | None = Field(default=None, min_length=1)
    # A category-pure cell: only this category's lines of a jsonl prompt file (no dataset given:
    # `jsonl`, see dataset_of; README, Per category); None: any prompt.
    category: Shown | None = Field(default=None, min_length=1, max_length=MAX_NAME_LEN)

    @model_serializer(mode="wrap")
    def _without_absent_category(self, handler: Any) -> Any:
        """A scenario without a category snapshots as it did before the key existed."""
        data = handler(self)
        if isinstance(data, dict) and data.get("category", "") is None:
            del data["category"]
        return data

    @field_validator("concurrencies")
    @classmethod
    def _positive_unique(cls, value: list[int]) -> list[int]:
        if any(c <= 0 for c in value):
            raise ValueError("every concurrency must be a positive integer")
        if len(set(value)) != len(value):
            raise ValueError("concurrencies repeat a value")
        return value

    @field_validator("num_prompts")
    @classmethod
    def _prompts_fit(cls, counts: int | list[int] | NumPromptsRule,
                     info: ValidationInfo) -> int | list[int] | NumPromptsRule:
        """A field validator, so that the error points at the `num_prompts` line."""
        if isinstance(counts, int) and counts <= 0:
            raise ValueError("must be ≥ 1")
        if isinstance(counts, list):
            concurrencies = info.data.get("concurrencies")
            if concurrencies is not None and len(counts) != len(concurrencies):
                raise ValueError(
                    f"lists {len(counts)} counts for {len(concurrencies)} concurrencies"
                )
            if any(n <= 0 for n in counts):
                raise ValueError("every count must be ≥ 1")
        return counts

    def prompts_for(self, concurrency: int) -> int:
        counts = self.num_prompts
        if isinstance(counts, int):
            return counts
        if isinstance(counts, list):
            return counts[self.concurrencies.index(concurrency)]
        return counts.for_concurrency(concurrency)


class CellSpec(BaseModel):
    """Everything needed to run one cell, resolved from the plan."""

    model_config = ConfigDict(frozen=True)

    key: CellKey
    input_len: int
    output_len: int
    range_ratio: float
    num_prompts: int
    category: str | None = None
    dataset: Dataset = "random-ids"
    dataset_path: str | None = None  # None with `jsonl`: the shipped prompts file

    def provenance(self, driver: str, **fields: Any) -> Provenance:
        """Provenance that records this cell's workload shape, plus whatever the caller knows."""
        return Provenance(driver=driver, input_len=self.input_len, output_len=self.output_len,
                          range_ratio=self.range_ratio, num_prompts=self.num_prompts, **fields)


class Plan(_Strict):
    name: str = Field(min_length=1, max_length=MAX_PLAN_NAME_LEN, pattern=r"^[A-Za-z0-9._-]+$")
    model: Shown = Field(min_length=1)
    backend_label: Shown = ""
    description: str = ""
    # Optional when every arm gives a url: nothing to start.
    server: ServerConfig = Field(default_factory=ServerConfig)
    arms: list[Arm] = Field(min_length=1)
    bench: BenchConfig = Field(default_factory=BenchConfig)
    scenarios: list[Scenario] = Field(min_length=1)
    # The user's traffic (docs/decision.md); None: equal weights, and the report says so.
    traffic: TrafficMix | None = None
    # The latency a service must keep (model/slo.py, docs/decision.md); None: throughput alone.
    slo: Slo | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_snapshot(cls, data: Any, info: ValidationInfo) -> Any:
        """run.json snapshots written before datasets existed carry `"dataset": "random"` on every
        scenario and no `bench.dataset`: those runs used `random-ids`. A plan file is never read
        this way (parse_plan says so), so a plan that asks for `random` gets it or an error."""
        if (info.context or {}).get("plan_file") or not isinstance(data, dict):
            return data
        bench, scenarios = data.get("bench"), data.get("scenarios")
        if not isinstance(bench, dict) or "dataset" in bench or not isinstance(scenarios, list):
            return data
        if any(isinstance(s, dict) and s.get("dataset_path") for s in scenarios):
            return data
        legacy = [{k: v for k, v in s.items() if k != "dataset"}
                  if isinstance(s, dict) and s.get("dataset") == "random" else s for s in scenarios]
        return {**data, "scenarios": legacy}

    @model_validator(mode="after")
    def _consistent(self) -> Plan:
        if self.traffic is not None and (unknown := self.traffic.unknown_scenarios(
                [s.name for s in self.scenarios])):
            raise ValueError(f"traffic.scenarios names {unknown[0]!r}, which is no scenario of the plan")
        if self.bench.driver != "native" and (pure := [s.name for s in self.scenarios if s.category]):
            raise ValueError(f"scenario {pure[0]!r} sets a category: category-pure cells need "
                             "bench.driver = \"native\"")
        if self.slo is not None:
            names = [s.name for s in self.scenarios]
            for name in self.slo.scenarios:
                if name not in names:
                    raise KeyedValueError(("slo", "scenarios", name), f"slo.scenarios names "
                                          f"{name!r}, which is no scenario of the plan")
        _unique("arms", [a.name for a in self.arms])
        _unique("arms (as directory names)", [a.dirname for a in self.arms])
        _unique("scenarios", [s.name for s in self.scenarios])
        _unique("scenarios (as file names)", [safe_name(s.name) for s in self.scenarios])
        started = self.local_arms()
        if started and not self.server.command:
            raise ValueError(f"server.command is required: arm {started[0].name!r} gives no url, "
                             "so the tool starts its server")
        _check_speculative(self)
        _check_arm_cells(self)
        for arm in started:
            missing = sorted(self.placeholders() - set(arm.vars) - set(BUILTIN_VARS) - {SPECULATIVE})
            if missing:
                raise ValueError(
                    f"server.command uses {{{missing[0]}}} but arm {arm.name!r} sets no "
                    f"vars.{missing[0]}"
                )
        for index, scenario in enumerate(self.scenarios):
            _check_dataset(self.bench, scenario, index)
        _check_parallel(self)
        _check_cpus(self)
        return self

    def dataset_of(self, scenario: Scenario) -> tuple[Dataset, str | None]:
        """The scenario's dataset and file: its own keys, else the plan's [bench] ones."""
        return dataset_of(self.bench, scenario)

    @model_serializer(mode="wrap")
    def _without_absent_traffic(self, handler: Any) -> Any:
        """A plan without [traffic] snapshots as it did before the table existed."""
        data = handler(self)
        if isinstance(data, dict) and "traffic" in data and data["traffic"] is None:
            del data["traffic"]
        if isinstance(data, dict) and "slo" in data and data["slo"] is None:
            del data["slo"]
        return data

    @property
    def kind(self) -> ServerKind:
        """The server kind the plan names (`[server] kind`, default vllm)."""
        return server_kind(self.server.kind)

    def uses_speculative_tables(self) -> bool:
        """True when the command takes each arm's `[arms.speculative]` through `"{speculative}"`."""
        return SPECULATIVE_ARG in self.server.command

    def speculative_args(self, arm: Arm) -> list[str]:
        """What `"{speculative}"` becomes for the arm: the kind's flag for its table, or nothing
        (K = 0, no table)."""
        return self.kind.speculative_args(None if arm.speculative is None else arm.speculative.config())

    def arm_settings(self, arm: Arm) -> dict[str, Any]:
        """The arm's variables and, in a `{speculative}` plan, its speculative table as
        `num_speculative_tokens` (0 without one) and `speculative.KEY` for the method and its
        keys of an arm that speculates: what run.json records and the runs compare."""
        settings: dict[str, Any] = dict(arm.vars)
        if not self.uses_speculative_tables() or arm.url is not None:
            return settings  # a url's server speculates as it was started: K not known
        spec = arm.speculative
        settings[SPECULATIVE_K_VAR] = 0 if spec is None else spec.k
        if spec is not None and spec.k > 0:
            for key, value in spec.config().items():
                if key != SPECULATIVE_K_VAR:
                    settings[f"{SPECULATIVE}.{key}"] = value
        return settings

    def local_arms(self) -> list[Arm]:
        """The arms whose server this tool starts (the others give a url)."""
        return [arm for arm in self.arms if arm.url is None]

    def external_arms(self) -> list[Arm]:
        return [arm for arm in self.arms if arm.url is not None]

    def statistics(self) -> StatisticsSettings:
        """The plan's statistics keys as the run states them (RunStarted, the verdicts)."""
        bench = self.bench
        return StatisticsSettings(
            tie_band=bench.tie_band, alpha=bench.alpha, rounds=bench.rounds,
            adaptive_rounds=bench.adaptive_rounds, parallel=bench.parallel,
            session_noise_prior=bench.session_noise_prior,
            external_arms=tuple(arm.name for arm in self.external_arms()))

    def placeholders(self) -> set[str]:
        return {m for part in self.server.command for m in _PLACEHOLDER.findall(part)}

    def arm(self, name: str) -> Arm:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise KeyError(name)

    def scenario(self, name: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        raise KeyError(name)

    def cells(self) -> list[CellSpec]:
        """Arm-major: the server is started once per arm, so all of an arm's cells run together."""
        return list(self._iter_cells())

    def _iter_cells(self) -> Iterator[CellSpec]:
        for arm in self.arms:
            for scenario in self.scenarios:
                ratio = self.bench.range_ratio if scenario.range_ratio is None else scenario.range_ratio
                dataset, dataset_path = self.dataset_of(scenario)
                for concurrency in scenario.concurrencies:
                    if not arm.plans(scenario.name, concurrency):
                        continue
                    yield CellSpec(
                        key=CellKey(arm=arm.name, scenario=scenario.name, concurrency=concurrency),
                        input_len=scenario.input_len,
                        output_len=scenario.output_len,
                        range_ratio=ratio,
                        num_prompts=scenario.prompts_for(concurrency),
                        category=scenario.category,
                        dataset=dataset,
                        dataset_path=dataset_path if dataset != "random-ids" else None,
                    )

    def secrets(self) -> set[str]:
        """Every secret value the plan holds (the API key, secret flags' values in each arm's
        command and bench.extra_args, secret variables and flags inside variables): what a
        server's answer may echo and must be scrubbed from before it is stored."""
        argvs = [self.server_argv(arm) for arm in self.arms if arm.url is None]
        return secret_values(argvs=[*argvs, self.bench.extra_args], env=self.server.env,
                             keys=[self.bench.api_key])

    def template_vars(self, arm: Arm) -> dict[str, str]:
        values: dict[str, str] = {
            # a folder under the home (`~/…`) reaches the server as a path it can open
            "model": os.path.expanduser(self.model) if self.model.startswith("~") else self.model,
            "port": str(self.server.port),
            "host": self.server.host,
            "served_model_name": self.served_model_name,
            "arm": arm.name,
            "python": sys.executable,
        }
        values.update({k: _scalar_text(v) for k, v in arm.vars.items()})
        return values

    def server_argv(self, arm: Arm) -> list[str]:
        """The arm's server command; `{name}` placeholders only, so JSON braces pass through.
        Empty for an arm with a url: nothing is started for it."""
        if arm.url is not None:
            return []
        values = self.template_vars(arm)
        argv: list[str] = []
        for part in self.server.command:
            if part == SPECULATIVE_ARG:
                argv += self.speculative_args(arm)
            else:
                argv.append(_PLACEHOLDER.sub(lambda m: values[m.group(1)], part))
        return argv

    @property
    def served_model_name(self) -> str:
        return self.server.served_model_name or self.model

    def compared_vars(self) -> list[str]:
        """Arm variables whose values differ between arms: what the run compares."""
        settings = [self.arm_settings(arm) for arm in self.arms]
        names: list[str] = []
        for arm_settings in settings:
            for name in arm_settings:
                # A method and its keys count among the arms that speculate: K = 0 has none.
                among = ([s for s in settings if s.get(SPECULATIVE_K_VAR)]
                         if name.startswith(f"{SPECULATIVE}.") else settings)
                if name not in names and len({_setting_text(s.get(name, "")) for s in among}) > 1:
                    names.append(name)
        return names

    def flag_for(self, var: str) -> str | None:
        """`--spec-tokens` for `spec_tokens` when the command reads `--spec-tokens {spec_tokens}`."""
        command = self.server.command
        for i, part in enumerate(command):
            if part == f"{{{var}}}" and i > 0 and command[i - 1].startswith("-"):
                return command[i - 1]
        return None


def _setting_text(value: Any) -> str:
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True)
    return _scalar_text(value)


def _scalar_text(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class KeyedValueError(ValueError):
    """A plan-wide check's error that knows its key, so the message can give the line too."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


def dataset_of(bench: BenchConfig, scenario: Scenario) -> tuple[Dataset, str | None]:
    """The scenario's dataset and file: its own keys, else the plan's [bench] ones. A
    category-pure scenario without its own dataset reads `jsonl` (its category's lines of the
    [bench] jsonl file, else of the shipped one), whatever [bench] draws for the others."""
    if scenario.category is not None and scenario.dataset is None and bench.dataset != "jsonl":
        return "jsonl", scenario.dataset_path
    return scenario.dataset or bench.dataset, scenario.dataset_path or bench.dataset_path


def _check_dataset(bench: BenchConfig, scenario: Scenario, index: int) -> None:
    """One line for a dataset the plan's driver cannot run or that lacks its file."""
    dataset, path = dataset_of(bench, scenario)
    name = f"scenarios[{json.dumps(scenario.name, ensure_ascii=False)}]"
    if scenario.category is not None and dataset != "jsonl":
        raise KeyedValueError(("scenarios", index, "dataset"), f"{name}.dataset: a scenario with "
                              f"a category reads a jsonl prompt file, not {dataset!r} (leave "
                              "dataset out, or set \"jsonl\")")
    where = f"{name}.dataset" if scenario.dataset else "bench.dataset"
    loc: tuple[str | int, ...] = ("scenarios", index, "dataset") if scenario.dataset else ("bench", "dataset")
    if dataset in ("random", "sharegpt") and not path:
        raise KeyedValueError(loc, f"{where}: {dataset!r} needs dataset_path, a ShareGPT JSON file "
                              "(the box is offline; README, Datasets, says how to get one)")
    if dataset == "random-ids" and scenario.dataset_path:
        raise KeyedValueError(("scenarios", index, "dataset_path"), f"{name}.dataset_path: "
                              "random-ids reads no file (set dataset too)")
    if dataset == "jsonl" and bench.driver != "native":
        raise KeyedValueError(loc, f"{where}: jsonl (prompts with categories) runs on the native "
                              f"driver only, not {bench.driver}")
    if dataset != "random-ids" and bench.driver == "vllm":
        raise KeyedValueError(loc, f"{where}: the vllm driver draws its own random prompts; "
                              f"{dataset!r} needs the native or sglang driver")


def _check_speculative(plan: Plan) -> None:
    """`"{speculative}"` is a whole argument; a table needs it, and an arm that gives a url has
    none (its server's speculation is whatever that server runs)."""
    command = plan.server.command
    for index, part in enumerate(command):
        if SPECULATIVE_ARG in part and part != SPECULATIVE_ARG:
            raise KeyedValueError(("server", "command"), f"server.command[{index}]: "
                                  f"{SPECULATIVE_ARG} must be an argument of its own (it becomes "
                                  "the speculative flag and its value, or nothing)")
    for index, arm in enumerate(plan.arms):
        name = f"arms[{json.dumps(arm.name, ensure_ascii=False)}]"
        if SPECULATIVE in arm.vars:
            raise KeyedValueError(("arms", index, "vars"), f"{name}.vars.{SPECULATIVE}: the name "
                                  "is the speculative table's placeholder; give the settings as "
                                  "[arms.speculative]")
        if arm.speculative is None:
            continue
        if arm.url is not None:
            raise KeyedValueError(("arms", index, "speculative"), f"{name}.speculative: the arm "
                                  "gives a url; its server speculates as it was started")
        if plan.server.command and not plan.uses_speculative_tables():
            raise KeyedValueError(("arms", index, "speculative"), f"{name}.speculative: "
                                  f"server.command has no \"{SPECULATIVE_ARG}\" argument to put "
                                  "it in")


def _check_arm_cells(plan: Plan) -> None:
    """An arm's `cells` name only the plan's scenarios and their concurrencies."""
    grid = {s.name: s.concurrencies for s in plan.scenarios}
    for arm in plan.arms:
        for name, concurrencies in (arm.cells or {}).items():
            if name not in grid:
                raise ValueError(f"arm {arm.name!r}: cells names {name!r}, which is no scenario "
                                 f"of the plan")
            if extra := [c for c in concurrencies if c not in grid[name]]:
                raise ValueError(f"arm {arm.name!r}: cells.{name} lists concurrency {extra[0]}, "
                                 f"which is not in scenario {name!r}'s concurrencies")


def _check_parallel(plan: Plan) -> None:
    """Rounds in parallel need a node each: a launcher that places servers on a cluster, arms it
    starts, and no more nodes than rounds."""
    parallel = plan.bench.parallel
    if parallel == 1:
        return
    loc = ("bench", "parallel")
    if plan.server.launcher == "local":
        raise KeyedValueError(loc, f"bench.parallel = {parallel}: rounds in parallel run on nodes "
                              "of their own; set server.launcher = \"slurm\" or \"kubernetes\" "
                              "(one box runs one round at a time)")
    if external := plan.external_arms():
        raise KeyedValueError(loc, f"bench.parallel = {parallel}: arm {external[0].name!r} gives a "
                              "url, one server that cannot be on every round's node")
    if parallel > plan.bench.rounds:
        raise KeyedValueError(loc, f"bench.parallel = {parallel} exceeds bench.rounds = "
                              f"{plan.bench.rounds}: each round runs on one node")


def _check_cpus(plan: Plan) -> None:
    """`server.cpus` pins processes this machine starts: a cluster launcher's server runs on a
    node (ask the cluster for its CPUs), a url's is someone else's. Whether the ids exist here
    is the run's check (engine/servers/cpus.py): a plan file is not tied to one machine."""
    if plan.server.cpus is None:
        return
    loc = ("server", "cpus")
    if plan.server.launcher != "local":
        how = ("srun's --cpu-bind in [server.slurm] extra_args" if plan.server.launcher == "slurm"
               else "the pod's resources in the manifest")
        raise KeyedValueError(loc, f"server.cpus pins a server started on this machine; with "
                              f"server.launcher = {plan.server.launcher!r} it runs on a node: "
                              f"ask the cluster instead ({how})")
    if not plan.local_arms():
        raise KeyedValueError(loc, "server.cpus pins the servers this tool starts, but every arm "
                              "gives a url")


def _unique(what: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what}: the name {name!r} is used twice")
        seen.add(name)


def load_plan(path: str | Path) -> Plan:
    path = Path(path)
    try:  # never a FIFO's wait
        text = safe_files.read_named_text(path, safe_files.PLAN_CAP, "plan")
    except safe_files.Unreadable as exc:
        raise PlanError(str(exc)) from None
    return parse_plan(text, str(path))


def parse_plan(text: str, source: str = "<plan>") -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # thousands of `[`: the parser gave up
        data = None
    if data is None or too_deep(data):
        raise PlanError(f"{source}: not a plan: arrays or tables nested deeper than {MAX_DEPTH} "
                        "levels")
    try:
        return Plan.model_validate(data, context={"plan_file": True})
    except ValidationError as exc:
        raise PlanError(_describe(exc, text, source, data)) from None


def _describe(exc: ValidationError, text: str, source: str, data: Any = None) -> str:
    """Every problem as `file:line: key: message`, one a line (the CLI prints each as its own
    error line).

    pydantic reports a wrong value once per member of a union (`int`, `list[int]`, a table);
    those count as one problem, the first member's."""
    by_key: dict[str, Any] = {}
    for error in exc.errors(include_url=False):
        by_key.setdefault(_readable_loc(error["loc"], data), error)
    lines = []
    for loc, error in by_key.items():
        keyed = (error.get("ctx") or {}).get("error")
        line = line_of(text, keyed.loc if isinstance(keyed, KeyedValueError) else error["loc"])
        where = f"{source}:{line}" if line else source
        key = f"{loc}: " if loc else ""
        lines.append(f"{where}: {key}{_readable_message(error)}")
    return "\n".join(lines)


def _readable_loc(loc: tuple[Any, ...], data: Any = None) -> str:
    """`scenarios["chat_short"].num_prompts`: an entry of arms or scenarios by the name the user
    gave it (its index when it has none), a member of a union never."""
    parts: list[str] = []
    node = data
    for item in loc:
        if isinstance(item, int):
            node = node[item] if isinstance(node, list) and 0 <= item < len(node) else None
            name = node.get("name") if isinstance(node, dict) else None
            parts.append(f"[{shown.plain(json.dumps(_shortened(name), ensure_ascii=False))}]"
                         if isinstance(name, str) and name else f"[{item}]")
        elif _is_union_branch(item):
            continue
        else:
            node = node.get(item) if isinstance(node, dict) else None
            parts.append(("." if parts else "") + str(item))
    return "".join(parts)


def _shortened(name: str, limit: int = 32) -> str:
    """A name as a key shows it: a 300-character one must not fill the error line."""
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _is_union_branch(item: Any) -> bool:
    """pydantic names the union member it tried (`int`, `NumPromptsRule`); users never wrote it."""
    return item in ("int", "list[int]", "NumPromptsRule", "str", "float", "bool") or (
        isinstance(item, str) and item.startswith(("function-", "union[", "is-instance"))
    )


def _readable_message(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key (check its spelling; see `dspark-tui plan show demo`)"
    if kind == "missing":
        return "required key is missing"
    msg = str(error["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if kind in ("int_type", "int_parsing", "float_type", "float_parsing", "string_type", "bool_type",
                "list_type", "dict_type", "model_type", "literal_error", "int_from_float"):
        msg = f"{msg}, got {error.get('input')!r}"
        if kind in ("int_type", "float_type", "bool_type") and isinstance(error.get("input"), str):
            msg += " (write numbers and true/false without quotes)"
    if kind == "string_too_long":
        msg += " (names become file names)"
    return msg
