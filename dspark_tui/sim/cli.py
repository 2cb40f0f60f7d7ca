"""`python -m dspark_tui.sim serve MODEL ...` / `dspark-tui sim ...`.

Accepts the real server's flags so one command template serves both; the meaningful ones are
applied (`--speculative-config`, `--max-num-seqs`, `--served-model-name` ...), the rest are
accepted and ignored, and unknown ones are named in a startup warning instead of failing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import fields
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar, cast

from dspark_tui.model.prompt_file import BUILTIN_PROMPT_FILE, PromptFileError, read_prompt_file
from dspark_tui.sim.config import (
    DEFAULT_ACCEPTANCE,
    DEFAULT_DRIFT_TIME_S,
    NGRAM_DRAFT_RATE,
    FaultConfig,
    ModelConfig,
    NoiseParams,
    ScheduleEntry,
    ServeConfig,
    StepCosts,
)
from dspark_tui.sim.content import ContentAcceptance, ProfileError, parse_accept_profile

MAX_SPEC_TOKENS = 16
_SECRET_FLAGS = {"api_key"}
_SECRET_WORDS = ("key", "token", "secret", "password")
_Config = TypeVar("_Config")


class SimUsageError(Exception):
    """A bad command line: printed as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dspark-tui sim", allow_abbrev=False,
                                     description="Simulated vllm-dspark server (no GPU needed).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # No abbreviations: an unknown vLLM flag must never be taken for a prefix of one of ours.
    serve = sub.add_parser("serve", help="serve a simulated model over vLLM's HTTP API",
                           allow_abbrev=False)
    serve.add_argument("model", help="model path or name (only echoed back)")
    net = serve.add_argument_group("server")
    net.add_argument("--host", default="127.0.0.1")
    net.add_argument("--port", type=int, default=8000)
    net.add_argument("--served-model-name", nargs="+", help="names clients use; the first leads")
    net.add_argument("--access-log", action="store_true", help="log every HTTP request")

    spec = serve.add_argument_group("speculative decoding")
    spec.add_argument("--spec-tokens", type=int, help="draft tokens verified per step (K)")
    spec.add_argument("--speculative-config", help="vLLM JSON, e.g. '{\"num_speculative_tokens\": 5}'")
    spec.add_argument("--spec-method", help="accepted for compatibility (ignored)")
    spec.add_argument("--draft-rate", type=float,
                      help="share of decode steps that get drafts (default 1; with method ngram "
                           f"{NGRAM_DRAFT_RATE}, where its lookup matched on real vLLM)")
    spec.add_argument("--adaptive-verification", action="store_true",
                      help="verify a budget of the K drafts chosen from their confidence, as "
                           "vLLM's enable_adaptive_verification (docs/simulator.md)")
    spec.add_argument("--acceptance", help="comma-separated conditional acceptance per position "
                      f"(default {','.join(map(str, DEFAULT_ACCEPTANCE))})")
    spec.add_argument("--accept-profile", metavar="CAT=RATE,...|FILE",
                      help="per-category acceptance of draft position 1 (deeper positions follow "
                      "the --acceptance curve), or a .toml/.json file of category = rate or "
                      "[rates]; prompts are recognised from the project's prompt file and --prompts")
    spec.add_argument("--prompts", action="append", default=[], metavar="FILE",
                      help="a JSONL prompt file (prompt, category) whose prompts get their "
                      "category's profile; repeatable")

    model = serve.add_argument_group("performance model (modelled GPU seconds)")
    defaults = StepCosts()
    for field_name in ("weight_read_s", "kv_read_s_per_token", "verify_s_per_token",
                       "prefill_s_per_token", "draft_step_s", "draft_s_per_seq"):
        model.add_argument("--" + field_name.replace("_", "-"), type=float,
                           default=getattr(defaults, field_name))
    engine_defaults = ModelConfig()
    model.add_argument("--kv-capacity-tokens", type=int, default=engine_defaults.kv_capacity_tokens)
    model.add_argument("--max-num-seqs", type=int, default=engine_defaults.max_num_seqs)
    model.add_argument("--max-num-batched-tokens", type=int,
                       default=engine_defaults.max_num_batched_tokens)
    model.add_argument("--max-model-len", type=int, default=engine_defaults.max_model_len)
    model.add_argument("--block-size", type=int, default=engine_defaults.block_size)
    model.add_argument("--speed", type=float, default=1.0,
                       help="run this many times faster than modelled time")
    model.add_argument("--seed", type=int, default=0)
    model.add_argument("--eos-mean-tokens", type=int, default=0,
                       help="without ignore_eos, stop early at a random length of this mean "
                       "(default 0: always generate max_tokens)")
    model.add_argument("--vocab-size", type=int, metavar="N",
                       help="refuse prompt token ids >= N as vLLM does ('Token id N is out of "
                       "vocabulary'; streamed: an error in the stream); default: no bound")
    model.add_argument("--max-chunk-rate", type=float, default=8000.0,
                       help="SSE chunks per second, all streams together, before steps coalesce")

    noise = serve.add_argument_group("noise (all 0: the noise-free model; docs/simulator.md)")
    noise.add_argument("--noise-cv", type=float, default=0.0, metavar="F",
                       help="CV of a short cell's Total tok/s across repeats in one session "
                       "(a slow drift of the step cost)")
    noise.add_argument("--noise-time-s", type=float, default=DEFAULT_DRIFT_TIME_S, metavar="S",
                       help="correlation time of that drift, modelled seconds")
    noise.add_argument("--session-cv", type=float, default=0.0, metavar="F",
                       help="CV of one step-cost offset drawn per server start")
    noise.add_argument("--hiccup-prob", type=float, default=0.0, metavar="P",
                       help="stalls per modelled second of work")
    noise.add_argument("--hiccup-s", type=float, default=0.0, metavar="S",
                       help="length of a stall, modelled seconds")
    noise.add_argument("--noise-seed", type=int, metavar="N",
                       help="pin the noise draws (default: fresh entropy at every start)")

    faults = serve.add_argument_group("fault switches")
    faults.add_argument("--startup-delay", type=float, default=0.0, metavar="S",
                        help="seconds (wall clock) of model loading before the port opens")
    faults.add_argument("--fail-start", action="store_true")
    faults.add_argument("--hang-startup", action="store_true")
    faults.add_argument("--crash-after-requests", type=int, metavar="N")
    faults.add_argument("--crash-exit-code", type=int, default=1, metavar="C")
    faults.add_argument("--ignore-sigterm", action="store_true")
    faults.add_argument("--spawn-workers", type=int, default=0, metavar="N")
    faults.add_argument("--log-flood", type=int, default=0, metavar="BYTES_PER_S")
    faults.add_argument("--stall-after-requests", type=int, metavar="N")
    faults.add_argument("--cut-stream-every", type=int, metavar="N",
                        help="cut every Nth streamed answer after its first text chunk")
    faults.add_argument("--echo-key-401", action="store_true",
                        help="answer streamed completions 401, echoing the Authorization header")
    faults.add_argument("--k-flip-fault", action="store_true",
                        help="vLLM #49548: with a K schedule, K keyed on a count with queued "
                             "prefills flips near a boundary; each flip and the schedule's "
                             "route cost extra")
    faults.add_argument("--greedy-diverge-after", type=int, metavar="N",
                        help="with K > 0, greedy (temperature 0) answers go wrong after N tokens, "
                        "differently for each K")

    ignored = serve.add_argument_group("vLLM flags accepted for compatibility (ignored)")
    for flag in ("--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp",
                 "--data-parallel-size", "-dp", "--gpu-memory-utilization", "--dtype",
                 "--kv-cache-dtype", "--quantization", "-q", "--api-key", "--uvicorn-log-level",
                 "--tokenizer", "--load-format", "--swap-space", "--chat-template",
                 "--distributed-executor-backend", "--max-seq-len-to-capture", "--revision",
                 "--compilation-config", "-O"):
        ignored.add_argument(flag, dest=flag.lstrip("-").replace("-", "_"))
    for flag in ("--trust-remote-code", "--enforce-eager", "--enable-prefix-caching",
                 "--no-enable-prefix-caching", "--enable-chunked-prefill",
                 "--disable-log-requests", "--disable-log-stats", "--enable-expert-parallel",
                 "--disable-custom-all-reduce", "--enable-log-requests"):
        ignored.add_argument(flag, action="store_true")

    worker = sub.add_parser("worker", help=argparse.SUPPRESS)
    worker.add_argument("--rank", type=int, default=0)
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(list(argv))
    if args.command == "worker":
        from dspark_tui.sim.faults import run_worker

        return run_worker(args.rank)
    try:
        config = serve_config(args, unknown, parser)
    except SimUsageError as exc:
        print(f"dspark-tui sim: error: {exc}", file=sys.stderr)
        return 2
    from dspark_tui.sim.serve import serve

    try:
        return serve(config)
    except KeyboardInterrupt:
        return 130


