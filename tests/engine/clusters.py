"""The fake cluster a test runs against: the fake `srun`/`squeue`/`scancel`/`scontrol` and
`kubectl` of tests/fakes first on PATH, their state under the test's tmp_path, a plan through
either launcher, and what the fakes' files say of their jobs and pods."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psutil
import pytest

from tests.engine.helpers import FAKES, sim_plan_text

SLURM_TOOLS = ("srun", "squeue", "scancel", "scontrol")
SLURM_TABLE = """
[server.slurm]
partition = "gpu"
gres = "gpu:8"
time = "00:30:00"
account = "bench"
extra_args = ["--exclusive"]
"""
TWO_NODES = "127.0.0.2,127.0.0.3"
KUBE_TABLE = """
[server.kubernetes]
namespace = "bench"
image = "vllm/vllm-openai:v0.33.0"
gpus = 8
context = "lab"
"""


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake tools first on PATH (small wrapper scripts, as the real tools are programs),
    their state under tmp_path; RunnerProcess and the CLI inherit this environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (*SLURM_TOOLS, "kubectl"):
        script = FAKES / ("fake_kubectl.py" if tool == "kubectl" else "fake_slurm.py")
        wrapper = bin_dir / tool
        wrapper.write_text(f'#!/bin/sh\nFAKE_SLURM_TOOL={tool} exec "{sys.executable}" '
                           f'"{script}" "$@"\n')
        wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(tmp_path / "slurm"))
    monkeypatch.setenv("FAKE_KUBE_DIR", str(tmp_path / "kube"))
    monkeypatch.setenv("DSPARK_CONFIG_DIR", "/nonexistent-dspark-config")
    return tmp_path


def cluster_plan(folder: Path, port: int, launcher: str, *sim_flags: str, **kwargs: object) -> Path:
    table = SLURM_TABLE if launcher == "slurm" else KUBE_TABLE
    text = sim_plan_text(port, *sim_flags, warmup=0, launcher=f'"{launcher}"',
                         **kwargs) + table  # type: ignore[arg-type]
    path = folder / "plan.toml"
    path.write_text(text)
    return path


def jobs(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((root / "slurm" / "jobs").glob("*.json"))]


def pods(root: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text())
            for p in sorted((root / "kube" / "bench" / "pods").glob("*.json"))}


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
