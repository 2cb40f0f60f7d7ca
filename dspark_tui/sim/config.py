"""Every knob of the simulator in one place, with the defaults the calibration settled on."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class ModelConfig:
    """The batched engine: speculation, batching limits and KV capacity."""

    spec_tokens: int = 3
    acceptance: tuple[float, ...] = DEFAULT_ACCEPTANCE
    costs: StepCosts = field(default_factory=StepCosts)
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    kv_capacity_tokens: int = 98304
    block_size: int = 16
    max_model_len: int = 65536

    def acceptance_for(self, k: int) -> tuple[float, ...]:
        """The first k conditional probabilities, repeating the last one if too few are given."""
        probs = list(self.acceptance) or [0.0]
        while len(probs) < k:
            probs.append(probs[-1])
        return tuple(probs[:k])


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


@dataclass(frozen=True)
class ServeConfig:
    """Everything `serve` needs: where to listen, what to call itself, how fast to run."""

    model: str
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_name: str | None = None
    speed: float = 1.0
    seed: int = 0
    startup_delay_s: float = 0.0
    max_chunk_rate: float = 8000.0
    # Mean output length at which a request without `ignore_eos` meets EOS; 0: never early.
    eos_mean_tokens: int = 0
    access_log: bool = False
    engine: ModelConfig = field(default_factory=ModelConfig)
    faults: FaultConfig = field(default_factory=FaultConfig)
    ignored_args: tuple[str, ...] = ()
    non_default_args: dict[str, object] = field(default_factory=dict)

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model
