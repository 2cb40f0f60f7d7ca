"""A server in a Kubernetes pod, driven through the `kubectl` the user already has configured.

`kubectl apply -f -` creates the pod and its Service from a manifest template; `kubectl logs -f`
is the local process that carries the server's output (into the scrubbing relay and
logs/server-{arm}-{session}.log) and ends when the container does; `kubectl wait
--for=condition=Ready` says the pod is up; a `kubectl port-forward` the tool owns gives the
endpoint on this machine, where the usual HTTP checks and the bench client reach it; `kubectl
delete` ends it all. kubectl rather than a client library: it brings the user's contexts,
credentials and plugins as they are, and no heavy dependency.

A `Placement` fills the template's `{affinity}` (the Pod's `spec.affinity`): a required
nodeAffinity on `kubernetes.io/hostname`, `In [node]` and/or `NotIn [avoid...]`. Once the pod
is Ready, `kubectl get pod/NAME -o jsonpath={.spec.nodeName}` says the node it runs on (the
server's `node`), which a round's later arms are asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
from importlib import resources
from pathlib import Path

from dspark_tui.engine.servers.launchers.launched import LaunchedServer
from dspark_tui.engine.servers.launchers.record import LaunchRecord, write_launch_record
from dspark_tui.engine.servers.launchers.tools import run_tool
from dspark_tui.engine.servers.placement import Placement
from dspark_tui.engine.servers.procs import TOKEN_VAR
from dspark_tui.engine.servers.server import ServerError
from dspark_tui.model import Arm, KubernetesOptions, Plan, safe_name
from dspark_tui.model.events import Notice, ServerLog

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FORWARDING = re.compile(r"Forwarding from (?:127\.0\.0\.1|\[::1\]|localhost):(\d+) ->")
HOSTNAME_LABEL = "kubernetes.io/hostname"  # the well-known label of a node's name
WAIT_STEP_S = 2  # one `kubectl wait` at a time, so an exit or a deadline is seen between them
DELETE_TIMEOUT_S = 120


def kubectl_base(options: KubernetesOptions) -> list[str]:
    context = [f"--context={options.context}"] if options.context else []
    return ["kubectl", *context, f"--namespace={options.namespace}"]


def pod_name(arm: str, session: str | None, token: str) -> str:
    """A DNS-1123 name (lower case, digits, '-', at most 63) that tells its run's arm and session."""
    slug = re.sub(r"[^a-z0-9]+", "-", safe_name(arm).lower()).strip("-")[:30] or "arm"
    return f"dspark-{slug}-{session or 's'}-{token[:8]}".lower()


def read_template(options: KubernetesOptions) -> tuple[str, str]:
    """(text, where): the plan's template or the shipped one; a missing file is one line."""
    if options.manifest is None:
        return resources.files(__package__).joinpath("pod.yaml").read_text(), "pod.yaml (shipped)"
    path = Path(options.manifest).expanduser()
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ServerError(f"server.kubernetes.manifest: cannot read {path} "
                          f"({getattr(exc, 'strerror', None) or exc})") from None


def affinity(placement: Placement | None) -> dict[str, object]:
    """A Pod's `spec.affinity` for the placement: a required nodeAffinity on the node's
    hostname label (`In [node]`, `NotIn [avoid...]`, both in one term: both must hold); `{}`
    for none."""
    expressions = []
    if placement is not None and placement.node:
        expressions.append({"key": HOSTNAME_LABEL, "operator": "In", "values": [placement.node]})
    if placement is not None and placement.avoid:
        expressions.append({"key": HOSTNAME_LABEL, "operator": "NotIn",
                            "values": list(placement.avoid)})
    if not expressions:
        return {}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": expressions}]}}}


def placeholders(template: str) -> list[tuple[int, set[str]]]:
    """(line number, the placeholders on it) of each line that is not a comment."""
    return [(number, set(_PLACEHOLDER.findall(line)))
            for number, line in enumerate(template.splitlines(), 1)
            if not line.lstrip().startswith("#")]


def places_on_nodes(template: str) -> bool:
    """Whether the template has the `{affinity}` placeholder (a placement can reach the pod)."""
    return any("affinity" in names for _, names in placeholders(template))


