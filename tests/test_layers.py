"""The layering of docs/architecture.md, checked on the source: dependencies point downward only."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dspark_tui"

# layer -> the internal layers it may import (itself always allowed)
ALLOWED = {
    "model": set(),
    "results": {"model"},
    "report": {"model", "results"},
    "engine": {"model", "results", "report", "plans", "config"},
    "sim": {"model"},
    "plans": {"model"},
    "config": {"model", "results"},
    "commands": {"model", "results", "report", "engine", "plans", "config", "sim"},
    "cli": {"model", "results", "report", "engine", "plans", "config", "commands", "sim", "tui"},
    "tui": {"model", "results", "report", "engine", "plans", "config"},
    "__init__": set(),
    "__main__": {"cli"},
}
UI_ONLY = ("textual", "rich.live")
# engine calls report only to write report.md at the end of a run (see architecture.md).


def _layer(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_layers(path: Path):
    layer = _layer(path)
    assert layer in ALLOWED, f"{path}: unknown layer {layer!r}; add it to docs and this test"
    for name in _imports(path):
        if layer != "tui":
            assert not name.startswith(UI_ONLY), f"{path}: imports {name}, only tui/ may"
        if name.startswith("dspark_tui."):
            target = name.split(".")[1]
            if target in (layer, "__init__") or target == "":
                continue
            assert target in ALLOWED[layer], f"{path}: layer {layer} must not import dspark_tui.{target}"
        elif name == "dspark_tui":
            continue
