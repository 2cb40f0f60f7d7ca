"""GPU readings through a stand-in `nvidia-smi` (a script printing what the real one prints)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from dspark_tui.engine.servers.gpu import SmiProbe, detect_gpu

FAKE_SMI = """#!/bin/sh
case "$*" in
  *--query-gpu=*) printf '87, 70123, 412.50\\n93, 70321, 398.10\\n' ;;
  *--query-compute-apps=*) printf '4242\\n4343\\n' ;;
  *) exit 9 ;;
esac
"""


def _fake_smi(folder: Path, text: str = FAKE_SMI) -> Path:
    path = folder / "nvidia-smi"
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_smi_sums_memory_and_power_and_averages_utilization(tmp_path: Path):
    probe = SmiProbe(str(_fake_smi(tmp_path)))
    sample = probe.sample()
    assert sample is not None
    assert sample.util_percent == pytest.approx(90.0)
    assert sample.memory_used_mib == pytest.approx(140444.0)
    assert sample.power_w == pytest.approx(810.6)
    assert probe.compute_pids() == {4242, 4343}


def test_a_failing_smi_gives_no_reading(tmp_path: Path):
    probe = SmiProbe(str(_fake_smi(tmp_path, "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")))
    assert probe.sample() is None and probe.compute_pids() is None


def test_detect_uses_smi_on_path_or_nothing(no_gpu_tools: Path, monkeypatch: pytest.MonkeyPatch):
    tmp_path = no_gpu_tools
    assert shutil.which("nvidia-smi") is None
    assert detect_gpu() is None
    _fake_smi(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    probe = detect_gpu()
    assert probe is not None and probe.source == "nvidia-smi"
