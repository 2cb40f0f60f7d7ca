"""docs/architecture.md stays true to the tree: every module or folder it names exists."""

from __future__ import annotations

import re

from tests.conftest import REPO

MAP = REPO / "docs" / "architecture.md"
PATH = re.compile(r"`([a-z_/]+(?:\.py|/))`")


def _named_paths(text: str) -> set[str]:
    return {m for m in PATH.findall(text) if "/" in m.rstrip("/") or m.endswith((".py", "/"))}


def _exists(name: str) -> bool:
    """A path resolves from the repository, the package or the engine; a bare file name (the
    tables say `estimate.py` in sim/'s row) is some module of that name in the package."""
    bases = [REPO, REPO / "dspark_tui", REPO / "dspark_tui" / "engine", REPO / "tests"]
    if any((base / name).exists() for base in bases):
        return True
    return "/" not in name and any((REPO / "dspark_tui").rglob(name))


def test_every_path_the_map_names_exists():
    text = MAP.read_text(encoding="utf-8")
    missing = sorted(name for name in _named_paths(text) if not _exists(name))
    assert not missing, f"docs/architecture.md names paths that are gone: {missing}"


def test_the_check_sees_a_path_that_is_gone():
    assert not _exists("engine/no_such_wing/")
    assert not _exists("no_such_module.py")
    assert "engine/no_such_wing/" in _named_paths("see `engine/no_such_wing/` and `x.py`")
