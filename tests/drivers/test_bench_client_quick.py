"""`bench/client_vs_sglang.py --quick` keeps working: our side only, against a real simulator."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_quick_mode_runs_and_prints_the_table():
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "client_vs_sglang.py"), "--quick"],
        capture_output=True, text=True, timeout=90, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "native tok/s" in out and "native CPU s/1k out" in out
    assert "c=1 pair 1: native" in out and "c=8 pair 1: native" in out
    assert "peer not run" in out
