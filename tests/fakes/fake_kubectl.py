"""A stand-in for `kubectl` against a one-node "cluster": this machine. Objects are files under
FAKE_KUBE_DIR/{namespace}/; a pod's container runs detached here (its command and args from
the manifest), its output in a file.

Accepted, as kubectl takes them: global --namespace/-n and --context; `apply -f -` (Pod and
Service; prints `pod/NAME created`), `wait --for=condition=Ready pod/NAME --timeout=Ns` (Ready:
the container answers its readinessProbe, else it runs), `logs -f pod/NAME
[--pod-running-timeout=D]`, `port-forward pod/NAME [LOCAL]:REMOTE [--address=A]` (a real TCP
forward; prints `Forwarding from 127.0.0.1:PORT -> REMOTE`), `delete KIND/NAME...
[--ignore-not-found] [--wait] [--timeout=D]` (prints `pod "NAME" deleted`), `get pods`,
`get pod/NAME -o jsonpath={.status.containerStatuses[0].state.terminated.exitCode}`.
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
        if existing is not None and (kind != "pod" or kube.pod_process(name) is not None):
            print(f"{kind}/{name} unchanged")
            continue
        data: dict = {"manifest": doc}
        if kind == "pod":
            data.update(start_pod(kube, name, doc))
        kube.put(kind, name, data)
        print(f"{kind}/{name} created")
    return 0


def start_pod(kube: Cluster, name: str, doc: dict) -> dict:
    container = doc["spec"]["containers"][0]
    argv = [*container.get("command", []), *container.get("args", [])]
    env = {item["name"]: str(item.get("value", "")) for item in container.get("env") or []}
    log_path = kube.path("pod", name).with_suffix(".log")
    log_path.write_bytes(b"")
    proc = cluster.start_server([str(part) for part in argv], log_path, env,
                                exit_file=log_path.with_suffix(".exit"))
    probe = (container.get("readinessProbe") or {}).get("httpGet")
    return {"pid": proc.pid, "create_time": psutil.Process(proc.pid).create_time(),
            "log": str(log_path), "port": container["ports"][0]["containerPort"],
            "probe": probe}


def ready(kube: Cluster, name: str) -> bool:
    pod = kube.get("pod", name)
    if pod is None or kube.pod_process(name) is None:
        return False
    probe = pod.get("probe")
    if not probe:
        return True
    url = f"http://127.0.0.1:{probe['port']}{probe.get('path', '/')}"
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
    pod = kube.get("pod", name)
    if pod is None:
        print(f'Error from server (NotFound): pods "{name}" not found', file=sys.stderr)
        return 1
    log_path, offset = Path(pod["log"]), 0
    while True:
        offset = cluster.follow(log_path, offset, sys.stdout.buffer)
        if not args.follow or kube.pod_process(name) is None:
            cluster.follow(log_path, offset, sys.stdout.buffer)
            return 0
        time.sleep(0.1)


async def forward(local: int, remote: int, address: str) -> None:
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", remote)
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
    if kube.pod_process(name) is None:
        print('error: unable to forward port because pod is not running. Current status=Failed',
              file=sys.stderr)
        return 1
    local, _, remote = args.ports.rpartition(":")
    asyncio.run(forward(int(local or 0), int(remote or local), args.address))
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
    return code


EXIT_CODE_PATH = "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}"


def get(kube: Cluster, argv: list[str]) -> int:
    if len(argv) == 3 and argv[0].startswith("pod/") and argv[1:] == ["-o", EXIT_CODE_PATH]:
        _, name = split_target(argv[0])
        if kube.get("pod", name) is None:
            print(f'Error from server (NotFound): pods "{name}" not found', file=sys.stderr)
            return 1
        exit_file = kube.path("pod", name).with_suffix(".exit")
        print(exit_file.read_text().strip() if exit_file.exists() else "", end="")
        return 0
    if argv[:1] not in (["pods"], ["pod"]):
        sys.exit("error: only `get pods` and a terminated container's exitCode are faked")
    print("NAME   READY   STATUS")
    for path in sorted((kube.root / "pods").glob("*.json")):
        name = path.stem
        running = kube.pod_process(name) is not None
        print(f"{name}   {'1/1' if running else '0/1'}   {'Running' if running else 'Completed'}")
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
    return commands[rest[0]](Cluster(namespace), rest[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
