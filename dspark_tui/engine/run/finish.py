"""What a runner leaves behind when it ends, however it ends: results.csv, the reports, and
run.json's status (with the count of cells whose every planned measurement is ok)."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from pathlib import Path

from dspark_tui.model import shown
from dspark_tui.model.events import Event, Notice, RunStatus
from dspark_tui.results import RunStore, load_run
from dspark_tui.results.manifest import now_iso

Emit = Callable[[Event], None]


def write_outputs(store: RunStore, emit: Emit, status: RunStatus, charts: bool = True) -> None:
    """results.csv, then report.md, report.en.md, analysis.json (and schedule.json for a K
    sweep) and, unless `charts` is false, the charts, all from one reading of the run's files.
    They are written before run.json is closed (so a watcher that sees the run ended finds
    them), hence told the status the run ends with: read from run.json they said "Incomplete
    run (still running)" of every finished run."""
    run = load_run(store.path)
    run.manifest.status = status
    try:
        store.write_results_csv(run.measurements)
    except OSError as exc:
        emit(Notice(level="error", message=f"results.csv not written: {exc}"))
    if not run.measurements:
        return
    try:
        from dspark_tui.report.outputs import write_outputs as write_report_files

        write_report_files(run, charts=charts)
    except Exception as exc:  # the results are safe; a report bug must not hide them
        emit(Notice(level="error", message=f"report.md not written: {type(exc).__name__}: "
                    f"{exc} (retry: dspark-tui report {store.path})"))


def close_manifest(store: RunStore, status: RunStatus, message: str, cells_ok: int,
                   emit: Emit) -> None:
    manifest = store.read_manifest()
    manifest.status = status
    manifest.finished_at = now_iso()
    manifest.cells_ok = cells_ok
    if message and status != "completed":
        manifest.notes.append(f"{dt.datetime.now():%Y-%m-%d %H:%M:%S} {status}: {message}")
    try:
        store.write_manifest(manifest)
    except OSError as exc:
        # run.json still says running; with its runner gone, History shows it interrupted.
        emit(Notice(level="error", message=f"run.json not updated: {exc.strerror or exc}"))


def drop_heartbeat(store: RunStore) -> None:
    with contextlib.suppress(OSError):
        (store.path / "heartbeat").unlink()


ANSWER_FILES = ("report.md", "report.en.md", "analysis.json", "schedule.json")


def answer_lines(run_dir: Path, lang: str) -> list[str]:
    """What the log of a headless run ends with: the report's opening answer (what to deploy for
    which load, how sure, the caveat) as plain lines, and where the reports are. Computed from
    the run's files, so `attach --headless` ends the same way as the run itself."""
    lines: list[str] = []
    try:
        from dspark_tui.report.headline import headline_markdown

        run = load_run(run_dir)
        if run.measurements:
            text = headline_markdown(run, lang)
            lines.append("summary:")
            lines += [f"  {line.replace('**', '')}" for line in text.splitlines() if line.strip()]
    except Exception as exc:  # the run is saved; a summary that cannot be made says why
        lines.append(f"summary not available: {type(exc).__name__}: {exc} "
                     f"(dspark-tui report {run_dir})")
    written = [str(run_dir / name) for name in ANSWER_FILES if (run_dir / name).is_file()]
    if written:
        lines.append("reports: " + "  ".join(written))
    return [shown.plain(line) for line in lines]  # a crafted run's names reach no terminal
