"""A server that prints what it was given, as vLLM may: its argv, its environment, and a short
digest of each variable (so a test can tell which value it received without the value itself
reaching any file), then serves through the simulator and prints a heartbeat while it lives.

    python loud_server.py SIMULATOR-ARGS...   (`serve MODEL --port P ...`, as dspark_tui.sim)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def main() -> int:
    print("argv:", " ".join(sys.argv), flush=True)
    for name, value in sorted(os.environ.items()):
        print(f"{name}={value}", flush=True)
        print(f"digest {name} {digest(value)}", flush=True)
    simulator = subprocess.Popen([sys.executable, "-m", "dspark_tui.sim", *sys.argv[1:]])
    beat = 0
    while simulator.poll() is None:
        beat += 1
        print(f"loud heartbeat {beat}", flush=True)  # dies of a broken pipe if nobody reads
        time.sleep(0.2)
    return simulator.returncode


if __name__ == "__main__":
    sys.exit(main())
