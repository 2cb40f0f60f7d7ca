"""The plan of a run being resumed, with the secrets run.json never keeps put back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dspark_tui.model import Plan, UserError
from dspark_tui.model.secrets import REDACTED, is_masked
from dspark_tui.results import RunStore

# Set (to "stdin") by the launcher: the whole plan follows on the runner's stdin. The plan
# itself never goes into the environment, which /proc/PID/environ shows for the process's life.
RUNNER_PLAN_VAR = "DSPARK_RUNNER_PLAN"
PLAN_ON_STDIN = "stdin"


def plan_of_run(store: RunStore) -> Plan:
    """The plan a run was started with. run.json keeps it with secrets masked; the launcher hands
    its runner the whole plan on stdin (RUNNER_PLAN_VAR says so), and a later resume takes each
    masked secret from the environment (DSPARK_API_KEY for bench.api_key, the variable's own
    name for server.env), so no key is ever written to the run directory."""
    manifest = store.read_manifest()
    snapshot = dict(manifest.plan)
    if not snapshot:
        raise UserError(f"{store.manifest_path}: holds no plan snapshot; cannot resume this run")
    handed = handed_plan()
    if handed is not None and handed.name == snapshot.get("name"):
        return handed
    snapshot = _with_secrets_from_environment(snapshot, store.manifest_path)
    try:
        return Plan.model_validate(snapshot)
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise UserError(f"{store.manifest_path}: its plan snapshot is not valid ({first})") from None


def handed_plan() -> Plan | None:
    """The plan the launcher wrote to our stdin, if it said it would (read once, to EOF)."""
    if os.environ.pop(RUNNER_PLAN_VAR, None) != PLAN_ON_STDIN:  # not for the servers we start
        return None
    try:
        text = sys.stdin.buffer.read()
    except (OSError, ValueError, AttributeError):
        return None
    if not text.strip():
        return None  # the launcher died before writing: the snapshot and the environment serve
    return Plan.model_validate_json(text)


def _with_secrets_from_environment(snapshot: dict, where: Path) -> dict:
    bench = dict(snapshot.get("bench") or {})
    if bench.get("api_key") == REDACTED:
        bench["api_key"] = os.environ.get("DSPARK_API_KEY") or None
    if any(is_masked(str(part)) for part in bench.get("extra_args", [])):
        raise UserError(f"{where}: bench.extra_args held a secret run.json does not keep; give "
                        "the key as bench.api_key (DSPARK_API_KEY on resume) to make runs "
                        "resumable")
    snapshot["bench"] = bench
    server = dict(snapshot.get("server") or {})
    env = dict(server.get("env") or {})
    for name, value in env.items():
        if is_masked(str(value)):
            if name not in os.environ:
                raise UserError(f"{where}: server.env.{name} is a secret run.json does not keep; "
                                f"export {name} to resume this run")
            env[name] = os.environ[name]
    server["env"] = env
    if any(is_masked(str(part)) for part in server.get("command", [])):
        raise UserError(f"{where}: the server command held a secret run.json does not keep; "
                        "pass it through server.env (e.g. VLLM_API_KEY) to make runs resumable")
    snapshot["server"] = server
    return snapshot
