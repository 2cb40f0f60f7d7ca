"""greedy/{arm}-{session}.json: one session's answers to the greedy check (model/greedy.py).
Written atomically; a file that does not read is a problem line, never an exception."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from dspark_tui.model import safe_files
from dspark_tui.model.greedy import GREEDY_SCHEMA, GreedyAnswers
from dspark_tui.model.naming import safe_name
from dspark_tui.results.atomic import atomic_write_text

GREEDY_DIR = "greedy"


def answers_path(run_dir: Path, arm: str, session: str) -> Path:
    return run_dir / GREEDY_DIR / f"{safe_name(arm)}-{session}.json"


def save_answers(run_dir: Path, answers: GreedyAnswers) -> Path:
    path = answers_path(run_dir, answers.arm, answers.session)
    atomic_write_text(path, answers.model_dump_json(indent=1))
    return path


def load_answers(run_dir: Path) -> tuple[list[GreedyAnswers], list[str]]:
    """Every readable answer file, in session order, and one line per file that is not."""
    folder = run_dir / GREEDY_DIR
    if not folder.is_dir():
        return [], []
    found: list[GreedyAnswers] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.json")):
        try:
            answers = GreedyAnswers.model_validate_json(safe_files.read_bytes(path, safe_files.RECORD_CAP))
        except (OSError, ValidationError, ValueError) as exc:
            problems.append(f"{path}: unreadable greedy answers ({_first_line(exc)})")
            continue
        if answers.schema_version > GREEDY_SCHEMA:
            problems.append(f"{path}: written by a newer dspark-tui (greedy schema "
                            f"{answers.schema_version})")
            continue
        found.append(answers)
    found.sort(key=lambda a: (_session_number(a.session), a.arm))
    return found, problems


def _session_number(session: str) -> int:
    digits = session.lstrip("s")
    return int(digits) if digits.isdigit() else 0


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
