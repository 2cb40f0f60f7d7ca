"""Every benchmark keeps working: each runs in its --quick mode and prints its table."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = {
    "scrape_cost.py": "fixture page:",
    "scaling.py": "Native client CPU",
    "sim_capacity.py": "",
    "client_vs_sglang.py": "",
    "tui_overhead.py": "",
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_bench_quick_mode_runs(script: str):
    path = BENCH / script
    if not path.exists():
        pytest.fail(f"{path} is missing")
    proc = subprocess.run([sys.executable, str(path), "--quick"], capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert SCRIPTS[script] in proc.stdout
    assert "Traceback" not in proc.stderr