# Fields of the configs no flag sets: they keep their defaults (the model's constants)
_NO_FLAG = frozenset({"adaptive_overhead_s", "confidence_concentration"})


def _from_flags(config: type[_Config], args: argparse.Namespace, **given: Any) -> _Config:
    """A config dataclass whose every field is the flag of its name (`--max-num-seqs` sets
    max_num_seqs), `given` over them; only the fields in _NO_FLAG may have no flag (a flag
    renamed away from its field fails here, not by serving the default in silence)."""
    flags: dict[str, Any] = {}
    for f in fields(cast(Any, config)):
        if f.name in given or f.name in _NO_FLAG:
            continue
        if not hasattr(args, f.name):
            raise AttributeError(f"{config.__name__}.{f.name} has no --{f.name.replace('_', '-')} flag")
        flags[f.name] = getattr(args, f.name)
    return config(**flags, **given)


def serve_config(args: argparse.Namespace, unknown: Sequence[str],
                 parser: argparse.ArgumentParser) -> ServeConfig:
    spec_tokens, schedule = _speculation(args)
    adaptive = _adaptive_verification(args, spec_tokens)
    acceptance = _acceptance(args.acceptance) if args.acceptance else DEFAULT_ACCEPTANCE
    if not 0 <= args.port <= 65535:
        raise SimUsageError(f"--port must be 0-65535, got {args.port}")
    if args.speed <= 0:
        raise SimUsageError(f"--speed must be > 0, got {args.speed}")
    if args.max_num_seqs < 1:
        raise SimUsageError(f"--max-num-seqs must be >= 1, got {args.max_num_seqs}")
    if args.kv_capacity_tokens < args.block_size:
        raise SimUsageError("--kv-capacity-tokens must hold at least one block")
    engine = _from_flags(ModelConfig, args, spec_tokens=spec_tokens, spec_schedule=schedule,
                         acceptance=acceptance, costs=_from_flags(StepCosts, args),
                         adaptive_verification=adaptive, draft_rate=_draft_rate(args))
    faults = _from_flags(FaultConfig, args, log_flood_bytes_per_s=args.log_flood,
                         greedy_diverge_after=_at_least_zero("--greedy-diverge-after",
                                                             args.greedy_diverge_after))
    return ServeConfig(
        model=args.model,
        spec_method=_spec_method(args),
        host=args.host,
        port=args.port,
        served_model_name=args.served_model_name[0] if args.served_model_name else None,
        served_model_aliases=tuple(args.served_model_name[1:]) if args.served_model_name else (),
        speed=args.speed,
        seed=args.seed,
        startup_delay_s=max(0.0, args.startup_delay),
        max_chunk_rate=args.max_chunk_rate,
        eos_mean_tokens=max(0, args.eos_mean_tokens),
        vocab_size=_vocab_size(args.vocab_size),
        access_log=args.access_log,
        engine=engine,
        noise=_noise(args),
        noise_seed=args.noise_seed,
        faults=faults,
        content=_content(args, acceptance),
        ignored_args=redact_unknown(unknown),
        non_default_args=_non_default_args(args, parser),
    )


