"""What must never be written to run.json, events or logs: API keys, tokens, passwords."""

from __future__ import annotations

import re

REDACTED = "***"
_SECRET_NAME = re.compile(r"api[-_]?key|(^|[-_])token$|secret|password", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """`--api-key`, `HF_TOKEN`, `VLLM_API_KEY`: yes; `--spec-tokens`, `max_num_batched_tokens`: no."""
    return bool(_SECRET_NAME.search(name.lstrip("-")))


def redact_argv(argv: list[str]) -> list[str]:
    """The command as it may be shown or saved: values of key/token/secret flags hidden."""
    shown: list[str] = []
    hide_next = False
    for part in argv:
        if hide_next:
            shown.append(REDACTED)
            hide_next = False
        elif part.startswith("-") and "=" in part and is_secret_name(part.split("=", 1)[0]):
            shown.append(part.split("=", 1)[0] + "=" + REDACTED)
        else:
            shown.append(part)
            hide_next = part.startswith("-") and is_secret_name(part)
    return shown


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {name: REDACTED if is_secret_name(name) else value for name, value in env.items()}
