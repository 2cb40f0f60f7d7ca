"""Running a cluster's own command-line tool (`srun`, `scancel`, `kubectl` ...) once."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolResult:
    code: int
    out: str
    err: str

    def last_error_line(self) -> str:
        lines = [line.strip() for line in (self.err or self.out).splitlines() if line.strip()]
        return lines[-1] if lines else f"exit code {self.code}"


def run_tool(argv: list[str], *, input: str | None = None, timeout: float = 60.0) -> ToolResult:
    """Blocking (call it in a thread from asyncio). A missing tool or a timeout is a result with
    a code of its own (127, 124 as the shell says them), never an exception."""
    try:
        done = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout,
                              stdin=None if input is not None else subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        return ToolResult(127, "", f"{argv[0]}: command not found")
    except OSError as exc:
        return ToolResult(126, "", f"{argv[0]}: {exc.strerror or exc}")
    except subprocess.TimeoutExpired:
        return ToolResult(124, "", f"{' '.join(argv[:3])}: no answer after {timeout:g}s")
    return ToolResult(done.returncode, done.stdout, done.stderr)
