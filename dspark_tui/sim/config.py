"""Every knob of the simulator in one place, with the defaults the calibration settled on."""

from __future__ import annotations

from dataclasses import dataclass, field

from dspark_tui.sim.content import ContentAcceptance

# Conditional acceptance probability of draft position i given positions < i were accepted.
# Falls with depth, as a real drafter's does; long enough for K up to 8.
DEFAULT_ACCEPTANCE = (0.90, 0.85, 0.80, 0.76, 0.72, 0.68, 0.64, 0.60)


@dataclass(frozen=True)
class StepCosts:
    """Modelled GPU seconds of one engine step; see docs/simulator.md for the shape.

    A step costs max(memory time, compute time) + draft time: at small batches reading the
    weights dominates (so verifying more draft tokens is nearly free), at large batches every
    verified token costs compute (so rejected draft tokens waste it).
    """

    weight_read_s: float = 0.0062
    kv_read_s_per_token: float = 1.5e-8
    verify_s_per_token: float = 4.0e-5
    prefill_s_per_token: float = 1.0e-5
    draft_step_s: float = 0.00015
    draft_s_per_seq: float = 1.2e-5
    # Adaptive verification's variable-length route leaves the full CUDA graph: its cost a step.
    adaptive_overhead_s: float = 0.0004


# vLLM 0.32's ngram proposer on the tiny model (docs/vllm-cpu.md): 23 drafts over the ~151
# decode steps of 8 requests (196 tokens, mean acceptance length 2.96 where it drafted).
NGRAM_DRAFT_RATE = 0.15

# A K schedule entry: (lowest, highest running batch size, K), bounds inclusive, as vLLM's
# `num_speculative_tokens_per_batch_size`.
ScheduleEntry = tuple[int, int, int]


@dataclass(frozen=True)
class ModelConfig:
    """The batched engine: speculation, batching limits and KV capacity.

    `spec_tokens` is the largest K; with a `spec_schedule` each step uses the K its running
    batch size picks (see `spec_tokens_for`).
    """

    spec_tokens: int = 3
    spec_schedule: tuple[ScheduleEntry, ...] = ()
    # The share of a request's decode steps that get drafts: 1 for a trained drafter (MTP,
    # EAGLE), which always proposes; ngram proposes only where its prompt lookup matches
    # (NGRAM_DRAFT_RATE, measured on real vLLM). A step without a draft emits one token.
    draft_rate: float = 1.0
    acceptance: tuple[float, ...] = DEFAULT_ACCEPTANCE
    costs: StepCosts = field(default_factory=StepCosts)
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    kv_capacity_tokens: int = 98304
    block_size: int = 16
    max_model_len: int = 65536
    # vLLM's `enable_adaptive_verification`: K drafted, a budget of them verified (adaptive.py).
    adaptive_verification: bool = False
    # How much a draft's confidence tells (Beta concentration; smaller: more informative).
    confidence_concentration: float = 4.0
    # vLLM #49548 (a fault switch): K keyed on a count with queued prefills, flipping near a
    # schedule's boundary, each flip a graph switch, and a schedule's steps on the slower route.
    k_flip_fault: bool = False

    def spec_tokens_for(self, batch_size: int) -> int:
        """K for a step whose running batch has `batch_size` requests, as vLLM looks it up.

        The entry whose range starts at or below the batch size decides: inside a range its K,
        in a gap after it the same K (a gap inherits the previous entry), beyond the last range
        the last K; never more than `spec_tokens`.
        """
        if not self.spec_schedule:
            return self.spec_tokens
        batch = max(1, batch_size)
        # Called every engine step: a few entries, so a scan from the top beats building a list.
        k = next((k for lo, _, k in reversed(self.spec_schedule) if lo <= batch),
                 self.spec_schedule[0][2])
        return min(self.spec_tokens, k)

    def acceptance_for(self, k: int, profile: tuple[float, ...] | None = None) -> tuple[float, ...]:
        """The first k conditional probabilities of `profile` (a prompt category's, see
        `content.py`) or of the base curve, repeating the last one if too few are given."""
        probs = list(self.acceptance if profile is None else profile) or [0.0]
        while len(probs) < k:
            probs.append(probs[-1])
        return tuple(probs[:k])


