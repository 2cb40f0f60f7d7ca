"""Preflight: everything a run needs that can be checked before GPU hours are spent.

A run that would fail on its first server start (binary missing, bench client not importable,
model path wrong, port taken, GPUs busy, disk full) fails here instead, before any run directory
exists, with one line per problem and every problem at once. Warnings (another live run will
share the GPUs) and notes (a check that could not be made) are said; they do not stop the run.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from dspark_tui.engine.checks import disk_budget
from dspark_tui.engine.checks.vllm_cpu import is_vllm_cpu_plan
from dspark_tui.engine.checks.vllm_cpu import plan_problems as vllm_cpu_problems
from dspark_tui.engine.rundir.liveness import LiveRun, live_runs, orphan_server_on_port, run_holding_port
from dspark_tui.engine.servers.auth import bearer_headers
from dspark_tui.engine.servers.cpus import plan_split
from dspark_tui.engine.servers.gpu import GpuDevice, detect_gpu
from dspark_tui.engine.servers.launchers import launcher_problems
from dspark_tui.engine.servers.ports import describe_taken_port, port_is_free
from dspark_tui.engine.servers.server_record import read_record
from dspark_tui.engine.servers.tls import verifying_context
from dspark_tui.model import Plan, UserError
from dspark_tui.model.cpus import OMP_BIND_VAR, OMP_BIND_WORDS, cpu_list, omp_bind_cpus
from dspark_tui.model.kinds import ServerKind
from dspark_tui.model.secrets import secret_values
from dspark_tui.results import RunStore

if TYPE_CHECKING:
    import httpx  # imported where an endpoint is probed: ~0.2 s that most runs never use

SIMULATOR_MODULE = "dspark_tui.sim"
IMPORT_TIMEOUT_S = 60.0  # sglang's import pulls in transformers: seconds on a cold disk
BUSY_MEMORY_MIB = 1024.0  # an idle GPU holds a few MiB; a loaded model holds tens of GiB
_BENCH_MODULES = {"sglang": "sglang.bench_serving"}


@dataclass(frozen=True)
class Problem:
    """Stops the run: it would fail anyway, after the server start and warmup it would cost."""

    check: str
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Note:
    """Said and the run goes on: a warning (something may spoil it) or a check not made."""

    check: str
    message: str
    warning: bool = False

    def __str__(self) -> str:
        return self.message


Finding = Problem | Note


@dataclass
class Preflight:
    problems: list[Problem] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)

    @property
    def warnings(self) -> list[Note]:
        return [note for note in self.notes if note.warning]

    def add(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            (self.problems if isinstance(finding, Problem) else self.notes).append(finding)  # type: ignore[arg-type]


class PreflightFailed(UserError):
    """Every problem found, one a line; str() is the whole message, as for any UserError."""

    def __init__(self, result: Preflight) -> None:
        self.result = result
        super().__init__("\n".join(p.message for p in result.problems))


def preflight(plan: Plan, roots: Iterable[Path], exclude: Path | None = None, *,
              results_root: Path | None = None, source: str | None = None) -> Preflight:
    """Run every check; raise PreflightFailed naming all the problems, else return the notes.
    `exclude` is the run being resumed (its own directory is no rival); without `results_root`
    the disk is not checked; `source`, the plan's file, is named where a problem is a key's."""
    result = check_plan(plan, roots, exclude=exclude, results_root=results_root, source=source)
    if result.problems:
        raise PreflightFailed(result)
    return result


def check_plan(plan: Plan, roots: Iterable[Path], exclude: Path | None = None, *,
               results_root: Path | None = None, source: str | None = None) -> Preflight:
    roots = list(roots)
    result = Preflight()
    result.add(check_cpus(plan, source))
    # The server binary, the model, the port and the GPUs are checked for servers started on
    # this machine; a launched one's are on a node or in a pod, a url's are someone else's.
    here = plan.server.launcher == "local" and bool(plan.local_arms())
    if plan.server.launcher != "local":
        result.add(Problem("launcher", line) for line in launcher_problems(plan))
    if here and is_vllm_cpu_plan(plan):  # vLLM's CPU build: one line a missing piece, with its fix
        result.add(Problem("server", line) for line in vllm_cpu_problems(
            plan, server_env(plan).get("PATH", os.defpath)))
    elif here:
        result.add(check_server_binary(plan))
    result.add(check_bench_secrets(plan))
    result.add(check_bench_client(plan))
    if here and not is_vllm_cpu_plan(plan):
        result.add(check_model(plan))
    result.add(check_datasets(plan))
    if here:
        result.add(check_port(plan, roots, exclude))
        result.add(check_gpus(plan, roots, exclude))
    result.add(check_endpoints(plan))
    if results_root is not None:
        result.add(check_disk(plan, results_root))
    return result


# -- the server -------------------------------------------------------------------------------

def server_env(plan: Plan) -> dict[str, str]:
    """The environment the server starts with (engine/servers/server.py adds only its token)."""
    return {**os.environ, **plan.server.env}


def check_cpus(plan: Plan, source: str | None = None) -> list[Finding]:
    """`[server] cpus` on this machine: the platform can pin, the CPUs are this process's to
    give, and the client keeps at least one (engine/servers/cpus.py)."""
    try:
        split = plan_split(plan, source)
    except UserError as exc:
        return [Problem("cpus", str(exc))]
    # What the server gets: the plan's server.env over this shell's environment (a value set
    # in the shell reaches vLLM's worker as well)
    bind = server_env(plan).get(OMP_BIND_VAR)
    if split is None or bind is None:
        return []
    named = omp_bind_cpus(bind)
    where = f"{source}: " if source else ""
    said = (f"server.env.{OMP_BIND_VAR}" if OMP_BIND_VAR in plan.server.env
            else f"{OMP_BIND_VAR} (this shell's environment)")
    if named is None and bind.strip().lower() not in OMP_BIND_WORDS:
        # Not a list of ids nor a word vLLM knows: said, not refused (vLLM is the judge of
        # its own variable), so that the worker's binding is not left unchecked in silence
        return [Note("cpus", f"{where}{said} = {bind!r} is not a CPU list this check reads "
                     "(ids such as 0-3 or 0-3|4-7, or auto / nobind): whether vLLM's worker "
                     "stays on server.cpus is not checked", warning=True)]
    if named is not None and (outside := named - split.server):
        return [Problem("cpus", f"{where}{said} = {bind!r} binds vLLM's worker "
                        f"to CPU {cpu_list(outside)}, outside server.cpus = "
                        f"[{', '.join(map(str, sorted(split.server)))}] (a process may widen its "
                        "own affinity): name CPUs of server.cpus in both")]
    return []


def uses_simulator(plan: Plan) -> bool:
    return any(SIMULATOR_MODULE in plan.server_argv(arm) for arm in plan.local_arms())


def check_server_binary(plan: Plan) -> list[Finding]:
    search_path = server_env(plan).get("PATH", os.defpath)
    findings: list[Finding] = []
    for program in dict.fromkeys(plan.server_argv(arm)[0] for arm in plan.local_arms()):
        if shutil.which(program, path=search_path) is None:
            where = "is not an executable file" if os.sep in program else "is not on PATH"
            findings.append(Problem("server", f"server.command[0]: {program!r} {where}; install "
                                    "the server or give its full path in the plan"))
    return findings


def check_datasets(plan: Plan) -> list[Finding]:
    """Every dataset file the plan names is there (engine/datasets)."""
    from dspark_tui.engine.datasets import dataset_problems

    return [Problem("dataset", line) for line in dataset_problems(plan)]


def check_model(plan: Plan) -> list[Finding]:
    """A local model path must exist; a Hugging Face id (`org/name`) is not checked offline."""
    if uses_simulator(plan):
        return []  # the simulator loads no weights
    model = plan.model
    path = Path(model).expanduser()
    if path.exists():
        return []
    if model.startswith(("/", "~", ".")) or model.count("/") > 1:
        return [Problem("model", f"model: {model} does not exist on this machine; fix `model` "
                        "in the plan or copy the weights there")]
    return [Note("model", f"model {model!r}: taken as a Hugging Face id, not checked (offline); "
                 "the server downloads it or fails on its first start")]


# -- servers that something else runs (arms with a url) --------------------------------------

ENDPOINT_TIMEOUT_S = 5.0


def check_endpoints(plan: Plan) -> list[Finding]:
    """Each url serves: /health answers 200, /v1/models lists the plan's served model; /metrics
    not answering is only a warning (the run goes on without server evidence)."""
    findings: list[Finding] = []
    headers = bearer_headers(plan.bench.api_key)
    for url in dict.fromkeys(arm.url for arm in plan.external_arms() if arm.url):
        key = ", ".join(f'arms["{a.name}"].url' for a in plan.external_arms() if a.url == url)
        if plan.bench.driver == "sglang" and not _host_and_port_only(url):
            findings.append(Problem("endpoint", f"{key}: the sglang driver reaches a server by "
                                    "host and port only; for https or a path prefix use "
                                    'bench.driver = "native" or "vllm"'))
            continue
        import httpx

        with httpx.Client(base_url=url, headers=headers, timeout=ENDPOINT_TIMEOUT_S,
                          verify=verifying_context()) as client:
            findings += _check_endpoint(client, url, plan.served_model_name, key, plan.kind)
    return findings


def _host_and_port_only(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme == "http" and parts.path in ("", "/")


def _check_endpoint(client: httpx.Client, url: str, wanted: str, key: str,
                    kind: ServerKind) -> list[Finding]:
    health = _get(client, url, kind.readiness.health_path)
    if health != 200:
        return [Problem("endpoint", f"{key}: {health}; is the server up at that address?")]
    models = _get(client, url, "/v1/models", json=True)
    findings: list[Finding] = []
    if not isinstance(models, list):
        refused = str(models).endswith((" 401", " 403"))
        hint = " (set bench.api_key or DSPARK_API_KEY)" if refused else ""
        findings.append(Problem("endpoint", f"{key}: {models}{hint}"))
    elif wanted not in models:
        findings.append(Problem("endpoint", f"{key}: {url}/v1/models serves "
                                f"{', '.join(map(repr, models)) or 'no model'}, not {wanted!r} "
                                "(the plan's model, or server.served_model_name)"))
    metrics = _get(client, url, kind.metrics.path)
    if metrics != 200:
        findings.append(Note("endpoint", f"{key}: {metrics}; the run goes on without server evidence "
                             "(acceptance, KV cache, preemptions)", warning=True))
    return findings


def _get(client: httpx.Client, url: str, path: str, json: bool = False) -> int | list[str] | str:
    """200 (or, with `json`, the model ids of a /v1/models answer); else why not, in words."""
    import httpx

    try:
        response = client.get(path)
    except httpx.HTTPError as exc:
        return f"{url}{path} did not answer ({type(exc).__name__}: {exc or 'no reply'})"
    if response.status_code != 200:
        return f"{url}{path} answered {response.status_code}"
    if not json:
        return 200
    served = _served_models(response)
    return served if served is not None else f"{url}{path} answered no model list"


def _served_models(response: httpx.Response) -> list[str] | None:
    """The model ids a /v1/models answer lists; None when it is no such answer."""
    try:
        data = response.json().get("data")
        return [str(card["id"]) for card in data]
    except (ValueError, AttributeError, KeyError, TypeError):
        return None


# -- the bench client -------------------------------------------------------------------------

def check_bench_secrets(plan: Plan) -> list[Finding]:
    """A secret in `bench.extra_args` (`--header Authorization=Bearer …`) is refused before
    the run starts: run.json masks it and nothing can give it back, so the run could never be
    resumed (a resume after a crash would be refused with its server still holding the GPUs)."""
    if not secret_values(argvs=[plan.bench.extra_args]):
        return []
    return [Problem("bench", "bench.extra_args holds a secret, which run.json does not keep, so "
                    "this run could never be resumed; give the key as bench.api_key (sent as "
                    "`Authorization: Bearer`; DSPARK_API_KEY on resume) instead")]


def check_bench_client(plan: Plan) -> list[Finding]:
    bench = plan.bench
    if bench.driver == "sglang":
        return _check_import("bench.python", bench.python, _BENCH_MODULES["sglang"])
    if bench.driver == "vllm":
        exe = shutil.which(bench.vllm_executable)
        if exe is None:
            return [Problem("bench", f"bench.vllm_executable: {bench.vllm_executable!r} is not on "
                            "PATH (the vllm driver runs `vllm bench serve`); install vllm there "
                            "or give its full path")]
        python = _script_python(Path(exe))
        return _check_import(f"bench.vllm_executable ({exe})", python, "vllm") if python else []
    return []  # native: our own client, in this interpreter


def _check_import(key: str, python: str, module: str) -> list[Finding]:
    exe = shutil.which(python)
    if exe is None:
        return [Problem("bench", f"{key}: {python!r} is not on PATH; set bench.python to the "
                        f"interpreter that has {module.split('.')[0]} installed")]
    outcome = _imports(exe, module)
    if outcome is None:
        return []
    if outcome.startswith("timeout"):
        return [Note("bench", f"{key}: could not confirm that {exe} imports {module} "
                     f"({outcome}); the run goes on", warning=True)]
    return [Problem("bench", f"{key}: {exe} cannot import {module} ({outcome}); install it "
                    "there or point the plan at the interpreter that has it")]


@functools.lru_cache(maxsize=16)
def _imports(python: str, module: str) -> str | None:
    """None when `python -c "import module"` succeeds, else why not, in a few words. Cached: a
    launcher and the TUI's own start check the same plan in one process."""
    try:
        done = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True,
                              timeout=IMPORT_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return f"timeout: no answer within {IMPORT_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if done.returncode == 0:
        return None
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return lines[-1][:200] if lines else f"exit code {done.returncode}"


