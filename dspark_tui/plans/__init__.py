"""Plans shipped in the package, named by file stem (`demo`, `dspark-st3-vs-st5`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from dspark_tui.model import Plan, PlanError, load_plan, parse_plan


def shipped_plan_names() -> list[str]:
    folder = resources.files(__name__)
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def shipped_plan_text(name: str) -> str:
    resource = resources.files(__name__) / f"{name}.toml"
    if not resource.is_file():
        known = ", ".join(shipped_plan_names())
        raise PlanError(f"no shipped plan named {name!r} (shipped: {known})")
    return resource.read_text(encoding="utf-8")


def resolve_plan(name_or_path: str, user_plans_dir: Path | None = None) -> tuple[Plan, str]:
    """A path if one exists, else a user plan, else a shipped plan. Returns (plan, source)."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".toml" or path.exists() or "/" in name_or_path:
        return load_plan(path), str(path)
    if user_plans_dir is not None:
        candidate = user_plans_dir / f"{name_or_path}.toml"
        if candidate.is_file():
            return load_plan(candidate), str(candidate)
    text = shipped_plan_text(name_or_path)
    source = f"{name_or_path}.toml (shipped)"
    return parse_plan(text, source), source