def _content(args: argparse.Namespace, base: tuple[float, ...]) -> ContentAcceptance:
    """Per-category acceptance and the prompts it recognises; none without --accept-profile."""
    if not args.accept_profile:
        if args.prompts:
            raise SimUsageError("--prompts needs --accept-profile (the rates of its categories)")
        return ContentAcceptance()
    try:
        profiles = parse_accept_profile(args.accept_profile, base)
        entries = [entry for path in (BUILTIN_PROMPT_FILE, *map(Path, args.prompts))
                   for entry in read_prompt_file(path)]
    except (ProfileError, PromptFileError) as exc:
        raise SimUsageError(str(exc)) from None
    return ContentAcceptance.build(profiles, entries)


def _vocab_size(value: int | None) -> int | None:
    if value is not None and value < 4:
        raise SimUsageError(f"--vocab-size must be >= 4 (the special tokens and one more), got {value}")
    return value


def _at_least_zero(flag: str, value: int | None) -> int | None:
    if value is not None and value < 0:
        raise SimUsageError(f"{flag} must be >= 0, got {value}")
    return value


def _noise(args: argparse.Namespace) -> NoiseParams:
    for flag in ("noise_cv", "session_cv", "hiccup_prob", "hiccup_s"):
        value = getattr(args, flag)
        if not 0.0 <= value < float("inf"):
            raise SimUsageError(f"--{flag.replace('_', '-')} must be >= 0, got {value}")
    if args.noise_cv >= 1 or args.session_cv >= 1:
        raise SimUsageError("--noise-cv and --session-cv are fractions (0.03 = 3 %), below 1")
    if (args.hiccup_prob > 0) != (args.hiccup_s > 0):
        raise SimUsageError("--hiccup-prob and --hiccup-s go together (both > 0, or neither)")
    if not args.noise_time_s > 0:
        raise SimUsageError(f"--noise-time-s must be > 0, got {args.noise_time_s}")
    return NoiseParams(noise_cv=args.noise_cv, session_cv=args.session_cv,
                       hiccup_prob=args.hiccup_prob, hiccup_s=args.hiccup_s,
                       drift_time_s=args.noise_time_s)


