"""Word-like token text and prompt token counting.

Each generated token is one short English word with a leading space, so clients that count
words or re-tokenize the text land close to the exact `usage` counts the server reports.
Text is cut from one precomputed string, so a chunk of any length costs one slice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

_VOCABULARY_TEXT = (
    "the model of a and to in is that it for on with as was at by this be are from or an not "
    "which have has but were they their one all there can more been when will would into some "
    "time than them these two other only its new may first any after over also most such where "
    "then made well out many about back much could each even good both way down work long great "
    "year must through still just because same while state place point case part number world "
    "fact small large water power light sound level order value field group system data cache "
    "token draft batch step verify accept speed serve queue block layer width depth graph learn "
    "train infer route shard merge split write read store scan sort index query plan cell run "
    "arm scene test proof rate gain loss"
)
_VOCABULARY = _VOCABULARY_TEXT.split(" ")

# A prime count, so offsets wrap through every word.
_WORDS = tuple((_VOCABULARY * 3)[:211])
_JOINED = "".join(" " + word for word in _WORDS)
_OFFSETS = [0]
for _word in _WORDS:
    _OFFSETS.append(_OFFSETS[-1] + len(_word) + 1)
_CYCLE = len(_WORDS)


def token_text(start: int, count: int) -> str:
    """The text of tokens start..start+count-1 of an endless word sequence."""
    pieces = []
    position = start % _CYCLE
    while count > 0:
        take = min(count, _CYCLE - position)
        pieces.append(_JOINED[_OFFSETS[position]:_OFFSETS[position + take]])
        count -= take
        position = 0
    return "".join(pieces)


def count_text_tokens(text: str) -> int:
    """Approximate a tokenizer: one token per started 6 characters of each word (min 1)."""
    if not text:
        return 0
    return sum(math.ceil(len(word) / 6) for word in text.split()) or 1


def count_message_tokens(contents: Iterable[str]) -> int:
    """Chat prompt size: each message's text plus a few template tokens, as chat templates add."""
    return sum(count_text_tokens(text) + 3 for text in contents)


def token_ids(start: int, count: int) -> list[int]:
    """The ids of the same tokens: each word's place in the vocabulary."""
    return [_WORD_IDS[(start + i) % _CYCLE] for i in range(count)]


_WORD_IDS = tuple(_VOCABULARY.index(word) for word in _WORDS)
