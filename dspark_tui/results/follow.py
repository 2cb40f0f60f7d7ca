"""Following a run's events.jsonl as it grows: how the TUI and `attach` watch a runner."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.model.events import Event
from dspark_tui.results.store import EVENTS, read_events_from


class EventFollower:
    """Each poll() returns the events appended since the last one (complete lines only)."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / EVENTS
        self.offset = 0

    def poll(self) -> list[Event]:
        events, self.offset = read_events_from(self.path, self.offset)
        return events
