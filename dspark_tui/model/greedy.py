"""The greedy equivalence check's data: what one arm answered in one session (saved as
greedy/{arm}-{session}.json) and the verdict per arm that the engine announces and the report
shows (docs/greedy.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

GREEDY_SCHEMA = 1

GreedyVerdictKind = Literal["same", "within_control", "diverges", "not_compared", "no_answers"]


class GreedyAnswer(BaseModel):
    """One prompt's answer: the text, and the token ids when the server returned them."""

    text: str = ""
    token_ids: list[int] | None = None
    finish_reason: str | None = None
    error: str | None = None


class GreedyAnswers(BaseModel):
    """One session's answers: `passes[0]` is the arm's answer, `passes[1]` the same prompts
    again in the same session — the control, which measures the server's own nondeterminism."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = GREEDY_SCHEMA
    arm: str
    session: str
    round: int = 1
    max_tokens: int
    prompts: list[str]
    passes: list[list[GreedyAnswer]] = Field(min_length=1)
    seconds: float = 0.0


class GreedyVerdict(BaseModel):
    """One arm against the reference arm. `diverging`: prompts whose answers differ earlier than
    the control's own differences explain; `first_*`: the first of them, position in tokens
    (`unit` "token") or characters (`unit` "char", when the server returned no token ids)."""

    arm: str
    reference: str
    verdict: GreedyVerdictKind
    compared: int = 0
    diverging: int = 0
    within_control: int = 0
    first_prompt: int | None = None
    first_position: int | None = None
    unit: Literal["token", "char"] = "token"
    expected: str = ""
    got: str = ""
    reason: str = ""

    def line(self) -> str:
        """One line for notices, the printer and the run screen."""
        head = f"greedy check: {self.arm} vs {self.reference}: "
        if self.verdict == "diverges":
            return (head + f"DIVERGES on {self.diverging} of {self.compared} prompts; first at "
                    f"prompt {self.first_prompt}, {self.unit} {self.first_position}: expected "
                    f"{self.expected!r}, got {self.got!r}")
        if self.verdict == "within_control":
            return head + (f"same within the control ({self.within_control} of {self.compared} "
                           "prompts differ no earlier than a repeat of the same arm)")
        if self.verdict == "same":
            return head + f"same output on all {self.compared} prompts"
        return head + (self.reason or self.verdict.replace("_", " "))

    def short(self) -> str:
        """A few words for a header line."""
        head = f"greedy: {self.arm} vs {self.reference} "
        if self.verdict == "diverges":
            return (head + f"DIVERGES on {self.diverging}/{self.compared} prompts, first at "
                    f"prompt {self.first_prompt} {self.unit} {self.first_position}")
        if self.verdict == "within_control":
            return head + f"same within the control ({self.compared} prompts)"
        if self.verdict == "same":
            return head + f"same ({self.compared} prompts)"
        return head + (self.reason or self.verdict.replace("_", " "))