def _script_python(script: Path) -> str | None:
    """The interpreter a console script's `#!` line names, when it names one directly."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and "python" in Path(words[0]).name:
        return words[0]
    return None


# -- the port ---------------------------------------------------------------------------------

def check_port(plan: Plan, roots: Sequence[Path], exclude: Path | None) -> list[Finding]:
    """Two runs on one port would spoil both: a live run's, an orphaned server's or anyone's."""
    server = plan.server
    if server.port == 0:
        return []  # any free port, chosen when the run starts
    holder = run_holding_port(roots, server.port, exclude=exclude)
    if holder is not None:
        return [Problem("port", f"port {server.port} is used by the live run {holder.name} "
                        f"({holder.path}, runner pid {holder.pid}); wait for it, abort it "
                        f"(`dspark-tui ctl {holder.path} abort`) or use another server.port")]
    try:
        free = port_is_free(server.host, server.port)
    except UserError as exc:
        return [Problem("port", str(exc))]
    if free:
        return []
    orphan = orphan_server_on_port(roots, server.port)
    if orphan is not None:
        return [Problem("port", f"port {server.port} is held by the server left behind by the "
                        f"interrupted run {orphan}; resume that run (`dspark-tui run --resume "
                        f"{orphan}`), which stops it first, or stop it by hand")]
    return [Problem("port", describe_taken_port(server.host, server.port))]


