"""Screens that read files in a thread worker, with one way to show that a read failed.

A read can fail in ways no UserError covers (a pandas bug, a file that makes the JSON parser
give up): it must cost the screen its data, never the app.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from textual.content import Content
from textual.screen import Screen
from textual.widgets import Label
from textual.worker import Worker, WorkerState

from dspark_tui.report.words import Texts
from dspark_tui.tui import safe
from dspark_tui.tui.words import SaidBindings, lang_of

T = TypeVar("T")
LOAD_GROUP = "load"

log = logging.getLogger("dspark_tui.tui")


class LoadingScreen(SaidBindings, Screen[None]):
    """`load(read, show)` runs `read()` in a thread worker and then `show(result)` on the UI.

    A newer load cancels an older one, whose result is then dropped. Whatever fails, the read
    or the showing, ends in `load_failed`: logged, notified, and said on the ERROR_LINE label.
    """

    # The one-line title bar of History, a run's detail and Compare (a Label of this class).
    DEFAULT_CSS = """
    LoadingScreen .title-line {
        background: $panel; padding: 0 1; width: 1fr; height: 1;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    """
    ERROR_LINE: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        self._shows: dict[Worker[Any], Callable[[Any], Any]] = {}

    def load(self, read: Callable[[], T], show: Callable[[T], Any], description: str) -> Worker[T]:
        worker = self.run_worker(read, thread=True, exclusive=True, group=LOAD_GROUP,
                                 exit_on_error=False, description=description)
        self._shows[worker] = show
        return worker

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group != LOAD_GROUP or worker not in self._shows:
            return
        event.stop()  # told here, not a second time by the app
        if not worker.is_finished:
            return
        show = self._shows.pop(worker)
        if event.state == WorkerState.ERROR:
            self.load_failed(worker.description, worker.error)
        elif event.state == WorkerState.SUCCESS:
            try:
                shown = show(worker.result)
                if inspect.isawaitable(shown):
                    await shown
            except Exception as exc:  # a display bug in one screen must not end the app
                self.load_failed(worker.description, exc)

    def load_failed(self, what: str, error: BaseException | None) -> None:
        log.error("%s failed", what, exc_info=error)
        message = Texts(lang_of(self.app), "screens")("load_failed", what=what,
                                                      error=f"{type(error).__name__}: {error}")
        self.notify(message, severity="error", timeout=15)
        if self.ERROR_LINE:
            line = Content.assemble((safe.plain(message), "bold $error"))
            self.query_one(self.ERROR_LINE, Label).update(line)
