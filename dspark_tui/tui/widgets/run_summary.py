"""The answer at the top of the run screen once a run has ended: what to deploy for which load,
how sure, the caveat — the same summary that opens the report."""

from __future__ import annotations

import logging
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown
from textual.worker import Worker, WorkerState

log = logging.getLogger("dspark_tui.tui")


def summary_markdown(run_dir: Path, lang: str) -> str:
    """The run's headline as Markdown: the lines that open its report."""
    from dspark_tui.report.headline import headline_markdown
    from dspark_tui.results import load_run

    return headline_markdown(load_run(run_dir), lang)


class RunSummary(VerticalScroll):
    """Hidden while the run goes; `load` reads the finished run in a thread and shows it."""

    DEFAULT_CSS = """
    RunSummary {
        height: auto; max-height: 50%; display: none; padding: 0 1;
        border-bottom: solid $panel;
    }
    RunSummary.-shown { display: block; }
    RunSummary Markdown { margin: 0; padding: 0; }
    RunSummary MarkdownH1, RunSummary MarkdownH2 { margin: 0; padding: 0; }
    RunSummary MarkdownBulletList { margin: 0; padding: 0; }
    RunSummary MarkdownParagraph { margin: 0; }
    """

    def compose(self) -> ComposeResult:
        yield Markdown("", id="summary-text")

    def load(self, run_dir: Path, lang: str) -> None:
        self.run_worker(lambda: summary_markdown(run_dir, lang), thread=True, exclusive=True,
                        exit_on_error=False, group="summary", description="the run's summary")

    def hide(self) -> None:
        self.remove_class("-shown")

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "summary":
            return
        event.stop()
        if event.state == WorkerState.SUCCESS:
            await self.query_one(Markdown).update(str(event.worker.result))
            self.add_class("-shown")
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            log.error("the run's summary failed", exc_info=error)
            await self.query_one(Markdown).update(
                f"*no summary: {type(error).__name__}: {error}*")
            self.add_class("-shown")