# -- the GPUs ---------------------------------------------------------------------------------

def visible_devices(env: dict[str, str]) -> list[str] | None:
    """CUDA_VISIBLE_DEVICES as entries (indices or UUIDs); None when unset: every GPU."""
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def check_gpus(plan: Plan, roots: Sequence[Path], exclude: Path | None) -> list[Finding]:
    if uses_simulator(plan):
        return [Note("gpu", "GPUs: not checked; the server is the simulator, which uses none")]
    wanted = visible_devices(server_env(plan))
    findings: list[Finding] = list(_shared_with_live_runs(wanted, roots, exclude))
    if wanted == []:
        return [*findings, Note("gpu", "GPUs: CUDA_VISIBLE_DEVICES is empty; the server sees none")]
    probe = detect_gpu()
    devices = probe.devices() if probe is not None else None
    if devices is None:
        return [*findings, Note("gpu", "GPUs: not checked (neither NVML through nvidia-ml-py "
                                "nor a working nvidia-smi is available)")]
    chosen, unknown = _select(devices, wanted)
    findings += [Problem("gpu", f"CUDA_VISIBLE_DEVICES names GPU {entry!r}, which this machine "
                         f"does not have (it has {_index_list(devices)})") for entry in unknown]
    owners = _server_pids_of_live_runs(roots, exclude)
    for device in chosen:
        busy = _busy(device, owners)
        if busy:
            findings.append(Problem("gpu", f"GPU {device.index} ({device.name}) is busy: {busy}; "
                                    "stop what runs there or choose idle GPUs with "
                                    "CUDA_VISIBLE_DEVICES in [server.env]"))
    return findings


