"""mypy over dspark_tui, with the [tool.mypy] settings of pyproject.toml, finds no error.

It runs without incremental mode and writes no cache (`--cache-dir` os.devnull, as mypy's docs
say: `--no-incremental` alone still writes one): the fastest cold run, and nothing lands in the
repository. It starts Python, so tests/slow.py marks it slow and the fast loop skips it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_no_error():
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--no-incremental", "--cache-dir", os.devnull, "--no-color-output", "dspark_tui"]
    env = {**os.environ, "MYPY_FORCE_COLOR": "0", "NO_COLOR": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=110, check=False)
    assert done.returncode == 0, f"mypy dspark_tui:\n{done.stdout}{done.stderr}"
