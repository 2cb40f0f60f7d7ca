"""What must never be written to run.json, events or logs: API keys, tokens, passwords.

Two tools: masking, for what the tool itself saves (the plan snapshot: values of secret-named
flags, `Name=value` pairs and variables, passwords inside URLs), and scrubbing, for what a
server prints (every secret value the tool knows, wherever it appears as a whole token).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

REDACTED = "***"
MIN_SCRUBBED_LEN = 8  # shorter values would mangle ordinary log text

# KEY(S), TOKEN(S), SECRET, PASSWORD, CREDENTIAL, AUTH in a name, compounds too (APIKEY,
# API_KEYS, HF_TOKENS, --api-keys), but not the token counts and tokenizers every vLLM command
# names (--spec-tokens, --max-num-batched-tokens, TOKENIZERS_PARALLELISM,
# --return-tokens-as-token-ids) nor key files (--ssl-keyfile: a path).
_SECRET_NAME = re.compile(
    r"keys?(?![a-z])|token(?![a-z]|[-_]ids?\b)|secret|passw(or)?d|credential|auth", re.IGNORECASE)
# Plural TOKENS is a secret (HF_TOKENS) unless the name counts tokens.
_TOKENS = re.compile(r"tokens(?![a-z]|[-_]ids?\b)", re.IGNORECASE)
_COUNTS_TOKENS = re.compile(
    r"spec|specul|num|max|min|batch|new|draft|output|input|prompt|gen|total|per|chunk|prefill|"
    r"lookahead|ngram|logprob|return|skip|special|stop|bad|allowed|block|budget|limit|count",
    re.IGNORECASE)
# scheme://user:password@host: the password is what to hide.
_URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/\s:@]*:)(?P<password>[^/\s@]+)(?=@)",
                           re.IGNORECASE)
# What Scrubber leaves of a secret anywhere in a value: REDACTED as a whole token.
_SCRUBBED = re.compile(r"(?<!\w)" + re.escape(REDACTED) + r"(?!\w)")
# `Authorization=Bearer x`, `Authorization: Bearer x`, `token=x`: a secret-named pair in a value.
_PAIR = re.compile(r"^(?P<name>[A-Za-z][\w.-]*)(?P<sep>\s*[=:]\s*)(?P<value>.+)$", re.DOTALL)


def is_secret_name(name: str) -> bool:
    """`--api-key`, `HF_TOKEN`, `OPENAI_KEY`, `DB_PASSWORD`: yes; `--spec-tokens`,
    `max_num_batched_tokens`, `TOKENIZERS_PARALLELISM`: no."""
    name = name.lstrip("-")
    if _SECRET_NAME.search(name):
        return True
    return bool(_TOKENS.search(name)) and not _COUNTS_TOKENS.search(name)


def url_passwords(text: str) -> list[str]:
    return [match["password"] for match in _URL_PASSWORD.finditer(text)
            if match["password"] != REDACTED]


def mask_value(value: str) -> str:
    """A value as it may be saved: a secret-named pair's value and URL passwords hidden."""
    pair = _PAIR.match(value)
    if pair and is_secret_name(pair["name"]) and "://" not in pair["name"]:
        return pair["name"] + pair["sep"] + REDACTED
    return _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED, value)


def is_masked(value: str) -> bool:
    """Whether a saved value lost a secret to masking or scrubbing (a resume must get it from
    elsewhere): a key scrubbed inside `sh -c "… --api-key ***"` counts too."""
    if _SCRUBBED.search(value):
        return True
    pair = _PAIR.match(value)
    if pair and is_secret_name(pair["name"]) and pair["value"] == REDACTED:
        return True
    return any(m["password"] == REDACTED for m in _URL_PASSWORD.finditer(value))


def redact_argv(argv: list[str]) -> list[str]:
    """The command as it may be shown or saved: values of secret-named flags hidden, and
    secret pairs and URL passwords inside any argument, and a secret flag's values among the
    words of an argument that is a command line of its own (`sh -c "… --api-key sk-…"`)."""
    return [_words_masked(shown) for shown, _ in _argv_split(argv)]


def _words_masked(value: str) -> str:
    """`value` with the secrets its words hold (as a command line) replaced by REDACTED."""
    if not any(space in value for space in " \t\n"):
        return value
    for _, hidden in _argv_split(_inner_words([value])):
        if hidden is not None and hidden != REDACTED:
            value = value.replace(hidden, REDACTED)
    return value


