"""`serve`: vLLM-like startup, the HTTP server and the engine loop, fault switches applied."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable, Generator
from types import FrameType
from typing import TYPE_CHECKING

import uvicorn

from dspark_tui.sim.api import VLLM_VERSION, SimApi
from dspark_tui.sim.config import ServeConfig
from dspark_tui.sim.engine import LiveEngine
from dspark_tui.sim.faults import RequestFaults, flood_log, spawn_workers, stop_workers
from dspark_tui.sim.logs import log, uvicorn_log_config
from dspark_tui.sim.metrics import SimMetrics

if TYPE_CHECKING:
    from dspark_tui.sim.noise import SessionNoise

GRACEFUL_SHUTDOWN_S = 2


class _Server(uvicorn.Server):
    """uvicorn without its own signal capture: `serve` decides what SIGTERM means."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def serve(config: ServeConfig) -> int:
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    if config.faults.ignore_sigterm:
        signal.signal(signal.SIGTERM, _ignore_sigterm)
    else:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    _log_startup(config)
    if config.faults.fail_start:
        _log_failed_start(config)
        return 1
    workers = spawn_workers(config.faults.spawn_workers)
    try:
        _load_model(config)
        return asyncio.run(_serve_http(config, lambda: stop_workers(workers)))
    finally:
        stop_workers(workers)


def _ignore_sigterm(signum: int, frame: FrameType | None) -> None:
    log("WARNING", "api_server.py", "Received SIGTERM; ignoring it (--ignore-sigterm).")


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _log_startup(config: ServeConfig) -> None:
    engine = config.engine
    log("INFO", "api_server.py:1885", f"vLLM API server version {VLLM_VERSION} (dspark_tui.sim)")
    log("INFO", "utils.py:326", f"non-default args: {config.non_default_args}")
    if config.ignored_args:
        log("WARNING", "arg_utils.py:1710",
            f"Ignoring unknown arguments: {' '.join(config.ignored_args)}")
    log("INFO", "model.py:547", f"Resolved architecture: DeepseekV4ForCausalLM ({config.model})")
    if engine.spec_tokens:
        log("INFO", "speculative.py:216",
            f"Speculative decoding: method={config.spec_method}, "
            f"num_speculative_tokens={engine.spec_tokens}, "
            f"acceptance={list(engine.acceptance_for(engine.spec_tokens))}")
    if engine.adaptive_verification:
        log("INFO", "speculative.py:216", "Adaptive verification: a budget of the "
            f"{engine.spec_tokens} drafts verified per step, chosen from draft confidence")
    if engine.spec_schedule:
        log("INFO", "speculative.py:216", "Dynamic speculative decoding: "
            f"num_speculative_tokens_per_batch_size={[list(e) for e in engine.spec_schedule]} "
            "(K by running batch size, at most num_speculative_tokens)")
    if config.content.enabled:
        profiles = ", ".join(f"{name}={rates[0]:g}" for name, rates in config.content.profiles.items())
        log("INFO", "content.py", f"Acceptance by content (position 1): {profiles}; "
            f"{config.content.known_prompts} prompts recognised, others take the base acceptance")
    log("INFO", "core.py:93", f"Initializing a V1 LLM engine with config: model={config.model!r}, "
        f"served_model_name={config.model_name}, max_seq_len={engine.max_model_len}, "
        f"max_num_seqs={engine.max_num_seqs}, speed={config.speed}x (simulated)")


def _session_noise(config: ServeConfig) -> SessionNoise | None:
    """This start's noise (None when every knob is 0: the noise-free model, numpy not loaded)."""
    params = config.noise
    if not params.enabled:
        return None
    from dspark_tui.sim.noise import new_session

    session = new_session(params, config.noise_seed)
    seed = "fresh entropy" if config.noise_seed is None else f"seed {config.noise_seed}"
    log("INFO", "noise.py", f"Simulated noise ({seed}): noise_cv={params.noise_cv:g} over "
        f"{params.drift_time_s:g} s, session_cv={params.session_cv:g} (this start: step cost "
        f"x{session.offset:.4f}), hiccups {params.hiccup_prob:g}/s of {params.hiccup_s:g} s")
    return session