def render_manifest(plan: Plan, arm: Arm, name: str, session: str | None,
                    template: str, where: str = "manifest",
                    placement: Placement | None = None) -> str:
    """Every `{placeholder}` becomes a JSON value, which YAML reads as the same value. A
    placement the template has no `{affinity}` for is an error: it would be dropped silently."""
    options = plan.server.kubernetes
    values: dict[str, object] = {
        "name": name, "namespace": options.namespace, "image": options.image, "gpus": options.gpus,
        "port": plan.server.port, "arm": arm.name, "session": session or "",
        "command": plan.server_argv(arm),
        "env": [{"name": k, "value": v} for k, v in plan.server.env.items()],
        "affinity": affinity(placement),
    }
    for number, names in placeholders(template):
        for unknown in names - set(values):
            raise ServerError(f"{where}:{number}: unknown placeholder {{{unknown}}}; "
                              f"known: {', '.join('{' + k + '}' for k in values)}")
    if values["affinity"] and not places_on_nodes(template):
        raise ServerError(f"{where}: no {{affinity}} placeholder, so the pod cannot be placed on "
                          "a node (add `affinity: {affinity}` under the Pod's spec)")

    def fill(match: re.Match[str]) -> str:
        return json.dumps(values[match.group(1)], ensure_ascii=False)

    return "\n".join(line if line.lstrip().startswith("#") else _PLACEHOLDER.sub(fill, line)
                     for line in template.splitlines()) + "\n"


def delete_objects(record: LaunchRecord) -> tuple[bool, str]:
    """kubectl delete of the recorded objects; (done, in words). kubectl is the one on PATH,
    with the record's context and namespace (never the command the record names)."""
    result = run_tool([*record.kubectl_argv(), "delete", *record.objects, "--ignore-not-found",
                       "--wait=true", f"--timeout={DELETE_TIMEOUT_S}s"],
                      timeout=DELETE_TIMEOUT_S + 30)
    what = ", ".join(record.objects)
    if result.code == 0:
        return True, f"deleted {what}"
    return False, f"kubectl delete {what} failed: {result.last_error_line()}"


