"""Turning user-chosen names (arm `st=3`) into path parts that every filesystem accepts."""

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(name: str) -> str:
    """`st=3` -> `st_3`. Distinct arm names must stay distinct; the plan validator checks that."""
    cleaned = _UNSAFE.sub("_", name.strip()).strip(".")
    return cleaned or "_"
