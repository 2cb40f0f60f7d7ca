"""vLLM's /metrics families, names, help texts and labels, built with prometheus_client.

Per-step observations (inter-token latency, tokens per step) are recorded in bulk: one step
gives the same latency to every sequence it advanced, so a whole step is one bucket update.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from dspark_tui.sim.scheduler import StepResult

LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
TOKEN_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                         5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
TOKEN_COUNT_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0,
                       5000.0, 10000.0, 20000.0)
ITERATION_BUCKETS = (1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0,
                     8192.0, 16384.0)
PREEMPTION_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0)
FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")

# Families the simulated engine never moves, exposed at zero so the page has vLLM's shape.
_IDLE_COUNTERS = {
    "vllm:estimated_flops_per_gpu": "Estimated number of floating point operations per GPU "
    "(for Model Flops Utilization calculations).",
    "vllm:estimated_read_bytes_per_gpu": "Estimated number of bytes read from memory per GPU "
    "(for Model Flops Utilization calculations).",
    "vllm:estimated_write_bytes_per_gpu": "Estimated number of bytes written to memory per GPU "
    "(for Model Flops Utilization calculations).",
    "vllm:external_prefix_cache_queries": "External prefix cache queries from KV connector "
    "cross-instance cache sharing, in terms of number of queried tokens.",
    "vllm:external_prefix_cache_hits": "External prefix cache hits from KV connector "
    "cross-instance cache sharing, in terms of number of cached tokens.",
    "vllm:mm_cache_queries": "Multi-modal cache queries, in terms of number of queried items.",
    "vllm:mm_cache_hits": "Multi-modal cache hits, in terms of number of cached items.",
}
_CACHED_BY_SOURCE_HELP = (
    "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host "
    "(offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or "
    "external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + "
    "vllm:external_prefix_cache_hits.")


class BulkHistogram:
    """A histogram that takes `count` equal observations at the cost of one."""

    def __init__(self, name: str, documentation: str, buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = list(buckets)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float, count: int = 1) -> None:
        if count <= 0:
            return
        self.counts[bisect_left(self.bounds, value)] += count
        self.sum += value * count

    def families(self, labels: dict[str, str]) -> list[Metric]:
        cumulative, running = [], 0
        for bound, count in zip([*self.bounds, float("inf")], self.counts, strict=True):
            running += count
            cumulative.append(("+Inf" if bound == float("inf") else repr(float(bound)), running))
        histogram = HistogramMetricFamily(self.name, self.documentation,
                                          labels=list(labels))
        histogram.add_metric(list(labels.values()), cumulative, self.sum)
        created = GaugeMetricFamily(f"{self.name}_created", self.documentation,
                                    labels=list(labels))
        created.add_metric(list(labels.values()), self.created)
        return [histogram, created]


class _BulkCollector(Collector):
    def __init__(self, histograms: Iterable[BulkHistogram], labels: dict[str, str]) -> None:
        self.histograms = list(histograms)
        self.labels = labels

    def collect(self) -> Iterable[Metric]:
        for histogram in self.histograms:
            yield from histogram.families(self.labels)


class SimMetrics:
    """The engine's metrics; the engine calls `record_step` and `record_finished`."""

    def __init__(self, model_name: str, spec_tokens: int, kv_capacity_tokens: int,
                 block_size: int, kv_cache_dtype: str = "auto") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        names = ["engine", "model_name"]
        labels = {"engine": "0", "model_name": model_name}
        reg = self.registry
        GCCollector(registry=reg)
        PlatformCollector(registry=reg)
        ProcessCollector(registry=reg)

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, names, registry=reg)

        def gauge(name: str, doc: str, extra: Sequence[str] = ()) -> Gauge:
            return Gauge(name, doc, [*names, *extra], registry=reg)

        def histogram(name: str, doc: str, buckets: Sequence[float]) -> Histogram:
            return Histogram(name, doc, names, buckets=buckets, registry=reg)

        self.drafts = counter("vllm:spec_decode_num_drafts",
                              "Number of spec decoding drafts.").labels(**labels)
        self.draft_tokens = counter("vllm:spec_decode_num_draft_tokens",
                                    "Number of draft tokens.").labels(**labels)
        self.accepted = counter("vllm:spec_decode_num_accepted_tokens",
                                "Number of accepted tokens.").labels(**labels)
        per_pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                          "Accepted tokens per draft position.", [*names, "position"], registry=reg)
        self.accepted_per_pos = [per_pos.labels(**labels, position=str(i)) for i in range(spec_tokens)]
        self.running = gauge("vllm:num_requests_running",
                             "Number of requests in model execution batches.").labels(**labels)
        self.waiting = gauge("vllm:num_requests_waiting",
                             "Number of requests waiting to be processed.").labels(**labels)
        by_reason = gauge(
            "vllm:num_requests_waiting_by_reason",
            "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
            "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, "
            "KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
            ["reason"])
        self.waiting_capacity = by_reason.labels(**labels, reason="capacity")
        by_reason.labels(**labels, reason="deferred").set(0)
        sleep = gauge("vllm:engine_sleep_state",
                      "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means "
                      "engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = "
                      "1 means sleep level 2.", ["sleep_state"])
        sleep.labels(**labels, sleep_state="awake").set(1)
        sleep.labels(**labels, sleep_state="weights_offloaded").set(0)
        sleep.labels(**labels, sleep_state="discard_all").set(0)
        self.kv_usage = gauge("vllm:kv_cache_usage_perc",
                              "KV-cache usage. 1 means 100 percent usage.").labels(**labels)
        self.prefix_queries = counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.").labels(**labels)
        counter("vllm:prefix_cache_hits",
                "Prefix cache hits, in terms of number of cached tokens.").labels(**labels)
        self.preemptions = counter("vllm:num_preemptions",
                                   "Cumulative number of preemption from the engine.").labels(**labels)
        self.prompt_tokens = counter("vllm:prompt_tokens",
                                     "Number of prefill tokens processed.").labels(**labels)
        by_source = Counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.",
                            [*names, "source"], registry=reg)
        self.prompt_local = by_source.labels(**labels, source="local_compute")
        by_source.labels(**labels, source="local_cache_hit")
        by_source.labels(**labels, source="external_kv_transfer")
        counter("vllm:prompt_tokens_cached",
                "Number of cached prompt tokens (local + external).").labels(**labels)
        cached_by_source = Counter("vllm:prompt_tokens_cached_by_source", _CACHED_BY_SOURCE_HELP,
                                   [*names, "source"], registry=reg)
        for source in ("device", "host", "p2p", "disk", "external_unspecified"):
            cached_by_source.labels(**labels, source=source)
        for name, doc in _IDLE_COUNTERS.items():
            counter(name, doc).labels(**labels)
        rejections = Counter("vllm:admission_rejections",
                             "Number of admission attempts rejected by a queue limit, by reason.",
                             ["model_name", "reason"], registry=reg)
        for reason in ("max_num_queued_reqs", "max_num_queued_tokens"):
            rejections.labels(model_name=model_name, reason=reason)
        self.generation_tokens = counter("vllm:generation_tokens",
                                         "Number of generation tokens processed.").labels(**labels)
        success = Counter("vllm:request_success", "Count of successfully processed requests.",
                          [*names, "finished_reason"], registry=reg)
        self.success = {r: success.labels(**labels, finished_reason=r) for r in FINISHED_REASONS}
        self.request_prompt_tokens = histogram("vllm:request_prompt_tokens",
                                               "Number of prefill tokens processed.",
                                               TOKEN_COUNT_BUCKETS).labels(**labels)
        self.request_generation_tokens = histogram("vllm:request_generation_tokens",
                                                   "Number of generation tokens processed.",
                                                   TOKEN_COUNT_BUCKETS).labels(**labels)
        self.request_max_tokens = histogram(
            "vllm:request_max_num_generation_tokens",
            "Histogram of maximum number of requested generation tokens.",
            TOKEN_COUNT_BUCKETS).labels(**labels)
        self.request_params_n = histogram("vllm:request_params_n",
                                          "Histogram of the n request parameter.",
                                          (1.0, 2.0, 5.0, 10.0, 20.0)).labels(**labels)
        self.request_params_max_tokens = histogram(
            "vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.",
            TOKEN_COUNT_BUCKETS).labels(**labels)
        self.ttft = histogram("vllm:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.",
                              TTFT_BUCKETS).labels(**labels)
        self.tpot = histogram("vllm:request_time_per_output_token_seconds",
                              "Histogram of time_per_output_token_seconds per request.",
                              TOKEN_LATENCY_BUCKETS).labels(**labels)
        self.e2e = histogram("vllm:e2e_request_latency_seconds",
                             "Histogram of e2e request latency in seconds.",
                             LATENCY_BUCKETS).labels(**labels)
        self.queue_time = histogram("vllm:request_queue_time_seconds",
                                    "Histogram of time spent in WAITING phase for request.",
                                    LATENCY_BUCKETS).labels(**labels)
        self.inference_time = histogram("vllm:request_inference_time_seconds",
                                        "Histogram of time spent in RUNNING phase for request.",
                                        LATENCY_BUCKETS).labels(**labels)
        self.prefill_time = histogram("vllm:request_prefill_time_seconds",
                                      "Histogram of time spent in PREFILL phase for request.",
                                      LATENCY_BUCKETS).labels(**labels)
        self.decode_time = histogram("vllm:request_decode_time_seconds",
                                     "Histogram of time spent in DECODE phase for request.",
                                     LATENCY_BUCKETS).labels(**labels)
        self.prefill_kv_computed = histogram(
            "vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            TOKEN_COUNT_BUCKETS).labels(**labels)
        self.request_preemptions = histogram("vllm:request_num_preemptions",
                                             "Histogram of the number of times a request was preempted.",
                                             PREEMPTION_BUCKETS).labels(**labels)
        self.itl = BulkHistogram("vllm:inter_token_latency_seconds",
                                 "Histogram of inter-token latency in seconds.",
                                 TOKEN_LATENCY_BUCKETS)
        self.iteration_tokens = BulkHistogram("vllm:iteration_tokens_total",
                                              "Histogram of number of tokens per engine_step.",
                                              ITERATION_BUCKETS)
        reg.register(_BulkCollector([self.itl, self.iteration_tokens], labels))
        info = Gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                     ["block_size", "cache_dtype", "engine", "num_gpu_blocks"], registry=reg)
        info.labels(block_size=str(block_size), cache_dtype=kv_cache_dtype, engine="0",
                    num_gpu_blocks=str(kv_capacity_tokens // block_size)).set(1)

    def record_step(self, step: StepResult, wall_duration: float) -> None:
        """The counters one engine step moved (the scheduler's StepResult), and its latency."""
        if step.num_drafts:
            self.drafts.inc(step.num_drafts)
            self.draft_tokens.inc(step.draft_tokens)
            self.accepted.inc(step.accepted_tokens)
            for child, value in zip(self.accepted_per_pos, step.accepted_per_pos, strict=False):
                if value:
                    child.inc(value)
        if step.prompt_tokens:
            self.prompt_tokens.inc(step.prompt_tokens)
            self.prompt_local.inc(step.prompt_tokens)
            self.prefix_queries.inc(step.prompt_tokens)
        if step.generation_tokens:
            self.generation_tokens.inc(step.generation_tokens)
        if step.preemptions:
            self.preemptions.inc(step.preemptions)
        self.itl.observe(wall_duration, step.num_decoding)
        self.iteration_tokens.observe(float(step.batch_tokens))

    def record_queue(self, running: int, waiting: int, kv_usage: float) -> None:
        self.running.set(running)
        self.waiting.set(waiting)
        self.waiting_capacity.set(waiting)
        self.kv_usage.set(round(kv_usage, 4))

    def record_arrival(self, max_tokens: int) -> None:
        self.request_params_n.observe(1)
        self.request_params_max_tokens.observe(max_tokens)
        self.request_max_tokens.observe(max_tokens)

    def record_first_token(self, ttft_s: float) -> None:
        self.ttft.observe(ttft_s)

    def record_finished(self, *, reason: str, prompt_tokens: int, output_tokens: int,
                        e2e_s: float, queue_s: float, prefill_s: float, decode_s: float,
                        preemptions: int) -> None:
        self.success.get(reason, self.success["error"]).inc()
        if reason == "abort":
            return
        self.request_prompt_tokens.observe(prompt_tokens)
        self.prefill_kv_computed.observe(prompt_tokens)
        self.request_generation_tokens.observe(output_tokens)
        self.e2e.observe(e2e_s)
        self.queue_time.observe(queue_s)
        self.inference_time.observe(prefill_s + decode_s)
        self.prefill_time.observe(prefill_s)
        self.decode_time.observe(decode_s)
        self.request_preemptions.observe(preemptions)
        if output_tokens > 1:
            self.tpot.observe(decode_s / (output_tokens - 1))
