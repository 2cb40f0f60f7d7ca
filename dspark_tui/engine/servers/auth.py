"""The one way a request to the served model carries the plan's API key."""

from __future__ import annotations


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """`Authorization: Bearer KEY` as OpenAI-compatible servers expect it; nothing without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
