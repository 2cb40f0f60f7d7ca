"""What the simulated model writes: at temperature 0 a function of the prompt alone, as a greedy
server's output is; otherwise a fresh stretch of words per request.

`--greedy-diverge-after N` is a speculative-decoding bug on demand: with speculation on (K > 0)
a greedy answer leaves the true output after N tokens, by K words, so arms with different K
disagree there while K = 0 and a repeat of the same arm do not.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

from dspark_tui.sim.text import token_ids, token_text


@dataclass(frozen=True)
class OutputText:
    """Token i of the answer is word `start + i` (plus `shift` from token `diverge_at` on)."""

    start: int
    diverge_at: int | None = None
    shift: int = 0

    def text(self, first: int, count: int) -> str:
        return "".join(token_text(start, n) for start, n in self._runs(first, count))

    def ids(self, first: int, count: int) -> list[int]:
        return [i for start, n in self._runs(first, count) for i in token_ids(start, n)]

    def _runs(self, first: int, count: int) -> list[tuple[int, int]]:
        """(word position, count) runs covering tokens first .. first+count-1."""
        cut = self.diverge_at
        if cut is None or not self.shift or first + count <= cut:
            return [(self.start + first, count)]
        if first >= cut:
            return [(self.start + first + self.shift, count)]
        return [(self.start + first, cut - first), (self.start + cut + self.shift, first + count - cut)]


def is_greedy(temperature: object) -> bool:
    """vLLM samples greedily at temperature 0; no temperature means its default of 1."""
    return isinstance(temperature, (int, float)) and not isinstance(temperature, bool) \
        and temperature == 0


def greedy_output(prompt: object, *, spec_tokens: int, diverge_after: int | None) -> OutputText:
    """The same prompt always gets the same answer; the fault shifts it by K after N tokens."""
    key = json.dumps(prompt, sort_keys=True, ensure_ascii=False).encode("utf-8")
    start = zlib.crc32(key) & 0xFFFF
    if diverge_after is None or spec_tokens <= 0:
        return OutputText(start)
    return OutputText(start, diverge_at=diverge_after, shift=spec_tokens)