def _select(devices: list[GpuDevice], wanted: list[str] | None) -> tuple[list[GpuDevice], list[str]]:
    if wanted is None:
        return devices, []
    chosen: list[GpuDevice] = []
    unknown: list[str] = []
    for entry in wanted:
        match = [d for d in devices if (entry.isdigit() and d.index == int(entry))
                 or (entry.startswith(("GPU-", "MIG-")) and d.uuid.startswith(entry))]
        if match:
            chosen += [d for d in match if d not in chosen]
        else:
            unknown.append(entry)
    return chosen, unknown


def _index_list(devices: list[GpuDevice]) -> str:
    return ", ".join(str(d.index) for d in devices) or "none"


def _busy(device: GpuDevice, owners: dict[int, LiveRun]) -> str:
    """Why the GPU is not idle, in words; empty when it is."""
    if device.pids:
        return "; ".join(_describe_pid(pid, owners) for pid in sorted(device.pids))
    used = device.memory_used_mib
    if used is not None and used >= BUSY_MEMORY_MIB:
        return f"{used:,.0f} MiB in use by a process this user cannot see"
    return ""


def _describe_pid(pid: int, owners: dict[int, LiveRun]) -> str:
    run = owners.get(pid)
    if run is not None:
        return f"pid {pid}, the server of the live run {run.name} ({run.path})"
    try:
        command = " ".join(psutil.Process(pid).cmdline())[:80]
    except psutil.Error:
        command = "?"
    return f"pid {pid} ({command})"


