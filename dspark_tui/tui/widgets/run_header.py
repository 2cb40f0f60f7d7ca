"""The run's one-glance line: name, each arm's server, cells done / failed / total, time."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from dspark_tui.model.run_state import RunState
from dspark_tui.tui import format as fmt


class RunHeader(Static):
    DEFAULT_CSS = """
    RunHeader { height: auto; max-height: 4; background: $panel; color: $foreground; padding: 0 1; }
    """

    _last = ""

    def show(self, state: RunState, now: float, mode: str) -> None:
        theme = self.app.current_theme
        status = "paused" if state.paused and not state.finished else state.status
        status_style = {"completed": theme.success, "failed": theme.error, "aborted": theme.warning,
                        "interrupted": theme.warning, "paused": theme.warning}.get(status, theme.accent)
        text = Text()
        text.append(state.name or "run", style="bold")
        text.append(f"  [{status}]", style=f"bold {status_style}")
        if mode:
            text.append(f"  {mode}")
        text.append(f"   cells {state.done}/{state.total}")
        if state.failed:
            text.append(f"  failed {state.failed}", style=f"bold {theme.error}")
        if state.skipped:
            text.append(f"  skipped {state.skipped}")
        text.append(f"   elapsed {fmt.duration(state.elapsed(now))}")
        text.append(f"  ETA {fmt.duration(state.eta(now))}")
        for arm in state.arms.values():
            text.append("\n")
            text.append(f"{arm.name}: ", style="bold")
            text.append(arm.server_state)
            detail = arm.progress_line or arm.message
            if detail and arm.server_state not in ("pending", "stopped"):
                text.append(f"  {detail}"[:160], style="italic")
        if text.markup != self._last:
            self._last = text.markup
            self.update(text)
