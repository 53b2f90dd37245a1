"""A tiny REAL causal LM for tests and demos: Qwen2 architecture, byte-level BPE, ChatML.

It is trained for a few seconds on CPU on the real prompt templates filled with
synthetic pages, so it writes checklists and ``<answer>`` blocks in the
published model's format. Its rewards are noise; its pipeline is real: it is
saved with ``save_pretrained`` and loaded back through ``from_pretrained``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

from webshepherd.daemon.dev.model_cache import ModelCache
from webshepherd.daemon.dev.training import train_briefly

TINY_MODEL_VERSION = 4
MARKER = "webshepherd-tiny-model.json"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
_PROMPT_WINDOW = 48  # prompt tokens kept in training (the end of the prompt): keeps training fast
MIN_STEPS = 300
PEAK_LR = 1e-2


CACHE = ModelCache("WEBSHEPHERD_TINY_MODEL", "tiny-model", TINY_MODEL_VERSION, MARKER)
#: ``$WEBSHEPHERD_TINY_MODEL`` or ``<user cache>/webshepherd/tiny-model-v<N>``.
default_tiny_model_path = CACHE.default_path
is_complete = CACHE.is_complete


def ensure_tiny_model(
    path: str | Path | None = None, *, seconds: float = 45.0, progress: bool = True
) -> Path:
    """The cached tiny model at ``path`` (default: :func:`default_tiny_model_path`)."""
    target = Path(path).expanduser() if path is not None else default_tiny_model_path()
    if is_complete(target):
        return target
    return build_tiny_model(target, seconds=seconds, progress=progress, replace=False)


def _label_words() -> list[str]:
    from webshepherd.daemon.engine.labels import LABEL_VARIANTS

    words = [v for vs in LABEL_VARIANTS.values() for v in vs]
    return [*words, "Progress", "ĠProgress", "ĊProgress", "Checklist", "ĠChecklist"]


def _force_tokens(tok_json: dict[str, Any], words: list[str]) -> None:
    """Make every word a whole vocabulary entry, reachable by top-priority merges."""
    model = tok_json["model"]
    vocab: dict[str, int] = model["vocab"]
    next_id = max(max(vocab.values()), *(t["id"] for t in tok_json["added_tokens"])) + 1
    chain: list[list[str]] = []
    seen: set[tuple[str, str]] = set()
    for w in words:
        cur = w[0]
        for ch in w[1:]:
            pair = (cur, ch)
            cur += ch
            if pair not in seen:
                seen.add(pair)
                chain.append([pair[0], pair[1]])
            if cur not in vocab:
                vocab[cur] = next_id
                next_id += 1
    old = [m.split(" ", 1) if isinstance(m, str) else m for m in model["merges"]]
    model["merges"] = chain + [m for m in old if tuple(m) not in seen]


def build_tokenizer(texts: list[str], vocab_size: int = 1024) -> Any:
    """Byte-level BPE trained on ``texts``, label words forced in, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    data = json.loads(tok.to_str())
    _force_tokens(data, _label_words())
    tok = Tokenizer.from_str(json.dumps(data))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        model_max_length=2048,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(
    path: str | Path,
    *,
    seconds: float = 45.0,
    seed: int = 0,
    progress: bool = True,
    replace: bool = True,
) -> Path:
    """Build, train for ``seconds`` on CPU, and save the tiny model at ``path``.

    The model is written to a temporary folder and renamed into place with its
    marker file, so a half-written model is never reused. ``replace=False``
    keeps a complete model that another process saved meanwhile.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from webshepherd.daemon.dev.tiny_data import example

    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    started = time.monotonic()

    corpus = [example(rng) for _ in range(1500)]
    tok = build_tokenizer([str(tok_render(None, e.messages)) + e.answer for e in corpus[:600]])

    def encode(e: Any) -> tuple[list[int], list[int]]:
        prompt = tok(tok_render(tok, e.messages), add_special_tokens=False)["input_ids"]
        return prompt, tok(e.answer + "<|im_end|>", add_special_tokens=False)["input_ids"]

    data = [encode(e) for e in corpus]
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)

    def loss_of_step(step: int) -> Any:
        # Short windows teach the format fast; full prompts (every other step) teach the
        # model to look past the long template, as it must at inference.
        full = step % 2 == 1
        size = 4 if full else 8
        rows = [(p if full else p[-_PROMPT_WINDOW:], a) for p, a in rng.sample(data, size)]
        width = max(len(p) + len(a) for p, a in rows)
        ids = torch.full((size, width), tok.pad_token_id)
        labels = torch.full((size, width), -100)
        for i, (p, a) in enumerate(rows):  # right padding: causal attention never sees it
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
            labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
        return model(input_ids=ids, labels=labels).loss

    step, loss_v = train_briefly(
        model,
        loss_of_step,
        seconds=seconds,
        min_steps=MIN_STEPS,
        peak_lr=PEAK_LR,
        cap=3,
        started=started,
        progress=progress,
        label="building tiny model",
    )
    meta = {"seed": seed, "steps": step, "final_loss": loss_v}
    return CACHE.save(tmp, target, model, tok, [], meta, started=started, replace=replace)


def tok_render(tok: Any, messages: list[dict[str, str]]) -> str:
    """ChatML rendering; with ``tok`` it goes through the tokenizer's own chat template."""
    if tok is not None:
        return str(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    return (
        "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        + "<|im_start|>assistant\n"
    )