def _adaptive_verification(args: argparse.Namespace, spec_tokens: int) -> bool:
    """vLLM's `enable_adaptive_verification` in --speculative-config (or the flag)."""
    on = bool(args.adaptive_verification)
    if args.speculative_config:  # valid JSON and an object: _speculation checked it
        value = json.loads(args.speculative_config).get("enable_adaptive_verification")
        if value is not None and not isinstance(value, bool):
            raise SimUsageError("--speculative-config: enable_adaptive_verification must be "
                                "true or false")
        on = on or bool(value)
    if on and not spec_tokens:
        raise SimUsageError("adaptive verification needs speculation (num_speculative_tokens > 0)")
    return on


def _speculation(args: argparse.Namespace) -> tuple[int, tuple[ScheduleEntry, ...]]:
    """K (the largest, with a schedule) and vLLM's per-batch-size schedule, if any."""
    spec_tokens = args.spec_tokens
    schedule: tuple[ScheduleEntry, ...] = ()
    if args.speculative_config:
        try:
            spec = json.loads(args.speculative_config)
        except json.JSONDecodeError as exc:
            raise SimUsageError(f"--speculative-config is not valid JSON: {exc}") from None
        if not isinstance(spec, dict):
            raise SimUsageError("--speculative-config must be a JSON object")
        from_json = spec.get("num_speculative_tokens")
        if from_json is not None:
            if not isinstance(from_json, int):
                raise SimUsageError("--speculative-config: num_speculative_tokens must be an integer")
            if from_json <= 0:
                # vLLM 0.32 refuses it ("Input should be greater than 0"): K = 0 is no flag.
                raise SimUsageError("--speculative-config: num_speculative_tokens must be greater "
                                    "than 0 (as vLLM says; for no speculation give no "
                                    "speculative flag)")
            if spec_tokens is not None and spec_tokens != from_json:
                raise SimUsageError(f"--spec-tokens {spec_tokens} contradicts --speculative-config "
                                    f"num_speculative_tokens={from_json}")
            spec_tokens = from_json
        if spec.get("num_speculative_tokens_per_batch_size") is not None:
            schedule = parse_schedule(spec["num_speculative_tokens_per_batch_size"])
            if not spec_tokens:
                raise SimUsageError("--speculative-config: num_speculative_tokens_per_batch_size "
                                    "needs num_speculative_tokens > 0 (the largest K)")
    if spec_tokens is None:
        # No K anywhere: no speculative flag means no speculation, as on vLLM (an arm with
        # K = 0 starts without one); a speculative config that names no K gets the model's
        # three MTP layers, as vLLM takes K from an MTP model's config.
        spec_tokens = 3 if args.speculative_config else 0
    if not 0 <= spec_tokens <= MAX_SPEC_TOKENS:
        raise SimUsageError(f"--spec-tokens must be in 0..{MAX_SPEC_TOKENS}, got {spec_tokens}")
    return int(spec_tokens), schedule


