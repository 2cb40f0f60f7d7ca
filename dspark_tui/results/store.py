"""Reading and writing one run directory (layout in docs/results-format.md).

Writers make each file whole or not at all; readers skip what they cannot trust and say why,
so one torn file never hides the rest of a run.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from dspark_tui.model import CellKey, CellResult, UserError, numbers, safe_files, safe_name, shown
from dspark_tui.model.cell import CELL_SCHEMA_VERSION
from dspark_tui.model.events import Event, RoundPlanned, file_json, parse_event
from dspark_tui.model.lane_board import superseded_lines_dropped
from dspark_tui.results.atomic import atomic_write_text
from dspark_tui.results.jsonl import read_complete_lines
from dspark_tui.results.manifest import RunManifest, newer_run_schema
from dspark_tui.results.run_lock import RunLock

RUN_JSON = "run.json"
_SESSION_LOG = re.compile(r"-s(\d+)\.log$")
_ROUND_PLANNED_MARK = b'"round_planned"'
EVENTS = "events.jsonl"
RESULTS_CSV = "results.csv"
REPORT = "report.md"

EXAMPLES = 3  # problems listed one by one; beyond that, a count and this many examples

# Events worth an fsync: losing them would lose a state change, not just a sample.
_DURABLE_KINDS = {"run_started", "run_finished", "cell_finished", "cell_failed", "server_state"}


@dataclass
class CellProblem:
    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class LoadedRun:
    """`measurements`: every valid record, any status; `cells`: per cell the latest ok
    measurement, else the latest one (what a one-measurement-per-cell view shows)."""

    path: Path
    manifest: RunManifest
    cells: dict[CellKey, CellResult]
    problems: list[CellProblem] = field(default_factory=list)
    measurements: list[CellResult] = field(default_factory=list)

    def ok_cells(self) -> list[CellResult]:
        return [c for c in self.cells.values() if c.ok]


class RunStore:
    """One run directory. Safe to use from one writer and any number of readers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # The writer's hold on the directory (run_lock.py), when this store was made to write it.
        self.lock: RunLock | None = None
        # Whether this writer has checked that events.jsonl ends in a newline (append_event).
        self._events_mended = False

    @classmethod
    def create(cls, root: str | Path, manifest: RunManifest, when: dt.datetime | None = None,
               *, locked: bool = False) -> RunStore:
        """A new run directory; `locked`: its lock is taken before run.json exists, so no
        resume can ever find it unlocked before its runner has started (store.lock holds it)."""
        root = Path(root).expanduser()
        stamp = (when or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
        base = f"{safe_name(manifest.name)}_{stamp}"
        try:
            root.mkdir(parents=True, exist_ok=True)
            for n in range(1000):
                candidate = root / (base if n == 0 else f"{base}-{n}")
                try:
                    candidate.mkdir()
                    break
                except FileExistsError:
                    continue
            else:
                raise UserError(f"{root}: cannot find a free run directory name for {base}")
        except OSError as exc:  # no permission, a file in the way, a read-only or full disk
            reason = exc.strerror or str(exc)
            raise UserError(f"{root}: cannot create a run directory there ({reason})") from None
        store = cls(candidate)
        if locked:
            store.lock = RunLock.acquire(candidate)
        store.write_manifest(manifest)
        return store

    # -- paths ---------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.path / RUN_JSON

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS

    @property
    def report_path(self) -> Path:
        return self.path / REPORT

    def cell_path(self, key: CellKey, round: int = 1, repeat: int = 1) -> Path:
        """`cells/{arm}/{scenario}__c{N}__r{round}p{repeat}.json`: one file a measurement."""
        return self.path / key.relpath("cells", f"{measurement_suffix(round, repeat)}.json")

    def legacy_cell_path(self, key: CellKey) -> Path:
        """Schema 1 kept one file a cell; it still loads as round 1, repeat 1."""
        return self.path / key.relpath("cells", ".json")

    def series_path(self, key: CellKey, round: int = 1, repeat: int = 1) -> Path:
        return self.path / key.relpath("series", f"{measurement_suffix(round, repeat)}.csv")

    def find_series(self, key: CellKey, round: int = 1, repeat: int = 1) -> Path:
        """The measurement's series file, or the schema 1 one of its cell (one file a cell)."""
        path = self.series_path(key, round, repeat)
        legacy = self.path / key.relpath("series", ".csv")
        return legacy if not path.exists() and legacy.exists() else path

    def raw_dir(self, arm: str, round: int = 1, repeat: int = 1) -> Path:
        """`raw/{arm}__r{round}p{repeat}/`: drivers name raw files after the cell, so each
        measurement gets its own folder (two levels below the run, as drivers expect)."""
        return self.path / "raw" / f"{safe_name(arm)}{measurement_suffix(round, repeat)}"

    def server_log_path(self, arm: str, session: str) -> Path:
        return self.path / "logs" / f"server-{safe_name(arm)}-{safe_name(session)}.log"

    def sessions_used(self) -> int:
        """The highest session number `sN` any runner of this run has started a server under,
        from the logs it leaves (a start that failed or was aborted has a log, but no
        session_started event), so a resume never reuses one."""
        numbers = [int(m.group(1)) for path in (self.path / "logs").glob("server-*-s*.log")
                   if (m := _SESSION_LOG.search(path.name))]
        return max(numbers, default=0)

    # -- writing -------------------------------------------------------------------------

    def write_manifest(self, manifest: RunManifest) -> None:
        atomic_write_text(self.manifest_path, manifest.model_dump_json(indent=2) + "\n")

    def save_cell(self, result: CellResult) -> Path:
        """Write one measurement whole; only a redo of the same (round, repeat) replaces it."""
        path = self.cell_path(result.key, result.round, result.repeat)
        atomic_write_text(path, result.model_dump_json(indent=2) + "\n")
        return path

    def append_event(self, event: Event) -> None:
        """One line at the end of events.jsonl (never through a FIFO or a symlink). A writer's
        first append ends a torn last line first (a full disk or a kill mid-write left it), so
        that neither its first event nor the torn one's end is lost to readers."""
        data = (file_json(event) + "\n").encode("utf-8")
        fd = safe_files.open_regular(self.events_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            if not self._events_mended:
                if _ends_torn(fd):
                    data = b"\n" + data
                self._events_mended = True
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if event.kind in _DURABLE_KINDS:
                os.fsync(fd)
        finally:
            os.close(fd)

    def write_results_csv(self, results: Iterable[CellResult]) -> Path:
        """One row a measurement, with its round, repeat, session and node."""
        rows = [measurement_row(r) for r in sorted(results, key=_cell_order)]
        buffer = io.StringIO()
        if rows:
            columns: list[str] = []
            for row in rows:
                columns.extend(k for k in row if k not in columns)
            writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        path = self.path / RESULTS_CSV
        atomic_write_text(path, buffer.getvalue())
        return path

    def report_path_for(self, lang: str) -> Path:
        """report.md is the Chinese report (as the seed); other languages get report.{lang}.md."""
        return self.report_path if lang == "zh" else self.path / f"report.{lang}.md"

    def write_report(self, text: str, lang: str = "zh") -> Path:
        path = self.report_path_for(lang)
        atomic_write_text(path, text)
        return path

    # -- reading -------------------------------------------------------------------------

    def read_manifest(self) -> RunManifest:
        try:
            raw = safe_files.read_bytes(self.manifest_path, safe_files.MANIFEST_CAP)
            _refuse_newer_manifest(raw, self.manifest_path)
            return RunManifest.model_validate_json(raw)
        except FileNotFoundError:
            raise UserError(f"{self.manifest_path}: missing (is {self.path} a run directory?)") from None
        except OSError as exc:  # unreadable, a directory, a symlink loop (the file or the run)
            raise UserError(f"{self.manifest_path}: cannot read it ({_strerror(exc)})") from None
        except (ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0]
            raise UserError(f"{self.manifest_path}: not a valid run manifest ({first})") from None

    def load_measurements(self) -> tuple[list[CellResult], list[CellProblem]]:
        """Every measurement record of the run's arms and scenarios that parses and validates, in
        file order; the rest as problems (many unreadable files as one, with examples; files of
        arms or scenarios outside the plan as one). A schema 1 file and a schema 2 file of the
        same slot: the schema 2 one wins."""
        measurements, problems = self._read_measurement_files()
        try:
            manifest = self.read_manifest()
        except UserError:  # no plan to hold them to: keep them all (load_run says why)
            return measurements, summarised(problems)
        measurements, foreign = _within_plan(measurements, manifest)
        return measurements, summarised(problems) + ([foreign] if foreign else [])

    def _read_measurement_files(self) -> tuple[list[CellResult], list[CellProblem]]:
        found: dict[tuple[CellKey, int, int], CellResult] = {}
        problems: list[CellProblem] = []
        for path in sorted((self.path / "cells").glob("*/*.json")):
            rel = str(path.relative_to(self.path))
            result, reason = read_cell_file(path)
            if result is None:
                problems.append(CellProblem(rel, reason))
                continue
            slot = (result.key, result.round, result.repeat)
            if slot not in found or result.schema_version >= found[slot].schema_version:
                found[slot] = result
        return list(found.values()), problems

    def load_cells(self) -> tuple[dict[CellKey, CellResult], list[CellProblem]]:
        """Per cell the latest ok measurement, else the latest one."""
        measurements, problems = self.load_measurements()
        return latest_per_cell(measurements), problems

    def done_slots(self) -> set[tuple[CellKey, int, int]]:
        """(cell, round, repeat) a resume must not redo: the file parses, validates and says ok."""
        measurements, _ = self.load_measurements()
        return {(m.key, m.round, m.repeat) for m in measurements if m.ok}

    def read_events(self) -> list[Event]:
        events, _ = read_events_from(self.events_path, 0)
        return events

    def read_round_plans(self) -> list[RoundPlanned]:
        """The rounds a runner announced (model/planned.py folds them), in file order. Only the
        lines that name the kind are parsed: the file is mostly metrics samples. A file that
        cannot be read announces none."""
        try:
            lines, _ = read_complete_lines(self.events_path, 0)
        except OSError:
            return []
        plans = []
        for line in lines:
            if _ROUND_PLANNED_MARK not in line:
                continue
            try:
                event = parse_event(line.strip())
            except ValueError:
                continue
            if isinstance(event, RoundPlanned):
                plans.append(event)
        return plans


def read_cell_file(path: Path) -> tuple[CellResult | None, str]:
    try:
        raw = safe_files.read_bytes(path, safe_files.CELL_CAP)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    try:
        data = numbers.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, "truncated or not JSON; skipped"
    except ValueError as exc:  # a number out of range, nesting too deep
        return None, f"invalid cell ({exc}); skipped"
    if not isinstance(data, dict):
        return None, "not a cell object; skipped"
    version = data.get("schema_version")
    if not isinstance(version, int) or version < 1:
        return None, f"cell schema version {version!r} is not one this tool knows; skipped"
    if version > CELL_SCHEMA_VERSION:
        return None, (f"cell schema version {version} was written by a newer dspark-tui "
                      f"(this one reads up to {CELL_SCHEMA_VERSION}); skipped")
    # Schema 1 (one measurement per cell) loads as round 1, repeat 1: the new fields default so.
    try:
        return CellResult.model_validate(data), ""
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        return None, f"invalid cell ({loc}: {message}); skipped"


def read_events_from(path: Path, offset: int, *,
                     catch_up: bool = False) -> tuple[list[Event], int]:
    """Events from byte `offset` on; a torn last line is left for the next read. A file that
    cannot be read (no permission, a symlink loop) is one UserError naming it. `catch_up`:
    without the lines later ones supersede (model/lane_board.py), left unparsed."""
    try:
        lines, offset = read_complete_lines(path, offset)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({_strerror(exc)})") from None
    if catch_up:
        lines = superseded_lines_dropped(lines)
    events: list[Event] = []
    for line in lines:
        try:
            events.append(parse_event(line.strip()))
        except ValueError:
            continue  # a line from a newer version, or garbage: not fatal to a reader
    return events, offset


def load_run(path: str | Path) -> LoadedRun:
    """A run for reports and browsing: a missing or bad run.json is a problem, not a failure."""
    store = RunStore(path)
    if not store.path.is_dir():
        raise UserError(f"{store.path}: no such run directory")
    problems: list[CellProblem] = []
    try:
        manifest = store.read_manifest()
    except NewerRunError:
        raise
    except UserError as exc:
        problems.append(CellProblem(RUN_JSON, str(exc).split(": ", 1)[-1]))
        manifest = RunManifest(name=store.path.name, status="unknown")
    measurements, cell_problems = store.load_measurements()
    cells = latest_per_cell(measurements)
    problems.extend(cell_problems)
    if not manifest.arms and cells:
        names: list[str] = []
        for key in cells:
            if key.arm not in names:
                names.append(key.arm)
        from dspark_tui.results.manifest import ArmInfo

        manifest.arms = [ArmInfo(name=n) for n in names]
    return names_shown(LoadedRun(path=store.path, manifest=manifest, cells=cells,
                                 problems=problems, measurements=measurements))


def names_shown(run: LoadedRun) -> LoadedRun:
    """The run with every arm and scenario name, the run's name, model and label as
    `model.shown.md_name` shows them, so that whatever reads it (the report, its charts, the
    screens) shows no control character, markup or raw HTML a crafted run.json or cell file
    put in a name. Names without such characters, every run this tool wrote, are unchanged."""
    manifest = run.manifest
    plan = manifest.plan if isinstance(manifest.plan, dict) else {}
    names = {a.name for a in manifest.arms} | set(manifest.scenarios)
    names |= {m.arm for m in run.measurements} | {m.scenario for m in run.measurements}
    for table in ("arms", "scenarios"):
        entries = plan.get(table)
        names |= {e["name"] for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)} \
            if isinstance(entries, list) else set()
    renamed = {n: shown.md_name(n) for n in names if shown.md_name(n) != n}
    labels = (manifest.name, manifest.model, manifest.backend_label)
    if not renamed and all(shown.md_name(label) == label for label in labels):
        return run

    def name(value: str) -> str:
        return renamed.get(value, value)

    manifest = manifest.model_copy(deep=True)
    manifest.name, manifest.model, manifest.backend_label = (shown.md_name(x) for x in labels)
    for arm in manifest.arms:
        arm.name = name(arm.name)
    manifest.scenarios = [name(s) for s in manifest.scenarios]
    for table in ("arms", "scenarios"):
        for entry in manifest.plan.get(table) or []:
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                entry["name"] = name(entry["name"])
    for key in ("name", "model", "backend_label"):
        if isinstance(manifest.plan.get(key), str):
            manifest.plan[key] = shown.md_name(manifest.plan[key])
    if manifest.verification is not None:
        manifest.verification.schedule_arm = name(manifest.verification.schedule_arm)
        manifest.verification.fixed_arm = name(manifest.verification.fixed_arm)
    for prompt_set in manifest.prompt_sets:
        prompt_set.scenario = name(prompt_set.scenario)
    measurements = [m.model_copy(update={"arm": name(m.arm), "scenario": name(m.scenario)})
                    for m in run.measurements]
    return LoadedRun(path=run.path, manifest=manifest, cells=latest_per_cell(measurements),
                     problems=run.problems, measurements=measurements)


def summarised(problems: list[CellProblem], examples: int = EXAMPLES) -> list[CellProblem]:
    """A handful of problems one a line; more as one line with a few examples, so that 10,000
    junk files give one warning and one line of a report, not 10,000."""
    if len(problems) <= examples:
        return problems
    shown = ", ".join(f"{p.path} ({p.reason.removesuffix('; skipped')})" for p in problems[:examples])
    return [CellProblem("cells", f"{len(problems):,} unreadable files, e.g. {shown}, …; skipped")]


def _within_plan(measurements: list[CellResult],
                 manifest: RunManifest) -> tuple[list[CellResult], CellProblem | None]:
    """Measurements of the run's own arms and scenarios, and one problem naming the others
    (copied in from another run, or left by an older plan): they stay on disk, out of the
    comparison and the counts. A run.json that names no arms or scenarios keeps everything."""
    arms = set(manifest.arm_names())
    scenarios = set(manifest.scenarios)
    kept: list[CellResult] = []
    outside: dict[str, int] = {}
    for m in measurements:
        if (arms and m.arm not in arms) or (scenarios and m.scenario not in scenarios):
            label = f"arm {m.arm!r} scenario {m.scenario!r}"
            outside[label] = outside.get(label, 0) + 1
        else:
            kept.append(m)
    if not outside:
        return kept, None
    named = ", ".join(list(outside)[:EXAMPLES]) + (", …" if len(outside) > EXAMPLES else "")
    count = sum(outside.values())
    return kept, CellProblem("cells", f"{count:,} measurement {'files' if count > 1 else 'file'} of "
                                      f"arms or scenarios outside the plan ({named}); left out "
                                      f"of the comparison")


def measurement_suffix(round: int, repeat: int) -> str:
    return f"__r{round}p{repeat}"


def latest_per_cell(measurements: Iterable[CellResult]) -> dict[CellKey, CellResult]:
    """The measurement a one-per-cell view shows: the latest ok one, else the latest one."""
    cells: dict[CellKey, CellResult] = {}
    for m in sorted(measurements, key=lambda m: (m.ok, m.round, m.repeat)):
        cells[m.key] = m
    return cells


def measurement_row(result: CellResult) -> dict[str, object]:
    """results.csv row: the cell's identity, which measurement it is, then its numbers."""
    row = result.flat_row()
    head = {k: row.pop(k) for k in ("arm", "scenario", "concurrency")}
    which = {"round": result.round, "repeat": result.repeat, "session": result.session or "",
             "node": result.node or ""}
    return {**head, **which, **row}


def _ends_torn(fd: int) -> bool:
    """Whether the file open as `fd` is not empty and does not end in a newline."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _refuse_newer_manifest(raw: bytes, path: Path) -> None:
    """A run.json from a newer version is refused; one with a number out of range or nested too
    deep is not valid (a ValueError naming it; numbers.py)."""
    try:
        data = numbers.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return  # the validation below names what is wrong
    if (newer := newer_run_schema(data)) is not None:
        raise NewerRunError(f"{path}: {newer}")


def _strerror(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


class NewerRunError(UserError):
    """A run directory this version must not read, let alone resume."""


def _cell_order(result: CellResult) -> tuple[str, int, str, int, int]:
    return (result.scenario, result.concurrency, result.arm, result.round, result.repeat)
