"""The tiny judge: a small REAL causal LM (Qwen2 architecture, byte-level BPE, ChatML) that
judges the bundled shop, for tests and the demo.

Its base (a tokenizer trained on the prompts, an untrained Qwen2 with head dimension 64, which
vLLM's CPU attention takes) is fine-tuned by ``webshepherd train`` on the shop's generated
episodes (:mod:`webshepherd.daemon.demo.episodes`: every candidate labelled by the shop; half of
them in Chromium's tree as the extension captures it, every one on to the agent's answer, with
dwells that grow the history without progress) and on made-up format rows, with a fixed seed
and a fixed number of steps (no time budget). It knows the shop's pattern, not the web; it is
saved with ``save_pretrained`` and loaded back through ``from_pretrained`` like any checkpoint.

The judge this recipe built ships with the package (:data:`SHIPPED`, 3 MB), so that the demo and
the tests run the same judge everywhere, at once: training takes about 45 minutes on 2
CPU cores, and float results differ between CPU kinds. Its marker records the digest of the
recipe (:func:`recipe_digest`: training rows and settings); a test recomputes it, so a change to
the shop, the prompts or the settings that would change the judge is caught until
``make tiny-judge-rebuild`` ships the new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.dev.model_cache import ModelCache

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast


TINY_MODEL_VERSION = 14
MARKER = "webshepherd-tiny-model.json"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
HIDDEN = 128
HEAD_DIM = 64  # vLLM's CPU attention takes 32 and up (not 16)
LAYERS = 2
STEPS = 3600
BATCH = 4
PEAK_LR = 3e-3
EPISODES = 200
FORMAT_ROWS = 400
#: the start page's judgement rows are given this many times: one page in eight of an episode,
#: it is the one whose candidates differ least (an empty history, nothing done yet)
START_COPIES = 2
#: the share of episodes rendered as Chromium's tree (the extension's capture)
CHROMIUM_SHARE = 0.5
#: the chance that an episode's detour dwells on its page (:func:`~..demo.episodes.episode`)
DWELL = 0.5


CACHE = ModelCache("WEBSHEPHERD_TINY_MODEL", "tiny-model", TINY_MODEL_VERSION, MARKER)
is_complete = CACHE.is_complete
#: the judge built by this recipe, shipped inside the package
SHIPPED = Path(__file__).with_name("tiny_judge")


def default_tiny_model_path() -> Path:
    """``$WEBSHEPHERD_TINY_MODEL``, else the shipped judge (:data:`SHIPPED`), else (a copy of
    the package without it) ``<user cache>/webshepherd/tiny-model-v<N>``."""
    if not os.environ.get(CACHE.env) and is_complete(SHIPPED):
        return SHIPPED
    return CACHE.default_path()


def ensure_tiny_model(path: str | Path | None = None, *, progress: bool = True) -> Path:
    """The tiny judge at ``path`` (default: :func:`default_tiny_model_path`), built if missing."""
    target = Path(path).expanduser() if path is not None else default_tiny_model_path()
    if is_complete(target):
        return target
    return build_tiny_model(target, progress=progress, replace=False)


def recipe_digest(rows: list[Any], seed: int = 0, steps: int = STEPS) -> str:
    """SHA-256 of what makes the judge: its training rows, seed, steps and settings."""
    settings = {
        "version": TINY_MODEL_VERSION,
        "seed": seed,
        "steps": steps,
        "hidden": HIDDEN,
        "head_dim": HEAD_DIM,
        "layers": LAYERS,
        "batch": BATCH,
        "peak_lr": PEAK_LR,
    }
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for row in rows:
        digest.update(json.dumps(row, sort_keys=True).encode() + b"\n")
    return digest.hexdigest()


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


def build_tokenizer(texts: list[str], vocab_size: int = 1024) -> PreTrainedTokenizerFast:
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


def training_rows(seed: int = 0, episodes: int = EPISODES, formats: int = FORMAT_ROWS) -> list[Any]:
    """The tiny judge's training rows: ``episodes`` shop episodes (training variants, labelled
    by the shop; the start page's judgements :data:`START_COPIES` times) and ``formats`` made-up
    format rows, in a seeded order."""
    from webshepherd.daemon.demo.episodes import rows
    from webshepherd.daemon.demo.shop import ShopServer
    from webshepherd.daemon.demo.variants import training_variant
    from webshepherd.daemon.dev.tiny_data import example
    from webshepherd.daemon.offline.training.rows import sft_row

    rng = random.Random(seed)
    out: list[Any] = []
    with ShopServer() as server:
        for i in range(episodes):
            chromium = rng.random() < CHROMIUM_SHARE
            for row in rows(
                server, training_variant(i), rng, chromium=chromium, to_answer=True, dwell=DWELL
            ):
                start = row.get("step_id") == 0 and row.get("label") != "reference"
                out.extend([row] * (START_COPIES if start else 1))
    for i in range(formats):
        e = example(rng)
        out.append(sft_row("sharegpt", e.messages, e.answer, {"task_id": f"format-{i}"}))
    rng.shuffle(out)
    return out


def build_tiny_model(
    path: str | Path,
    *,
    seed: int = 0,
    steps: int = STEPS,
    progress: bool = True,
    replace: bool = True,
) -> Path:
    """Build the tiny judge at ``path``: a tokenizer and an untrained Qwen2 base (the "tiny
    base"), then ``webshepherd train`` on :func:`training_rows` for ``steps`` steps on CPU.

    A fixed seed and step count, no time budget: the same judge on every machine of one CPU
    kind. It is written beside ``path`` and renamed into place with its marker file, so a
    half-written model is never reused; ``replace=False`` keeps a complete one another
    process saved.
    """
    from webshepherd.daemon.offline.export.writers import write_jsonl
    from webshepherd.daemon.offline.training.train import TrainOptions, train

    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.monotonic()
    rows = training_rows(seed)
    base = tmp / "base"
    tok = save_untrained_base(base, seed, rows)
    data = tmp / "rows.jsonl"
    write_jsonl(data, rows)
    model_dir = train(
        TrainOptions(
            base=str(base),
            out=tmp / "model",
            data=(data,),
            steps=steps,
            learning_rate=PEAK_LR,
            batch_size=BATCH,
            seed=seed,
            device="cpu",
            max_length=2048,
            warmup_steps=steps // 20,
            progress=progress,
            notes={"built_by": "webshepherd.daemon.dev.tiny_model", "episodes": EPISODES},
        )
    )
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    card = json.loads((model_dir / "webshepherd-train.json").read_text("utf-8"))
    meta = {
        "seed": seed,
        "steps": card["steps"],
        "final_loss": card["final_loss"],
        "recipe": recipe_digest(rows, seed, steps),
    }
    extras = [_CardFiles(model_dir, base)]
    out = CACHE.save(tmp / "final", target, model, tok, extras, meta, started=started,
                     replace=replace)  # fmt: skip
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def save_untrained_base(
    path: Path, seed: int = 0, rows: list[Any] | None = None
) -> PreTrainedTokenizerFast:
    """The tiny base at ``path``: a tokenizer trained on ``rows``' text (default: the training
    rows) and a Qwen2 model with seeded random weights; returns the tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from webshepherd.daemon.offline.training.rows import example_of

    examples = [example_of(r) for r in (rows if rows is not None else training_rows(seed))]
    tok = build_tokenizer([tok_render(None, e.messages) + e.answer for e in examples[:600]])
    torch.manual_seed(seed)
    config = Qwen2Config(  # type: ignore[call-arg]  # head_dim: a config field its stub omits
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        intermediate_size=4 * HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HIDDEN // HEAD_DIM,
        num_key_value_heads=HIDDEN // HEAD_DIM,
        head_dim=HEAD_DIM,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return tok


class _CardFiles:
    """Copies the training card beside the saved model (``save_pretrained``-like), the base's
    temporary folder named by what it was."""

    BASE = "the tiny base (webshepherd.daemon.dev.tiny_model.save_untrained_base)"

    def __init__(self, source: Path, base: Path) -> None:
        self.source, self.base = source, base

    def save_pretrained(self, folder: Path) -> None:
        for name in ("webshepherd-train.json", "README.md"):
            text = (self.source / name).read_text("utf-8")
            (Path(folder) / name).write_text(text.replace(str(self.base), self.BASE), "utf-8")


def tok_render(tok: PreTrainedTokenizerBase | None, messages: list[dict[str, str]]) -> str:
    """ChatML rendering; with ``tok`` it goes through the tokenizer's own chat template."""
    if tok is not None:
        return str(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    return (
        "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        + "<|im_start|>assistant\n"
    )
