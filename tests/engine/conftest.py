"""Fixtures of the engine tests: `cluster`, the fake Slurm and Kubernetes tools (clusters.py)."""

from tests.engine.clusters import cluster

__all__ = ["cluster"]