def _log_failed_start(config: ServeConfig) -> None:
    log("ERROR", "core.py:708", "EngineCore failed to start.")
    log("ERROR", "core.py:708", "Traceback (most recent call last):")
    log("ERROR", "core.py:708", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB. GPU 0 has a total capacity of 79.19 GiB (simulated --fail-start)")
    sys.stdout.write("RuntimeError: Engine core initialization failed. See root cause above. "
                     "Failed core proc(s): {}\n")
    sys.stdout.flush()


def _load_model(config: ServeConfig) -> None:
    """The slow part of a real start: the port stays closed until it is over."""
    log("INFO", "gpu_model_runner.py:2602", f"Starting to load model {config.model}...")
    if config.faults.hang_startup:
        log("INFO", "default_loader.py:267", "Loading safetensors checkpoint shards: 0% Completed")
        while True:
            time.sleep(3600)
    time.sleep(config.startup_delay_s)
    engine = config.engine
    log("INFO", "default_loader.py:308", f"Loading weights took {config.startup_delay_s:.2f} seconds")
    log("INFO", "kv_cache_utils.py:1087", f"GPU KV cache size: {engine.kv_capacity_tokens:,} tokens")
    log("INFO", "kv_cache_utils.py:1091",
        f"Maximum concurrency for {engine.max_model_len:,} tokens per request: "
        f"{engine.kv_capacity_tokens / engine.max_model_len:.2f}x")


async def _serve_http(config: ServeConfig, before_crash: Callable[[], None]) -> int:
    engine_config = config.engine
    kv_dtype = str(config.non_default_args.get("kv_cache_dtype", "auto"))
    metrics = SimMetrics(config.model_name, engine_config.spec_tokens,
                         engine_config.kv_capacity_tokens, engine_config.block_size, kv_dtype)
    engine = LiveEngine(engine_config, metrics, speed=config.speed, seed=config.seed,
                        max_chunk_rate=config.max_chunk_rate, noise=_session_noise(config))
    faults = RequestFaults(config.faults, engine.stall, before_crash)
    api = SimApi(config, engine, faults.request_done)
    server = _Server(uvicorn.Config(
        api.app(), host=config.host, port=config.port, log_config=uvicorn_log_config(),
        access_log=config.access_log, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        lifespan="on", timeout_keep_alive=30,
    ))
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if signum == signal.SIGTERM and config.faults.ignore_sigterm:
            _ignore_sigterm(signum, None)
            return
        # A supervisor signals the group and then the server itself: a second SIGTERM is the
        # same request; only a second Ctrl-C means "now" (uvicorn's own rule).
        if server.should_exit and signum == signal.SIGINT:
            server.force_exit = True
        server.should_exit = True
        engine.shutdown()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, on_signal, signum)
    engine_task = asyncio.create_task(engine.run(), name="engine")
    failure: list[BaseException] = []

    def on_engine_exit(task: asyncio.Task[None]) -> None:
        """A dead engine must not leave a server that answers /health but never generates."""
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        assert error is not None
        failure.append(error)
        log("ERROR", "core.py:718", f"EngineCore died: {error!r}")
        server.should_exit = True
        engine.shutdown()

    engine_task.add_done_callback(on_engine_exit)
    tasks = [engine_task]
    if config.faults.log_flood_bytes_per_s > 0:
        tasks.append(asyncio.create_task(flood_log(config.faults.log_flood_bytes_per_s)))
    log("INFO", "api_server.py:1813",
        f"Starting vLLM API server 0 on http://{config.host}:{config.port}")
    routes = ["/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/ping",
              "/version", "/metrics"]
    log("INFO", "launcher.py:37", f"Available routes are: {json.dumps(routes)}")
    try:
        await server.serve()
    finally:
        if server.force_exit and server.started:
            # uvicorn skips the lifespan shutdown when forced; left waiting, the lifespan task
            # would be cancelled at loop close and log a CancelledError traceback.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.lifespan.shutdown(), 1.0)
        for task in tasks:
            task.cancel()
        log("INFO", "launcher.py:101", "Shutting down FastAPI HTTP server.")
    return 0 if server.started and not failure else 1
