"""The contract every benchmark client fulfils: one cell in, one CellResult out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dspark_tui.model import BenchConfig, CellResult, CellSpec
from dspark_tui.model.events import CellProgress


class CellError(Exception):
    """The cell could not produce a result; str() is the one-line reason saved with it."""


ProgressCallback = Callable[[CellProgress], None]


@dataclass
class DriverContext:
    """What a driver needs to know about the server under test and where to leave files."""

    base_url: str  # http://127.0.0.1:8000, no trailing slash
    host: str
    port: int
    served_model_name: str
    model_path: str  # tokenizer path for the external clients
    bench: BenchConfig
    raw_dir: Path  # this arm's raw/ folder; drivers name their files after the cell
    extra_env: dict[str, str] = field(default_factory=dict)
    # The run directory: text datasets' prompts are read from its prompts/ (engine/datasets).
    run_dir: Path | None = None
    # The plan's secret values (Plan.secrets): scrubbed from a server's error body before a
    # driver keeps it (raw/, the cell's error).
    secrets: frozenset[str] = frozenset()
    # The served model's vocabulary that `random-ids` ids are drawn below (engine/datasets/
    # vocab.py); None: DEFAULT_VOCAB_SIZE, as before the run knew it.
    vocab_size: int | None = None


class BenchDriver(Protocol):
    name: str

    async def run(self, cell: CellSpec, ctx: DriverContext, on_progress: ProgressCallback) -> CellResult:
        """Run one cell. Raise CellError on failure. On cancellation, stop every child process."""
        ...
