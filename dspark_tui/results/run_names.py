"""A run named the way `dspark-tui runs` prints it: a path, a directory name under the results
folders, or a unique prefix of one. Every command that takes a run directory accepts all three."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from dspark_tui.model import UserError
from dspark_tui.results.scan import run_dirs

SHOWN = 5


def find_run(given: Path, roots: Iterable[Path]) -> Path:
    """`given` as it is when it is a directory (or names a path: a missing path is the caller's
    to refuse, with its own words); else the one run under `roots` with that name, or whose
    name starts with it. None found or several: one line saying so and where it looked."""
    given = Path(given).expanduser()
    if given.is_dir() or len(given.parts) > 1 or given.is_absolute():
        return given
    roots = list(dict.fromkeys(Path(r).expanduser() for r in roots))
    runs = list(run_dirs(roots))
    exact = [path for path in runs if path.name == given.name]
    if len(exact) == 1:
        return exact[0]
    matches = exact or [path for path in runs if path.name.startswith(given.name)]
    if len(matches) == 1:
        return matches[0]
    where = ", ".join(map(str, roots))
    if not matches:
        raise UserError(f"{given}: no such run directory, nor a run of that name in {where} "
                        "(list runs with `dspark-tui runs`)")
    names = sorted({path.name for path in matches})
    shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
    raise UserError(f"{given}: {len(matches)} runs match ({shown}); give more of the name or a path")