def scrub_argv(argv: list[str], secrets: Iterable[str]) -> list[str]:
    """redact_argv, then every known secret scrubbed from what is left: a key inside a longer
    element, as in `["sh", "-c", "vllm serve … --api-key sk-…"]` (srun, docker), is no flag."""
    scrubber = Scrubber(secrets)
    return [scrubber.scrub_text(part) for part in redact_argv(argv)]


def _argv_split(argv: list[str]) -> list[tuple[str, str | None]]:
    """Each argument as shown, with the secret it held (None if it held none)."""
    out: list[tuple[str, str | None]] = []
    hide_next = False
    for part in argv:
        if hide_next and not part.startswith("-"):
            # every value up to the next flag: `--api-key K1 K2` is valid vLLM
            out.append((REDACTED, part))
            continue
        hide_next = False
        if part.startswith("-") and "=" in part and is_secret_name(part.split("=", 1)[0]):
            name, value = part.split("=", 1)
            out.append((name + "=" + REDACTED, value))
            continue
        shown = mask_value(part)
        out.append((shown, part if shown != part else None))
        hide_next = part.startswith("-") and "=" not in part and is_secret_name(part)
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Secret-named variables hidden; in the others, secret pairs, URL passwords and a secret
    flag's values among their words (`VLLM_EXTRA = "--api-key sk-…"`)."""
    return {name: REDACTED if is_secret_name(name) else _words_masked(mask_value(value))
            for name, value in env.items()}


def secret_values(*, argvs: Iterable[list[str]] = (), env: Mapping[str, str] | None = None,
                  keys: Iterable[str | None] = ()) -> set[str]:
    """Every secret value these hold, as a log scrubber must know them: the keys themselves,
    what masking hides in each command and variable, URL passwords anywhere."""
    found: set[str] = {key for key in keys if key}
    for argv in argvs:
        for _, hidden in _argv_split([*argv, *_inner_words(argv)]):
            if hidden is not None:
                found.add(hidden)
                found.update(_hidden_in_value(hidden))
    for name, value in (env or {}).items():
        if is_secret_name(name):
            found.add(value)
        found.update(_hidden_in_value(value))
        found.update(hidden for _, hidden in _argv_split(_inner_words([value]))
                     if hidden is not None)
    return {value for value in found if len(value) >= MIN_SCRUBBED_LEN}


def _inner_words(argv: list[str]) -> list[str]:
    """The words of each element that holds a command line of its own (`sh -c "…"`)."""
    words: list[str] = []
    for part in argv:
        if any(space in part for space in " \t\n"):
            try:
                words.extend(shlex.split(part))
            except ValueError:  # unbalanced quotes: plain words still find `--api-key X`
                words.extend(part.split())
            words.append("--")  # a flag at the end of one element takes nothing from the next
    return words


def _hidden_in_value(value: str) -> set[str]:
    found = set(url_passwords(value))
    pair = _PAIR.match(value)
    if pair and is_secret_name(pair["name"]):
        found.add(pair["value"])
        found.update(pair["value"].split())  # `Bearer sk-…`: the key alone, too
    return found


class Scrubber:
    """Replaces known secret values in text with REDACTED, where each stands as a whole token:
    `hf_abc12345` in `HF_TOKEN=hf_abc12345` or `"hf_abc12345"`, not inside a longer word."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({s.encode() for s in secrets if len(s) >= MIN_SCRUBBED_LEN},
                        key=len, reverse=True)  # a longer secret before one it contains
        self._patterns = [(value, _whole_token(value)) for value in values]
        self.longest = len(values[0]) if values else 0

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def scrub_text(self, text: str) -> str:
        return self.scrub(text.encode()).decode() if self else text

    def scrub(self, data: bytes) -> bytes:
        for value, pattern in self._patterns:
            if value in data:  # a plain search first: far faster than any regex
                data = pattern.sub(REDACTED.encode(), data)
        return data


def _whole_token(value: bytes) -> re.Pattern[bytes]:
    """A value's pattern: not preceded (followed) by a word character where it starts (ends)
    with one, so `password1` is found in `x=password1` but not in `mypassword12`. The check
    before it is a look back from its end, so the regex starts with a literal (10x faster)."""
    head = rb"(?<!\w[\s\S]{%d})" % len(value) if re.match(rb"\w", value[:1]) else b""
    tail = rb"(?!\w)" if re.match(rb"\w", value[-1:]) else b""
    return re.compile(re.escape(value) + head + tail)
