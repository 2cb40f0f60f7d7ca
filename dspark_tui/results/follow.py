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

    def poll(self, *, catch_up: bool = False) -> list[Event]:
        """`catch_up` (a first poll, a run's whole history): without what later events
        supersede, which a watcher need not parse nor fold."""
        events, self.offset = read_events_from(self.path, self.offset, catch_up=catch_up)
        return events