DEFAULT_DRIFT_TIME_S = 5.0


@dataclass(frozen=True)
class NoiseParams:
    """How much a real box's throughput wanders; all zero means the noise-free model.

    `noise_cv`: coefficient of variation of a short cell's Total tok/s across repeats in one
    server session (a slow drift of the step cost with correlation time `drift_time_s`);
    `session_cv`: one step-cost offset per server start; `hiccup_prob` stalls of `hiccup_s`
    modelled seconds per modelled second of work. See docs/simulator.md, "Noise".
    """

    noise_cv: float = 0.0
    session_cv: float = 0.0
    hiccup_prob: float = 0.0
    hiccup_s: float = 0.0
    drift_time_s: float = DEFAULT_DRIFT_TIME_S

    @property
    def enabled(self) -> bool:
        return self.noise_cv > 0 or self.session_cv > 0 or (self.hiccup_prob > 0
                                                              and self.hiccup_s > 0)


@dataclass(frozen=True)
class FaultConfig:
    """Switches that make the simulator misbehave the ways real servers have."""

    fail_start: bool = False
    hang_startup: bool = False
    crash_after_requests: int | None = None
    crash_exit_code: int = 1
    ignore_sigterm: bool = False
    spawn_workers: int = 0
    log_flood_bytes_per_s: int = 0
    stall_after_requests: int | None = None
    # Every Nth streamed completion is cut after its first text chunk, the server still alive
    # (a proxy or a worker dropping the connection mid-answer).
    cut_stream_every: int | None = None
    # Streamed completions answer 401 with a body that echoes the Authorization header, as some
    # gateways do: what must never reach a saved file.
    echo_key_401: bool = False
    # With speculation on, greedy answers leave the true output after this many tokens
    # (sim/greedy.py): what the greedy equivalence check must catch.
    greedy_diverge_after: int | None = None


@dataclass(frozen=True)
class ServeConfig:
    """Everything `serve` needs: where to listen, what to call itself, how fast to run."""

    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_name: str | None = None
    # The names after the first of `--served-model-name A B …`: served too, as vLLM serves them.
    served_model_aliases: tuple[str, ...] = ()
    spec_method: str = "mtp"  # as --speculative-config or --spec-method names it; only logged
    speed: float = 1.0
    seed: int = 0
    startup_delay_s: float = 0.0
    max_chunk_rate: float = 8000.0
    # Mean output length at which a request without `ignore_eos` meets EOS; 0: never early.
    eos_mean_tokens: int = 0
    access_log: bool = False
    # The ids a prompt may carry are 0 .. vocab_size - 1, as a real model's tokenizer bounds them
    # (vLLM refuses a larger one: "Token id N is out of vocabulary"); None: no bound.
    vocab_size: int | None = None
    engine: ModelConfig = field(default_factory=ModelConfig)
    noise: NoiseParams = field(default_factory=NoiseParams)
    # Pins the noise draws; None: fresh OS entropy at every start, as real starts differ.
    noise_seed: int | None = None
    faults: FaultConfig = field(default_factory=FaultConfig)
    # Per-category acceptance and the prompts it recognises (`--accept-profile`, `--prompts`).
    content: ContentAcceptance = field(default_factory=ContentAcceptance)
    ignored_args: tuple[str, ...] = ()
    non_default_args: dict[str, object] = field(default_factory=dict)

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model

    @property
    def served_names(self) -> tuple[str, ...]:
        """What /v1/models lists: the served names, the first one leading."""
        return tuple(dict.fromkeys([self.model_name, *self.served_model_aliases]))

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every name a request may give: the served names and the model itself."""
        return tuple(dict.fromkeys([*self.served_names, self.model]))
