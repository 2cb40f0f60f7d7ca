"""A server without /tokenize: prompts are cut by a local transformers tokenizer (the [text]
extra). Skipped where transformers is not installed (CI installs only [test])."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dspark_tui.engine.datasets.files import read_sharegpt_pairs
from dspark_tui.engine.datasets.sampling import random_prompts
from dspark_tui.engine.datasets.tokenizers import LocalTokenizer, open_tokenizer

DATA = Path(__file__).resolve().parent.parent / "data"


class _NoTokenize(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server_without_tokenize() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoTokenize)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _word_tokenizer(folder: Path) -> Path:
    """A word-level tokenizer over the test file's words that adds a BOS, as Llama's does."""
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    words = sorted({w for pair in read_sharegpt_pairs(DATA / "sharegpt_small.json")
                    for text in pair for w in text.split()})
    vocab = {"<unk>": 0, "<s>": 1, **{w: i + 2 for i, w in enumerate(words)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok.post_processor = tokenizers.processors.TemplateProcessing(single="<s> $A",
                                                                   special_tokens=[("<s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>",
                                                bos_token="<s>")
    fast.save_pretrained(folder)
    return folder


async def test_without_tokenize_the_local_tokenizer_cuts_the_prompts(
        tmp_path: Path, server_without_tokenize: str) -> None:
    folder = _word_tokenizer(tmp_path / "tok")
    tokenizer = await open_tokenizer(server_without_tokenize, "m", {}, str(folder))
    assert isinstance(tokenizer, LocalTokenizer) and tokenizer.label == f"transformers {folder}"
    assert await tokenizer.special_count() == 1
    pairs = read_sharegpt_pairs(DATA / "sharegpt_small.json")
    prompts = await random_prompts(pairs, 50, 10, 0.0, 12, 3, tokenizer)
    assert len(prompts) == 12
    for p in prompts:
        assert p.token_ids[0] == 1 and len(p.token_ids) == p.prompt_len  # one less than drawn
        assert p.text.startswith("<s>")
