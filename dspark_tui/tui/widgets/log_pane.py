"""The servers' log tail, toggled on demand; fed only the lines it has not shown yet."""

from __future__ import annotations

from textual.widgets import RichLog

from dspark_tui.model.run_state import RunState
from dspark_tui.tui import safe


class LogPane(RichLog):
    DEFAULT_CSS = """
    LogPane { height: 10; border-top: solid $panel; display: none; }
    LogPane.-visible { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, max_lines=2000, wrap=False, markup=False, highlight=False)
        self._seen = 0

    def show(self, state: RunState) -> None:
        new = state.log_count - self._seen
        if new <= 0:
            return
        tail = list(state.log_tail)[-min(new, len(state.log_tail)):]
        for line in tail:
            self.write(safe.text(f"[{line.arm}] {line.line}"))  # a server prints what it likes
        self._seen = state.log_count
