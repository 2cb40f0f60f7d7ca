"""The capacity benchmark's quick mode: 128 live streams at --speed 1 keep the model's pace."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.timing  # runs alone: the simulator must keep its modelled pace


def test_sim_capacity_quick_passes():
    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "sim_capacity.py"), "--quick", "--spec-tokens", "3"],
        capture_output=True, text=True, timeout=90, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS" in result.stdout