def _draft_rate(args: argparse.Namespace) -> float:
    """--draft-rate, else ngram's measured rate for method ngram, else 1 (always drafts)."""
    if args.draft_rate is not None:
        if not 0.0 <= args.draft_rate <= 1.0:
            raise SimUsageError(f"--draft-rate must be in 0..1, got {args.draft_rate}")
        return float(args.draft_rate)
    return NGRAM_DRAFT_RATE if _spec_method(args) == "ngram" else 1.0


def _spec_method(args: argparse.Namespace) -> str:
    """The method the log names: --speculative-config's, else --spec-method, else mtp (the
    model's own MTP layers). Only said, never modelled: every method drafts alike here."""
    if args.speculative_config:
        with contextlib.suppress(json.JSONDecodeError):
            spec = json.loads(args.speculative_config)
            if isinstance(spec, dict) and isinstance(spec.get("method"), str) and spec["method"]:
                return str(spec["method"])
    return args.spec_method or "mtp"


def parse_schedule(value: object) -> tuple[ScheduleEntry, ...]:
    """vLLM's `num_speculative_tokens_per_batch_size`, checked as vLLM checks it.

    A non-empty list of [lo, hi, K]: positive inclusive bounds, lo <= hi, K >= 0, ranges
    sorted and not overlapping, the first starting at 1. Returned sorted by lo.
    """
    where = "--speculative-config: num_speculative_tokens_per_batch_size"
    if not isinstance(value, list) or not value:
        raise SimUsageError(f"{where} must be a non-empty list of [lo, hi, K]")
    entries: list[ScheduleEntry] = []
    for entry in value:
        if (not isinstance(entry, list) or len(entry) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in entry)):
            raise SimUsageError(f"{where}: each entry must be [lo, hi, K] integers, got "
                                f"{json.dumps(entry)} (5-item context-length entries are not "
                                "modelled)")
        lo, hi, k = entry
        if lo < 1 or hi < lo or k < 0:
            raise SimUsageError(f"{where}: {json.dumps(entry)} needs 1 <= lo <= hi and K >= 0")
        entries.append((lo, hi, k))
    entries.sort()
    if entries[0][0] != 1:
        raise SimUsageError(f"{where}: the first range must start at batch size 1")
    for (_, previous_hi, _), (lo, hi, k) in pairwise(entries):
        if lo <= previous_hi:
            raise SimUsageError(f"{where}: ranges overlap at {json.dumps([lo, hi, k])}")
    return tuple(entries)


def _acceptance(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise SimUsageError(f"--acceptance must be comma-separated numbers, got {text!r}") from None
    if not values or not all(0.0 <= v <= 1.0 for v in values):
        raise SimUsageError(f"--acceptance values must be in [0, 1], got {text!r}")
    return values


def redact_unknown(args: Sequence[str]) -> tuple[str, ...]:
    """Unknown flags are echoed in the log; the value after a secret-looking one is not."""
    shown: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next and not arg.startswith("-"):
            shown.append("<redacted>")
            hide_next = False
            continue
        name, has_value, _ = arg.partition("=")
        secret = arg.startswith("-") and any(word in name.lower() for word in _SECRET_WORDS)
        shown.append(f"{name}=<redacted>" if secret and has_value else arg)
        hide_next = secret and not has_value
    return tuple(shown)


def _non_default_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, object]:
    """Like vLLM's startup line: what differs from the defaults, secrets redacted."""
    defaults = vars(parser.parse_known_args(["serve", args.model])[0])
    changed: dict[str, object] = {}
    for key, value in vars(args).items():
        if key == "command":
            continue
        if value != defaults.get(key):
            changed[key] = "<redacted>" if key in _SECRET_FLAGS else value
    return changed
