"""A tiny stand-in for an inference server, for the engine's process-lifecycle tests.

Standard library only. Serves /health, /v1/completions and /metrics (a fixed page, or vLLM-like
counters that grow while it "works"), and misbehaves on request: slow or never-ready startup,
early exit, a fatal log line, ignoring SIGTERM, worker children (one in its own session), a log
flood.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COUNTER_PAGE = """# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{{engine="0",model_name="m"}} {gen}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="m"}} 1.0
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument("--exit-at-start", type=int, default=None)
    parser.add_argument("--never-ready", action="store_true")
    parser.add_argument("--fatal-line", action="store_true")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--spawn-workers", type=int, default=0)
    parser.add_argument("--log-flood", action="store_true")
    parser.add_argument("--metrics-file", default=None)
    args = parser.parse_args()

    print(f"fake server pid {os.getpid()} starting", flush=True)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, lambda *_: print("SIGTERM ignored", flush=True))
    for i in range(args.spawn_workers):
        # The last worker leaves the process group, as some launchers' children do.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=(i == args.spawn_workers - 1))
    if args.exit_at_start is not None:
        print("ERROR: cannot load the model (fake)", flush=True)
        return args.exit_at_start
    if args.fatal_line:
        print("ERROR 01-01 00:00:00 core.py:1] EngineCore failed to start.", flush=True)
        time.sleep(600)
    print("INFO Loading safetensors checkpoint shards: 100% (fake)", flush=True)
    time.sleep(args.startup_delay)
    if args.never_ready:
        time.sleep(600)

    state = {"gen": 0.0}
    page = Path(args.metrics_file).read_text() if args.metrics_file else None

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def _send(self, code: int, body: str, ctype: str = "application/json") -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, "")
            elif self.path == "/metrics":
                state["gen"] += 10
                self._send(200, page or COUNTER_PAGE.format(gen=state["gen"]), "text/plain")
            else:
                self._send(404, "{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            self._send(200, json.dumps({"choices": [{"text": "x"}]}))

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.log_flood:
        def flood() -> None:
            line = "x" * 200 + "\n"
            while True:
                sys.stdout.write(line * 500)
                sys.stdout.flush()
                time.sleep(0.02)  # about 5 MB/s: a flood, without filling the disk

        threading.Thread(target=flood, daemon=True).start()
    print("INFO:     Application startup complete.", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
