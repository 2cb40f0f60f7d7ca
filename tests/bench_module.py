"""A script of bench/ imported as a module, for the tests that run its checks in-process."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.conftest import REPO


def load_bench(script: str) -> ModuleType:
    """bench/SCRIPT.py as the module SCRIPT (registered, so its dataclasses resolve)."""
    name = script.removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
