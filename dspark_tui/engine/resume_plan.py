"""The plan of a run being resumed, with the secrets run.json never keeps put back."""

from __future__ import annotations

import os
from pathlib import Path

from dspark_tui.model import Plan, UserError
from dspark_tui.model.secrets import REDACTED
from dspark_tui.results import RunStore

RUNNER_PLAN_VAR = "DSPARK_RUNNER_PLAN"


def plan_of_run(store: RunStore) -> Plan:
    """The plan a run was started with. run.json keeps it with secrets masked; the launcher hands
    its runner the whole plan in RUNNER_PLAN_VAR, and a later resume takes each masked secret
    from the environment (DSPARK_API_KEY for bench.api_key, the variable's own name for
    server.env), so no key is ever written to the run directory."""
    manifest = store.read_manifest()
    snapshot = dict(manifest.plan)
    if not snapshot:
        raise UserError(f"{store.manifest_path}: holds no plan snapshot; cannot resume this run")
    handed = os.environ.pop(RUNNER_PLAN_VAR, None)  # not for the server processes it starts
    if handed:
        plan = Plan.model_validate_json(handed)
        if plan.name == snapshot.get("name"):
            return plan
    snapshot = _with_secrets_from_environment(snapshot, store.manifest_path)
    try:
        return Plan.model_validate(snapshot)
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise UserError(f"{store.manifest_path}: its plan snapshot is not valid ({first})") from None


def _with_secrets_from_environment(snapshot: dict, where: Path) -> dict:
    bench = dict(snapshot.get("bench") or {})
    if bench.get("api_key") == REDACTED:
        bench["api_key"] = os.environ.get("DSPARK_API_KEY") or None
        snapshot["bench"] = bench
    server = dict(snapshot.get("server") or {})
    env = dict(server.get("env") or {})
    for name, value in env.items():
        if value == REDACTED:
            if name not in os.environ:
                raise UserError(f"{where}: server.env.{name} is a secret run.json does not keep; "
                                f"export {name} to resume this run")
            env[name] = os.environ[name]
    server["env"] = env
    if REDACTED in server.get("command", []) or any(
            str(part).endswith("=" + REDACTED) for part in server.get("command", [])):
        raise UserError(f"{where}: the server command held a secret run.json does not keep; "
                        "pass it through server.env (e.g. VLLM_API_KEY) to make runs resumable")
    snapshot["server"] = server
    return snapshot
