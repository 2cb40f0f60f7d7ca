"""The result directory: everything a run knows, written atomically, read back defensively."""

from dspark_tui.results.atomic import atomic_write_text
from dspark_tui.results.manifest import RunManifest, manifest_for_plan
from dspark_tui.results.scan import RunSummary, scan_runs
from dspark_tui.results.store import CellProblem, RunStore, load_run

__all__ = [
    "CellProblem",
    "RunManifest",
    "RunStore",
    "RunSummary",
    "atomic_write_text",
    "load_run",
    "manifest_for_plan",
    "scan_runs",
]
