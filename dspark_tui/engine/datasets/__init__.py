"""Text datasets for the native client: files read, prompts drawn as sglang draws them, tokenized
by the server (or a local tokenizer), prepared once per run into the run directory."""

from __future__ import annotations

from dspark_tui.engine.datasets.files import DatasetError, shipped_prompts_path
from dspark_tui.engine.datasets.prepare import (
    dataset_problems,
    load_prompt_set,
    needs_preparing,
    peer_records,
    prepare_prompt_sets,
)

__all__ = [
    "DatasetError",
    "dataset_problems",
    "load_prompt_set",
    "needs_preparing",
    "peer_records",
    "prepare_prompt_sets",
    "shipped_prompts_path",
]
