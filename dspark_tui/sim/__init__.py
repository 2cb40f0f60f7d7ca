"""A simulated vllm-dspark server: vLLM's HTTP API and /metrics over a batched step model.

It stands in for the real GPU server on laptops (the demo) and in tests, so the rest of the
tool runs end to end without a GPU. Nothing but the CLI, tests and the demo plan imports it.
"""