def _server_pids_of_live_runs(roots: Sequence[Path], exclude: Path | None) -> dict[int, LiveRun]:
    owners: dict[int, LiveRun] = {}
    for run in live_runs(roots, exclude):
        record = read_record(run.path)
        if record is not None:
            pids = [record.pid, *(d.pid for d in record.descendants)]
            owners.update({pid: run for pid in pids if pid > 0})
    return owners


def _shared_with_live_runs(wanted: list[str] | None, roots: Sequence[Path],
                           exclude: Path | None) -> list[Finding]:
    """A live run between sessions holds no GPU now but will again: say whose GPUs are shared."""
    findings: list[Finding] = []
    for run in live_runs(roots, exclude):
        try:
            plan = RunStore(run.path).read_manifest().plan
        except (UserError, OSError, ValueError):
            continue
        server = plan.get("server") if isinstance(plan, dict) else None
        if not isinstance(server, dict):
            continue
        command = server.get("command")
        if isinstance(command, list) and SIMULATOR_MODULE in command:
            continue
        env = server.get("env")
        theirs = visible_devices(env if isinstance(env, dict) else {})
        shared = _overlap(wanted, theirs)
        if shared:
            findings.append(Note("gpu", f"GPUs {shared} are also used by the live run {run.name} "
                                 f"({run.path}, runner pid {run.pid}); measurements of both runs "
                                 "will disturb each other", warning=True))
    return findings


def _overlap(ours: list[str] | None, theirs: list[str] | None) -> str:
    """The GPUs two runs share, in words; empty when none. None means every GPU."""
    if ours is None and theirs is None:
        return "(all)"
    if ours is None or theirs is None:
        return ", ".join(theirs if ours is None else ours)  # type: ignore[arg-type]
    return ", ".join(entry for entry in ours if entry in theirs)


# -- the disk ---------------------------------------------------------------------------------

def check_disk(plan: Plan, results_root: Path) -> list[Problem]:
    """Free space where the run directory will be, against what the plan is expected to
    write (engine/checks/disk_budget.py: measurements x bytes each, logs included)."""
    return [Problem("disk", line + " — free some space or choose another --results folder")
            for line in disk_budget.check_disk(plan, results_root)]
