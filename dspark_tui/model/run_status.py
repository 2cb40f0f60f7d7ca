"""How a run's end reads in every view: the status, and the cells the user skipped.

A cell the user skipped is not a failure: the runner ends such a run `completed` (its message
counts the skips), and the views say "completed, 1 skipped" so nobody takes it for a full run.
The TUI's header and cell panel, the headless printer, `runs`, History and the report all use
this one wording.
"""

from __future__ import annotations


def run_status_label(status: str, *, skipped: int = 0) -> str:
    """`completed, 1 skipped`; other statuses as they are (their message says why)."""
    if status == "completed" and skipped > 0:
        return f"completed, {skipped} skipped"
    return status


def skipped_of_completed(cells_total: int, cells_ok: int) -> int:
    """A completed run's skipped cells from run.json's counts alone (History and `runs` have no
    events): only a user skip leaves a completed run short of ok cells."""
    return max(0, cells_total - cells_ok)
