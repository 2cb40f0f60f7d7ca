"""Log lines in vLLM's format, so supervisors and humans see what they would see from vLLM."""

from __future__ import annotations

import os
import sys
import time


def log(level: str, source: str, message: str) -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    sys.stdout.write(f"(APIServer pid={os.getpid()}) {level} {stamp} [{source}] {message}\n")
    sys.stdout.flush()


def uvicorn_log_config() -> dict[str, object]:
    """uvicorn's own lines (`Application startup complete.`) to stdout, vLLM-style prefix."""
    prefix = f"(APIServer pid={os.getpid()}) "
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": prefix + "%(levelname)s:     %(message)s"}},
        "handlers": {"stdout": {"class": "logging.StreamHandler", "formatter": "plain",
                                "stream": "ext://sys.stdout"}},
        "loggers": {
            "uvicorn": {"handlers": ["stdout"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": ["stdout"], "level": "INFO", "propagate": False},
        },
    }