class KubernetesServer(LaunchedServer):
    names_session = False  # the pod's command is the plan's; the pod and its forward identify it

    def _launcher_state(self) -> None:
        options = self.plan.server.kubernetes
        self.pod = pod_name(self.arm.name, self.session, self.token)
        self.remote_port = self.plan.server.port
        self.host = "127.0.0.1"  # the port-forward's end; its port is known once it runs
        self.port = 0
        self._kubectl = kubectl_base(options)
        self._pod_ready = False
        self._container_code: int | None = None
        self._forward: subprocess.Popen[bytes] | None = None
        self._forward_log = self.log_path.with_name(self.log_path.stem + ".port-forward.log")
        self._objects = LaunchRecord(
            launcher="kubernetes", arm=self.arm.name, session=self.session, kubectl=self._kubectl,
            context=options.context, namespace=options.namespace,
            objects=[f"pod/{self.pod}", f"service/{self.pod}"])

    async def _submit(self) -> None:
        template, where = read_template(self.plan.server.kubernetes)
        placement: Placement | None = self.placement
        if placement and (placement.node or placement.avoid) and not places_on_nodes(template):
            # Only a run of one round at a time gets here (preflight refuses parallel rounds):
            # it goes on, and a round whose arms land on two nodes is left out of the pairing.
            self._emit(Notice(level="warning", message=(
                f"{self.arm.name}: {where} has no {{affinity}} placeholder, so this pod may land "
                "on another node than its round's other arms (such a round is not compared); "
                "add `affinity: {affinity}` under the Pod's spec")))
            placement = None
        manifest = render_manifest(self.plan, self.arm, self.pod, self.session, template, where,
                                   placement)
        write_launch_record(self.run_dir, self._objects)  # before the apply: a resume deletes it
        result = await asyncio.to_thread(run_tool, [*self._kubectl, "apply", "-f", "-"],
                                         input=manifest, timeout=120)
        for line in result.out.splitlines():
            self._emit(ServerLog(arm=self.arm.name, line=line))
        if result.code != 0:
            raise ServerError(f"kubectl apply failed: {result.last_error_line()}")

    def _local_argv(self) -> list[str]:
        # Waits for the container to run, then follows its output until it ends.
        timeout = f"--pod-running-timeout={self.plan.server.startup_timeout_s:g}s"
        return [*self._kubectl, "logs", "-f", f"pod/{self.pod}", timeout]

    async def _located(self) -> bool:
        if not self._pod_ready:
            result = await asyncio.to_thread(
                run_tool, [*self._kubectl, "wait", "--for=condition=Ready", f"pod/{self.pod}",
                           f"--timeout={WAIT_STEP_S}s"], timeout=WAIT_STEP_S + 30)
            if result.code != 0:
                return False
            self._pod_ready = True
            self._objects.state = "running"
            write_launch_record(self.run_dir, self._objects)
        if self.node is None and not await self._found_node():
            return False  # asked again at the next look
        if self._forward is None:
            self._start_port_forward()
        return self._forwarded_port()

    async def _found_node(self) -> bool:
        """The node the Ready pod runs on: a round's later arms are placed there."""
        result = await asyncio.to_thread(
            run_tool, [*self._kubectl, "get", f"pod/{self.pod}", "-o", "jsonpath={.spec.nodeName}"],
            timeout=30)
        node = result.out.strip()
        if result.code != 0 or not node:
            return False
        self.node = self._objects.node = node
        write_launch_record(self.run_dir, self._objects)
        self._emit(ServerLog(arm=self.arm.name, line=f"pod/{self.pod} runs on node {node}"))
        return True

    def _start_port_forward(self) -> None:
        self._forward_log.parent.mkdir(parents=True, exist_ok=True)
        with open(self._forward_log, "ab") as out:
            try:
                self._forward = subprocess.Popen(
                    [*self._kubectl, "port-forward", f"pod/{self.pod}", f":{self.remote_port}",
                     "--address=127.0.0.1"],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    # the token: a resume after kill -9 ends it with the rest of the session
                    env={**os.environ, TOKEN_VAR: self.token}, start_new_session=True)
            except OSError as exc:
                raise ServerError(f"cannot run kubectl port-forward: {exc.strerror or exc}") from None

    def _forwarded_port(self) -> bool:
        assert self._forward is not None
        with contextlib.suppress(OSError):
            found = _FORWARDING.search(self._forward_log.read_text(errors="replace"))
            if found:
                self.port = int(found.group(1))
                return True
        if self._forward.poll() is not None:
            text = self._forward_log.read_text(errors="replace") if self._forward_log.exists() else ""
            raise ServerError(f"kubectl port-forward exited with code {self._forward.returncode}",
                              text.splitlines()[-10:])
        return False

    def exit_code(self) -> int | None:
        """The container's exit code once `kubectl logs -f` has ended (its own code says only
        that the stream ended); looked up once."""
        ended = super().exit_code()
        if ended is None:
            return None
        if self._container_code is None:
            result = run_tool([*self._kubectl, "get", f"pod/{self.pod}", "-o",
                               "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}"],
                              timeout=30)
            text = result.out.strip()
            self._container_code = int(text) if result.code == 0 and text.lstrip("-").isdigit() \
                else ended
        return self._container_code

    def death_reason(self) -> str | None:
        reason = super().death_reason()
        if reason is None and self._forward is not None and self._forward.poll() is not None:
            reason = f"kubectl port-forward exited with code {self._forward.returncode}"
        return reason

    async def _end_remote(self) -> None:
        if self._objects.state != "stopped":
            done, words = await asyncio.to_thread(delete_objects, self._objects)
            if done:
                self._objects.state = "stopped"
                write_launch_record(self.run_dir, self._objects)
            else:  # left marked: a resume tries again
                self._emit(Notice(level="warning", message=f"{self.arm.name}: {words}; a resume "
                                  "tries again, or delete them by hand"))
        forward = self._forward
        if forward is not None and forward.poll() is None:
            forward.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(forward.wait, 5)
