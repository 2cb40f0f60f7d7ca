"""run.json: the plan snapshot and the facts a report header needs."""

from __future__ import annotations

import datetime as dt
import platform
import socket
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from dspark_tui import __version__
from dspark_tui.model import Plan
from dspark_tui.model.secrets import REDACTED, redact_env, scrub_argv, secret_values

MANIFEST_SCHEMA_VERSION = 2  # 2: several measurements a cell (one file each), cells_ok

CLIENT_LABELS = {
    "sglang": "sglang.bench_serving --backend vllm",
    "vllm": "vllm bench serve",
    "native": "dspark-tui native client (aiohttp, one connection pool per cell)",
}


class ArmInfo(BaseModel):
    name: str
    # The arm's variables; in a plan whose command says "{speculative}", also its speculative
    # table as `num_speculative_tokens` and `speculative.KEY` (Plan.arm_settings).
    vars: dict[str, Any] = Field(default_factory=dict)
    # An arm whose server something else runs (plan `url`): what that server said about itself
    # when the run first measured it — {"url", "version", "info": {family: {label: value}}}
    # (engine/servers/external_server.py), secrets masked. None for a server this tool starts.
    external_server: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_absent_server(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("external_server", 0) is None:
            del data["external_server"]
        return data


class ComparedParameter(BaseModel):
    var: str
    flag: str | None = None
    values: list[str] = Field(default_factory=list)


class Verification(BaseModel):
    """What a verification run (`run PLAN --verify SWEEP_DIR`) checks: the sweep's schedule
    against its best fixed K, each as one arm (docs/decision.md, "Verifying")."""

    sweep: str  # the sweep's run directory
    sweep_name: str = ""
    schedule: list[list[int]] = Field(default_factory=list)  # [[lo, hi, K], ...]
    keyed_on: str = "running_batch"
    fixed_k: int
    schedule_arm: str
    fixed_arm: str
    # The boundary check (docs/decision.md, "At the schedule's boundaries"): concurrencies the
    # rerun added to one scenario at and between the schedule's boundaries, and every fixed-K arm
    # it ran (the best fixed K and the K on each side of a boundary), arm name -> K. Empty in
    # verification runs from before the check.
    probe_scenario: str | None = None
    probes: list[int] = Field(default_factory=list)
    fixed_arms: dict[str, int] = Field(default_factory=dict)
    # The prefill probe ("Where the batch includes prefills"): a scenario of long prompts and
    # short outputs the rerun added, its concurrencies (each boundary's hi and hi + 1) and
    # lengths. None / empty in verification runs from before it.
    prefill_scenario: str | None = None
    prefill_probes: list[int] = Field(default_factory=list)
    prefill_input_len: int | None = None
    prefill_output_len: int | None = None


class PromptSetRecord(BaseModel):
    """One prepared prompt file of the run (engine/datasets/prepare.py): where its prompts came
    from and a hash of each, so a report can say what was sent and a resume can trust it."""

    file: str | None  # prompts/{scenario}__n{count}.jsonl; None when the peer client drew them
    scenario: str
    count: int
    dataset: str
    dataset_path: str
    source_sha256: str
    seed: int
    tokenizer: str = ""
    sha256: str = ""  # of the prompt file itself
    category: str | None = None  # a category-pure scenario's: only this category's lines
    prepare_s: float | None = None


class VocabularyRecord(BaseModel):
    """The served model's vocabulary size that `random-ids` prompts are drawn from
    (engine/datasets/vocab.py), and where it was read: a resume draws the same prompts."""

    size: int
    source: str  # "tokenizer.json", "config.json", "server", "default"
    detail: str = ""  # the file, or the probes the server answered


class RunManifest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    schema_version: int = MANIFEST_SCHEMA_VERSION
    name: str
    model: str = ""
    backend_label: str = ""
    arms: list[ArmInfo] = Field(default_factory=list)
    compared: list[ComparedParameter] = Field(default_factory=list)
    scenarios: list[str] = Field(default_factory=list)
    warmup_requests: int | None = None
    driver: str = ""
    client: str = ""
    total_cells: int = 0
    # Cells whose every planned measurement is ok, written when the runner finishes, so that
    # History counts them without reading every measurement file (None: not known yet).
    cells_ok: int | None = None
    status: str = "running"
    started_at: str | None = None
    finished_at: str | None = None
    host: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    runner_pid: int | None = None
    original_dir: str | None = None
    plan_source: str | None = None
    plan: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    verification: Verification | None = None
    prompt_sets: list[PromptSetRecord] = Field(default_factory=list)
    vocabulary: VocabularyRecord | None = None

    @model_serializer(mode="wrap")
    def _without_absent_verification(self, handler: Any) -> Any:
        """A run that verifies nothing (or sends no text prompts) keeps the run.json it had
        before those fields existed."""
        data = handler(self)
        if isinstance(data, dict) and data.get("verification", 0) is None:
            del data["verification"]
        if isinstance(data, dict) and data.get("prompt_sets", 0) == []:
            del data["prompt_sets"]
        if isinstance(data, dict) and data.get("vocabulary", 0) is None:
            del data["vocabulary"]
        return data

    def arm_names(self) -> list[str]:
        return [arm.name for arm in self.arms]


def record_server_info(manifest: RunManifest, arm: str, described: dict[str, Any]) -> str | None:
    """Keep what an external arm's server said about itself the first time it was measured;
    return what changed when a later session hears something else (None: nothing new)."""
    for info in manifest.arms:
        if info.name != arm:
            continue
        known = info.external_server or {}
        if set(known) <= {"url"}:
            info.external_server = described
            return None
        changed = sorted(key for key in ("version", "info") if known.get(key) != described.get(key))
        if not changed:
            return None
        note = (f"the server at {described.get('url')} now reports a different "
                f"{' and '.join(changed)} than when this run first measured it; run.json keeps "
                "the first, the comparison may mix configurations")
        if f"{arm}: {note}" not in manifest.notes:
            manifest.notes.append(f"{arm}: {note}")
        return note
    return None


def newer_run_schema(data: object) -> str | None:
    """What to say of a run.json written by a newer dspark-tui (None: one this code reads).
    Such a file is refused whole: read half-understood, a resume would rewrite it without the
    keys it does not know."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_SCHEMA_VERSION:
        return (f"written by a newer dspark-tui (run schema {version}; this one reads up to "
                f"{MANIFEST_SCHEMA_VERSION}); upgrade to open it")
    return None


def redacted_plan_snapshot(plan: Plan) -> dict[str, Any]:
    """The plan as run.json keeps it: secrets (API key, secret-named flags and variables, URL
    passwords, in the server command, its env and bench.extra_args) masked. A resume gets them
    back from the environment (see engine.run.resume_plan.plan_of_run)."""
    snapshot = plan.model_dump(mode="json")
    if snapshot["bench"].get("api_key"):
        snapshot["bench"]["api_key"] = REDACTED
    # Known values too: a key inside `sh -c "… --api-key sk-…"` is no flag masking sees.
    known = secret_values(argvs=[plan.server.command, plan.bench.extra_args],
                          env=plan.server.env, keys=[plan.bench.api_key])
    snapshot["server"]["command"] = scrub_argv(snapshot["server"]["command"], known)
    snapshot["server"]["env"] = redact_env(snapshot["server"]["env"])
    snapshot["bench"]["extra_args"] = scrub_argv(snapshot["bench"]["extra_args"], known)
    return snapshot


def now_iso() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="seconds")


def manifest_for_plan(plan: Plan, plan_source: str | None = None,
                      verification: Verification | None = None) -> RunManifest:
    compared = [
        ComparedParameter(
            var=var,
            flag=plan.flag_for(var),
            values=[str(plan.arm_settings(arm).get(var, "")) for arm in plan.arms],
        )
        for var in plan.compared_vars()
    ]
    snapshot = redacted_plan_snapshot(plan)
    return RunManifest(
        name=plan.name,
        model=plan.model,
        backend_label=plan.backend_label,
        arms=[ArmInfo(name=a.name, vars=plan.arm_settings(a),
                      external_server=None if a.url is None else {"url": a.url})
              for a in plan.arms],
        compared=compared,
        scenarios=[s.name for s in plan.scenarios],
        warmup_requests=plan.bench.warmup_requests,
        driver=plan.bench.driver,
        client=CLIENT_LABELS.get(plan.bench.driver, plan.bench.driver),
        total_cells=len(plan.cells()),
        started_at=now_iso(),
        host=socket.gethostname(),
        versions={
            "dspark_tui": __version__,
            "python": platform.python_version(),
            "platform": sys.platform,
        },
        plan_source=plan_source,
        plan=snapshot,
        verification=verification,
    )
