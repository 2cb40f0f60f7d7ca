"""A stand-in for `docker run --rm -p HOST:PORT:INNER IMAGE ARGS…`, as a server in a container
looks from the host: the server runs outside the caller's process tree (under the runtime's
daemon, here: double-forked away), and the published port is held by a proxy process that is
not in the tree either (docker-proxy). The foreground process relays the server's output and,
signalled, stops the container (as `docker run --sig-proxy` with `--rm` does).

    fake_container.py run -p PORT:INNER IMAGE ARGS…

The one image is `sim`, whose entrypoint is the simulator's `serve` (as vLLM's image's is
`vllm serve`): ARGS follow it, so a name appended to the command reaches the server.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

IMAGES = {"sim": [sys.executable, "-m", "dspark_tui.sim", "serve"]}


def _detached(run) -> int:  # type: ignore[no-untyped-def]
    """Run `run()` in a grandchild reparented away from this process (as a daemon's child is);
    its pid, told back through a pipe."""
    read_end, write_end = os.pipe()
    first = os.fork()
    if first == 0:
        os.setsid()
        second = os.fork()
        if second:
            os.write(write_end, str(second).encode())
            os._exit(0)
        os.close(read_end)
        try:
            run()
        finally:
            os._exit(0)
    os.close(write_end)
    pid = int(os.read(read_end, 32).decode())
    os.waitpid(first, 0)
    return pid


def _proxy(port: int, inner: int) -> None:
    """Forward every connection on `port` to `inner` (docker-proxy's job)."""
    listener = socket.create_server(("127.0.0.1", port), reuse_port=False)

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for end in (src, dst):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", inner))
        except OSError:
            client.close()
            continue
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main() -> int:
    argv = sys.argv[1:]
    if argv[:2] != ["run", "-p"] or len(argv) < 4 or argv[3] not in IMAGES:
        print("usage: fake_container.py run -p PORT:INNER sim ARGS…", file=sys.stderr)
        return 2
    port, inner = (int(x) for x in argv[2].split(":"))
    command = [*IMAGES[argv[3]], *argv[4:]]
    server = _detached(lambda: os.execvp(command[0], command))
    proxy = _detached(lambda: _proxy(port, inner))

    def stop(*_: object) -> None:
        for pid in (server, proxy):
            if _alive(pid):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in (server, proxy)) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in (server, proxy):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while _alive(server):
        time.sleep(0.1)
    stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
