"""A stand-in for `kubectl` against a "cluster" whose nodes are this machine:
FAKE_KUBE_NODES="127.0.0.2,127.0.0.3" names them, each a loopback address (default: 127.0.0.1
alone). Objects are files under FAKE_KUBE_DIR/{namespace}/; a pod's container runs detached
here (its command and args from the manifest), its output in a file.

Scheduling, as a real scheduler would: a pod goes to the first node that its `spec.affinity`
required nodeAffinity admits (expressions on the node's only label, `kubernetes.io/hostname`:
In, NotIn, Exists, DoesNotExist) and that runs no other pod (one pod a node, as a pod taking
all of a node's GPUs); a pod that fits nowhere stays Pending until a node frees, which every
kubectl call checks (the fake has no scheduler daemon). Its node is `spec.nodeName`. A plan's
`--host {host}` binds the node's address, as `--host 0.0.0.0` would on a real node: the
container's `--host` value is replaced by it; the readinessProbe and port-forward go there.

Accepted, as kubectl takes them: global --namespace/-n and --context; `apply -f -` (Pod and
Service; prints `pod/NAME created`), `wait --for=condition=Ready pod/NAME --timeout=Ns` (Ready:
the container answers its readinessProbe, else it runs), `logs -f pod/NAME
[--pod-running-timeout=D]`, `port-forward pod/NAME [LOCAL]:REMOTE [--address=A]` (a real TCP
forward; prints `Forwarding from 127.0.0.1:PORT -> REMOTE`), `delete KIND/NAME...
[--ignore-not-found] [--wait] [--timeout=D]` (prints `pod "NAME" deleted`), `get pods`,
`get pod/NAME -o jsonpath={.status.containerStatuses[0].state.terminated.exitCode}`,
`get pod/NAME -o jsonpath={.spec.nodeName}`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run by path, not as a package
import fake_cluster as cluster

HOSTNAME = "kubernetes.io/hostname"
KINDS = {"pod": "pods", "pods": "pods", "service": "services", "services": "services",
         "svc": "services"}


def parse_duration(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)?", text)
    if not match:
        sys.exit(f"error: invalid duration {text!r}")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]
    return float(match.group(1)) * scale


class Cluster:
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.root = cluster.state_dir("FAKE_KUBE_DIR") / namespace

    def path(self, kind: str, name: str) -> Path:
        folder = self.root / KINDS[kind]
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{name}.json"

    def get(self, kind: str, name: str) -> dict | None:
        return cluster.read_json(self.path(kind, name))

    def put(self, kind: str, name: str, data: dict) -> None:
        cluster.write_json(self.path(kind, name), data)

    def pod_process(self, name: str) -> psutil.Process | None:
        pod = self.get("pod", name)
        return cluster.process(pod.get("pid"), pod.get("create_time")) if pod else None


def split_target(target: str) -> tuple[str, str]:
    kind, _, name = target.partition("/")
    if not name or kind not in KINDS:
        sys.exit(f'error: the server doesn\'t have a resource type "{kind}"')
    return kind, name


def all_pods() -> list[tuple[Path, dict]]:
    """Every namespace's pods, oldest first (the scheduler's queue order)."""
    found = []
    for path in cluster.state_dir("FAKE_KUBE_DIR").glob("*/pods/*.json"):
        data = cluster.read_json(path)
        if data is not None:
            found.append((path, data))
    return sorted(found, key=lambda item: item[1].get("created", 0.0))


def admits(doc: dict, node: str) -> bool:
    """Whether the pod's required node affinity lets it run on the node: any term whose
    expressions all hold of the node's labels."""
    affinity = ((doc.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    labels = {HOSTNAME: node}

    def holds(expression: dict) -> bool:
        key, values = expression["key"], expression.get("values") or []
        operators = {"In": lambda: labels.get(key) in values,
                     "NotIn": lambda: labels.get(key) not in values,
                     "Exists": lambda: key in labels, "DoesNotExist": lambda: key not in labels}
        if expression["operator"] not in operators:
            sys.exit(f"error: operator {expression['operator']!r} is not faked")
        return operators[expression["operator"]]()

    return any(term.get("matchExpressions") and all(map(holds, term["matchExpressions"]))
               for term in required.get("nodeSelectorTerms") or [])


def schedule() -> None:
    """Start each Pending pod, oldest first, on the first free node it admits."""
    with cluster.locked(cluster.state_dir("FAKE_KUBE_DIR")):
        pods = all_pods()
        busy = {data["node"] for _, data in pods
                if cluster.process(data.get("pid"), data.get("create_time"))}
        for path, data in pods:
            if data.get("node"):
                continue
            free = [n for n in cluster.nodes("FAKE_KUBE_NODES")
                    if n not in busy and admits(data["manifest"], n)]
            if free:
                data.update(start_pod(path, data["manifest"], free[0]))
                cluster.write_json(path, data)
                busy.add(free[0])


def apply(kube: Cluster, args: list[str]) -> int:
    if args[:2] != ["-f", "-"]:
        sys.exit("error: only `apply -f -` is faked")
    for doc in yaml.safe_load_all(sys.stdin.read()):
        if not doc:
            continue
        kind, name = doc["kind"].lower(), doc["metadata"]["name"]
        namespace = doc["metadata"].get("namespace", kube.namespace)
        if namespace != kube.namespace:
            sys.exit(f"error: the namespace from the provided object {namespace!r} does not match "
                     f"the namespace {kube.namespace!r}. You must pass '--namespace={namespace}' "
                     "to perform this operation.")
        existing = kube.get(kind, name)
        if existing is not None and (kind != "pod" or not existing.get("node")
                                     or kube.pod_process(name) is not None):
            print(f"{kind}/{name} unchanged")
            continue
        data: dict = {"manifest": doc, "created": time.time(), "node": None}
        kube.put(kind, name, data)
        print(f"{kind}/{name} created")
    schedule()
    return 0


def start_pod(path: Path, doc: dict, node: str) -> dict:
    container = doc["spec"]["containers"][0]
    argv = [str(part) for part in [*container.get("command", []), *container.get("args", [])]]
    env = {item["name"]: str(item.get("value", "")) for item in container.get("env") or []}
    log_path = path.with_suffix(".log")
    log_path.write_bytes(b"")
    proc = cluster.start_server(cluster.bind_to(argv, node), log_path, env,
                                exit_file=log_path.with_suffix(".exit"))
    probe = (container.get("readinessProbe") or {}).get("httpGet")
    return {"node": node, "pid": proc.pid, "create_time": psutil.Process(proc.pid).create_time(),
            "log": str(log_path), "port": container["ports"][0]["containerPort"],
            "probe": probe}


def ready(kube: Cluster, name: str) -> bool:
    pod = kube.get("pod", name)
    if pod is None or kube.pod_process(name) is None:
        return False
    probe = pod.get("probe")
    if not probe:
        return True
    url = f"http://{pod['node']}:{probe['port']}{probe.get('path', '/')}"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return 200 <= response.status < 400
    except OSError:
        return False


def wait(kube: Cluster, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kubectl wait", add_help=False)
    parser.add_argument("--for", dest="condition", required=True)
    parser.add_argument("--timeout", default="30s")
    parser.add_argument("target")
    args = parser.parse_args(argv)
    if args.condition.lower() != "condition=ready":
        sys.exit(f"error: only --for=condition=Ready is faked, got {args.condition}")
    _, name = split_target(args.target)
    if kube.get("pod", name) is None:
        print(f'Error from server (NotFound): pods "{name}" not found', file=sys.stderr)
        return 1
    deadline = time.monotonic() + parse_duration(args.timeout)
    while True:
        schedule()
        if ready(kube, name):
            print(f"pod/{name} condition met")
            return 0
        if time.monotonic() >= deadline:
            print(f"error: timed out waiting for the condition on pods/{name}", file=sys.stderr)
            return 1
        time.sleep(0.1)


def logs(kube: Cluster, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kubectl logs", add_help=False)
    parser.add_argument("-f", "--follow", action="store_true")
    parser.add_argument("--pod-running-timeout", default="20s")
    parser.add_argument("target")
    args = parser.parse_args(argv)
    _, name = split_target(args.target)
    deadline = time.monotonic() + parse_duration(args.pod_running_timeout)
    while True:  # a Pending pod: until it runs, for --pod-running-timeout
        pod = kube.get("pod", name)
        if pod is None:
            print(f'Error from server (NotFound): pods "{name}" not found', file=sys.stderr)
            return 1
        if pod.get("log"):
            break
        if not args.follow or time.monotonic() >= deadline:
            print("error: timed out waiting for the condition", file=sys.stderr)
            return 1
        time.sleep(0.1)
        schedule()
    log_path, offset = Path(pod["log"]), 0
    while True:
        offset = cluster.follow(log_path, offset, sys.stdout.buffer)
        if not args.follow or kube.pod_process(name) is None:
            cluster.follow(log_path, offset, sys.stdout.buffer)
            return 0
        time.sleep(0.1)


async def forward(local: int, node: str, remote: int, address: str) -> None:
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(node, remote)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, address, local)
    port = server.sockets[0].getsockname()[1]
    print(f"Forwarding from {address}:{port} -> {remote}", flush=True)
    async with server:
        await server.serve_forever()


def port_forward(kube: Cluster, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kubectl port-forward", add_help=False)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("target")
    parser.add_argument("ports")
    args = parser.parse_args(argv)
    _, name = split_target(args.target)
    pod = kube.get("pod", name)
    if pod is None or kube.pod_process(name) is None:
        status = "Pending" if pod is not None and not pod.get("node") else "Failed"
        print('error: unable to forward port because pod is not running. '
              f'Current status={status}', file=sys.stderr)
        return 1
    local, _, remote = args.ports.rpartition(":")
    asyncio.run(forward(int(local or 0), pod["node"], int(remote or local), args.address))
    return 0


def delete(kube: Cluster, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kubectl delete", add_help=False)
    parser.add_argument("--ignore-not-found", action="store_true")
    parser.add_argument("--wait", default="true")
    parser.add_argument("--timeout", default="0s")
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args(argv)
    code = 0
    for target in args.targets:
        kind, name = split_target(target)
        data = kube.get(kind, name)
        if data is None:
            if not args.ignore_not_found:
                print(f'Error from server (NotFound): {KINDS[kind]} "{name}" not found',
                      file=sys.stderr)
                code = 1
            continue
        if kind == "pod":
            cluster.stop_server(data.get("pid"), data.get("create_time"))
        kube.path(kind, name).unlink()
        print(f'{KINDS[kind][:-1]} "{name}" deleted')
    schedule()  # a Pending pod may fit on the node this one freed
    return code


EXIT_CODE_PATH = "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}"
NODE_NAME_PATH = "jsonpath={.spec.nodeName}"


def get(kube: Cluster, argv: list[str]) -> int:
    if len(argv) == 3 and argv[0].startswith("pod/") and argv[1] == "-o" \
            and argv[2] in (EXIT_CODE_PATH, NODE_NAME_PATH):
        _, name = split_target(argv[0])
        pod = kube.get("pod", name)
        if pod is None:
            print(f'Error from server (NotFound): pods "{name}" not found', file=sys.stderr)
            return 1
        if argv[2] == NODE_NAME_PATH:
            print(pod.get("node") or "", end="")  # empty while Pending, as kubectl prints it
            return 0
        exit_file = kube.path("pod", name).with_suffix(".exit")
        print(exit_file.read_text().strip() if exit_file.exists() else "", end="")
        return 0
    if argv[:1] not in (["pods"], ["pod"]):
        sys.exit("error: only `get pods`, a pod's nodeName and a terminated container's "
                 "exitCode are faked")
    print("NAME   READY   STATUS")
    for path in sorted((kube.root / "pods").glob("*.json")):
        name = path.stem
        running = kube.pod_process(name) is not None
        status = "Running" if running else "Completed" if (kube.get("pod", name) or {}).get(
            "node") else "Pending"
        print(f"{name}   {'1/1' if running else '0/1'}   {status}")
    return 0


def main(argv: list[str]) -> int:
    namespace, context, rest = "default", None, []
    args = iter(argv)
    for arg in args:
        if arg in ("-n", "--namespace"):
            namespace = next(args)
        elif arg.startswith("--namespace="):
            namespace = arg.split("=", 1)[1]
        elif arg == "--context":
            context = next(args)
        elif arg.startswith("--context="):
            context = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    del context  # one cluster here; the flag is accepted as kubectl accepts it
    if not rest:
        sys.exit("kubectl controls the Kubernetes cluster manager.")
    commands = {"apply": apply, "wait": wait, "logs": logs, "port-forward": port_forward,
                "delete": delete, "get": get}
    if rest[0] not in commands:
        sys.exit(f'error: unknown command "{rest[0]}" for "kubectl"')
    schedule()  # what a scheduler would have done since the last call
    return commands[rest[0]](Cluster(namespace), rest[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
