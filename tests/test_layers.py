"""The layering of docs/architecture.md, declared as import-linter contracts in pyproject.toml.

import-linter follows every import (absolute, relative, `from dspark_tui import x`, inside a
function) and, for the layers and the textual rule, every chain of imports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
_LINT = ("import sys\nfrom importlinter.cli import lint_imports\n"
         "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")


def _lint_imports(source_root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the dspark_tui package found in `source_root`, with our contracts."""
    env = {**os.environ, "PYTHONPATH": str(source_root), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", _LINT, str(PYPROJECT)], cwd=source_root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _broken(output: str) -> set[str]:
    """The names of the broken contracts (a contract with ignored imports says how many after)."""
    return {found[1] for line in output.splitlines()
            if (found := re.fullmatch(r"(.*) BROKEN(?: \(\d+ ignored imports?\))?", line))}


def test_the_layer_contracts_hold():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout


def test_every_third_party_package_names_the_layers_that_may_use_it():
    graph = grimp.build_graph("dspark_tui", include_external_packages=True, cache_dir=None)
    imported = {m for m in graph.modules if "." not in m and m != "dspark_tui"} - set(sys.stdlib_module_names)
    named = {m for c in CONTRACTS for m in [*c.get("protected_modules", []), *c.get("forbidden_modules", [])]}
    assert imported - named == set(), "add a protected contract naming the layers that may use it"
    # rich.live draws to the terminal: tui/ only (the headless printer uses rich.console and tables).
    for importer in graph.find_modules_that_directly_import("rich"):
        if not importer.startswith("dspark_tui.tui"):
            details = graph.get_import_details(importer=importer, imported="rich")
            assert not any("rich.live" in d["line_contents"] for d in details), importer


def test_a_broken_layer_is_reported(tmp_path: Path):
    """Each way around the old per-file check breaks a contract: relative imports, imports of
    the root package, and a chain that reaches textual through tui/."""
    copy = tmp_path / "dspark_tui"
    shutil.copytree(ROOT / "dspark_tui", copy, ignore=shutil.ignore_patterns("__pycache__"))
    bad = {
        "stats/bad_relative.py": "from ..results import store\n",
        "model/bad_root.py": "from dspark_tui import engine\n",
        "results/bad_pandas.py": "def frame():\n    import pandas\n    return pandas.DataFrame()\n",
        "sim/bad_stats.py": "from dspark_tui.stats import descriptive\n",
        "engine/bad_ui.py": "from dspark_tui.tui import themes\n",
        "report/bad_scipy.py": "from scipy import stats\n",
        "engine/bad_report.py": "from dspark_tui.report import markdown\n",
        "analysis/bad_words.py": "from dspark_tui.report import words\n",
        "engine/servers/bad_upward.py": "from dspark_tui.engine.run import runner\n",
    }
    for name, text in bad.items():
        (copy / name).write_text(text, encoding="utf-8")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    names = {c["id"]: c["name"] for c in CONTRACTS}
    expected = {names[i] for i in ("layers", "sim", "textual", "pandas", "scipy", "engine-report",
                                      "engine-wings")}
    assert _broken(done.stdout) == expected, done.stdout
    for name in bad:
        module = "dspark_tui." + name.removesuffix(".py").replace("/", ".")
        assert module in done.stdout, f"{module} not reported:\n{done.stdout}"
    # engine/bad_ui.py does not import textual itself: the chain through tui/ is what is caught
    assert "dspark_tui.engine.bad_ui -> dspark_tui.tui.themes" in done.stdout, done.stdout
