"""The simulator's own tokenizer: deterministic, reversible, and counting as text.py counts.

Text is cut into pieces: an optional single space followed by 1 to 6 printable ASCII characters
(`!`..`~`), else one character (a newline, a second space, any non-ASCII character). A word of
n letters after a space is ceil(n / 6) pieces, which is exactly what `count_text_tokens` charges
for a text prompt, so `/tokenize` and a completion's `usage.prompt_tokens` agree on plain text.

Ids need no vocabulary file, so every server session (and any client) maps them the same way:
0, 1, 2 are `<pad>`, `<s>` (BOS, added in front when special tokens are asked for, as Llama-style
tokenizers do) and `</s>`; 3 + code point is a single character; from PIECE_BASE on, a piece is
numbered by its bijective base-94 value, doubled, plus one when it starts with a space. Every id
below PIECE_LIMIT (under 2**41, safe in JSON and in a float) decodes to some text, so `random-ids`
prompts decode too.
"""

from __future__ import annotations

import re

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>")
BOS_ID = 1
CHAR_BASE = len(SPECIAL_TOKENS)
PIECE_BASE = CHAR_BASE + 0x110000
_ALPHABET = "".join(chr(c) for c in range(0x21, 0x7F))  # printable ASCII without the space
_RADIX = len(_ALPHABET)
_MAX_PIECE = 6
PIECE_LIMIT = PIECE_BASE + 2 * sum(_RADIX**k for k in range(1, _MAX_PIECE + 1)) + 2
_DIGIT = {ch: i + 1 for i, ch in enumerate(_ALPHABET)}  # bijective digits run 1..94
_PIECE = re.compile(r"( ?)([!-~]{1,6})|(.)", re.DOTALL)
REPLACEMENT = "\ufffd"


def encode(text: str, add_special_tokens: bool = True) -> list[int]:
    ids = [BOS_ID] if add_special_tokens else []
    for match in _PIECE.finditer(text):
        space, word, single = match.groups()
        if single is not None:
            ids.append(CHAR_BASE + ord(single))
            continue
        value = 0
        for ch in word:
            value = value * _RADIX + _DIGIT[ch]
        ids.append(PIECE_BASE + 2 * value + (1 if space else 0))
    return ids


def decode_one(token_id: int) -> str:
    if 0 <= token_id < CHAR_BASE:
        return SPECIAL_TOKENS[token_id]
    if CHAR_BASE <= token_id < PIECE_BASE:
        code = token_id - CHAR_BASE
        return REPLACEMENT if 0xD800 <= code <= 0xDFFF else chr(code)
    if PIECE_BASE <= token_id < PIECE_LIMIT:
        value, space = divmod(token_id - PIECE_BASE, 2)
        if value == 0:
            return REPLACEMENT
        chars = []
        while value > 0:
            value, digit = divmod(value - 1, _RADIX)
            chars.append(_ALPHABET[digit])
        return (" " if space else "") + "".join(reversed(chars))
    return REPLACEMENT


def decode(token_ids: list[int]) -> str:
    """Special tokens decode to their text, as Hugging Face's `decode` does by default."""
    return "".join(decode_one(t) for t in token_ids)


def num_special_tokens_to_add() -> int:
    return len(encode("", add_special_tokens=True))
