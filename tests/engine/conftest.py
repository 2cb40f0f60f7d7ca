"""Fixtures of the engine tests: `cluster`, the fake Slurm and Kubernetes tools (clusters.py),
and `no_gpu_tools`."""

from pathlib import Path

import pytest

from tests.engine.clusters import cluster

__all__ = ["cluster", "no_gpu_tools"]


@pytest.fixture
def no_gpu_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Neither NVML nor nvidia-smi: PATH is an empty folder, returned for a test to put a fake
    smi in. Skipped where nvidia-ml-py is installed (NVML would be used)."""
    try:
        import pynvml  # noqa: F401

        pytest.skip("nvidia-ml-py is installed; NVML would be used")
    except ImportError:
        pass
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path
