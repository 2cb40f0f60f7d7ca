"""vLLM (and vllm-dspark, which speaks vLLM's flags and /metrics): the one kind shipped now.

Measured on vLLM 0.32 (CPU build): `--spec-tokens 0` is refused ("greater than 0"),
`--spec-tokens N` alone is refused (it needs a method), and `"num_speculative_tokens": 0` in
`--speculative-config` is refused; so K = 0 means no speculative flag at all. The default
`--max-num-seqs` is 256 on GPUs under 70 GiB, 1024 above and 128 on CPU."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dspark_tui.model.kinds.base import MetricsDialect, ServerKind

VLLM_METRICS = MetricsDialect(
    counters={
        "vllm:spec_decode_num_drafts_total": "drafts",
        "vllm:spec_decode_num_draft_tokens_total": "draft_tokens",
        "vllm:spec_decode_num_accepted_tokens_total": "accepted_tokens",
        "vllm:num_preemptions_total": "preemptions",
        "vllm:prompt_tokens_total": "prompt_tokens",
        "vllm:generation_tokens_total": "generation_tokens",
    },
    per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
    gauges={
        "vllm:num_requests_running": "running",
        "vllm:num_requests_waiting": "waiting",
        "vllm:kv_cache_usage_perc": "kv_usage",
        "vllm:gpu_cache_usage_perc": "kv_usage",  # name before vLLM 0.10
    },
    kv_usage=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    label="vLLM",
    family="vllm:*",
)

# vLLM's default --max-num-seqs where the device is not known (a GPU under 70 GiB): the
# schedule's last range says "and beyond" in any case.
VLLM_DEFAULT_MAX_NUM_SEQS = 256


def vllm_default_max_num_seqs(gpu_memory_gib: float | None) -> int:
    """vLLM 0.32's default --max-num-seqs: 128 on CPU (None), 256 on a GPU under 70 GiB, 1024
    on a larger one."""
    if gpu_memory_gib is None:
        return 128
    return 1024 if gpu_memory_gib >= 70 else VLLM_DEFAULT_MAX_NUM_SEQS


class VllmKind(ServerKind):
    name = "vllm"
    label = "vLLM"
    metrics = VLLM_METRICS
    k_flags = ("--spec-tokens", "--num-speculative-tokens")
    spec_config_flag = "--speculative-config"
    k_keys = ("num_speculative_tokens", "num_speculative_tokens_per_batch_size")
    schedule_key = "num_speculative_tokens_per_batch_size"
    batch_limit_flag = "--max-num-seqs"
    default_batch_limit = VLLM_DEFAULT_MAX_NUM_SEQS

    def speculative_args(self, config: Mapping[str, Any] | None) -> list[str]:
        if not config or not config.get("num_speculative_tokens"):
            return []
        return [self.spec_config_flag, self.speculative_json(config)]

    def schedule_config(
        self, ranges: Sequence[Sequence[int]], method: str, base: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        # num_speculative_tokens is the schedule's largest K (the buffers' size; vLLM clamps
        # each range's K to it).
        max_k = max((int(r[2]) for r in ranges), default=0)
        if max_k == 0:
            return None
        config = {k: v for k, v in (base or {}).items() if k not in self.k_keys}
        config["method"] = config.get("method") or method
        config["num_speculative_tokens"] = max_k
        config[self.schedule_key] = [list(r) for r in ranges]
        return config
