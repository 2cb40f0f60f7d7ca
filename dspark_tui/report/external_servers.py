"""What a report says about arms whose server something else runs (plan `url`): one header line
per arm from what the server said about itself (run.json), and the note that such a server was
never restarted between rounds, so rounds are no sessions (docs/statistics.md)."""

from __future__ import annotations

from typing import Any

from dspark_tui.analysis.verdicts import RunVerdicts
from dspark_tui.report.words import Texts
from dspark_tui.results.manifest import RunManifest

# Labels worth a place in one header line when the arms do not differ in any (vLLM's
# cache_config_info has fourteen).
KEY_LABELS = ("cache_dtype", "block_size", "num_gpu_blocks", "gpu_memory_utilization")
MAX_LABELS = 6
SKIPPED_FAMILIES = ("python_info",)  # the interpreter, not the server's configuration


def external_server_lines(manifest: RunManifest, t: Texts) -> list[str]:
    servers = {arm.name: arm.external_server for arm in manifest.arms if arm.external_server}
    differing = _differing_labels(list(servers.values()))
    lines = []
    for name, server in servers.items():
        details = []
        if server.get("version"):
            details.append(f"vLLM {server['version']}")
        details += _labels(server.get("info") or {}, differing)
        text = ", " + ", ".join(details) if details else ""
        lines.append(t("external_server", arm=name, url=server.get("url", "?"), details=text))
    return lines


def _flat(info: dict[str, Any]) -> dict[str, str]:
    """family label -> value over the *_info families worth showing."""
    return {label: str(value) for family, labels in info.items()
            if family not in SKIPPED_FAMILIES and isinstance(labels, dict)
            for label, value in labels.items() if label != "engine"}


def _differing_labels(servers: list[dict[str, Any]]) -> list[str]:
    flats = [_flat(s.get("info") or {}) for s in servers]
    names = list(dict.fromkeys(label for flat in flats for label in flat))
    return [n for n in names if len({flat.get(n) for flat in flats}) > 1] if len(flats) > 1 else []


def _labels(info: dict[str, Any], differing: list[str]) -> list[str]:
    flat = _flat(info)
    chosen = [n for n in differing if n in flat] or [n for n in KEY_LABELS if n in flat]
    return [f"{name}={flat[name]}" for name in chosen[:MAX_LABELS]]


def unreplicated_note(verdicts: RunVerdicts | None, t: Texts) -> str:
    """The how-sure line's note when an arm's server was never restarted; empty otherwise."""
    settings = verdicts.settings if verdicts is not None else None
    if settings is None or not settings.external_arms:
        return ""
    arms = t.join(f"`{arm}`" for arm in settings.external_arms)
    if settings.prior is None:
        return t("summary_unreplicated", arms=arms)
    prior = f"sd {settings.prior.sd:g}, df {settings.prior.df} {settings.prior_source}".strip()
    return t("summary_unreplicated_prior", arms=arms, prior=prior)
