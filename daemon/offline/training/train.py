"""``webshepherd train``: supervised fine-tuning of a judge checkpoint with TRL's ``SFTTrainer``.

The authors trained Web-Shepherd by supervised fine-tuning on checklist generation and
judgements (paper §4); this trains the same two tasks, on SFT rows (``webshepherd export
--format sft``, or the shop's generated episodes), in the exact prompt format the daemon serves:
the rows hold the rendered judge and checklist prompts, and the checkpoint's own chat template
renders them for training as it does at serving. Loss is on the answer only.

The result is a folder ``webshepherd serve --model`` loads: weights, tokenizer with its chat
template, generation config, and a card (``webshepherd-train.json`` and ``README.md``) saying
what it was trained on. On CPU with a fixed seed and step count, two runs give identical weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.training.rows import Example, example_of, read_rows
from webshepherd.protocol.errors import WebShepherdError

CARD = "webshepherd-train.json"


@dataclass(frozen=True)
class TrainOptions:
    """What to train, on what, and how."""

    base: str
    out: Path
    data: tuple[Path, ...] = ()
    steps: int | None = None  # a fixed number of optimiser steps (else ``epochs``)
    epochs: float = 1.0
    learning_rate: float = 2e-5
    batch_size: int = 8
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda
    lora_rank: int | None = None  # train LoRA adapters (peft) and merge them into the weights
    max_length: int = 4096
    warmup_steps: int = 0
    progress: bool = True
    notes: dict[str, Any] = field(default_factory=dict)  # more for the card
    held_out: tuple[str, ...] = ()  # sessions (rows' task_id) kept out of training


def load_examples(paths: Sequence[Path]) -> tuple[list[Example], list[dict[str, Any]]]:
    """The examples of SFT row files or folders, and per file: path, rows, sha256."""
    examples: list[Example] = []
    sources: list[dict[str, Any]] = []
    for path in paths:
        if not path.exists():
            raise WebShepherdError(f"{path}: no such file or folder")
        files = [path] if path.is_file() else sorted(path.iterdir())
        before = len(examples)
        for n, row in enumerate(read_rows(path), 1):
            examples.append(example_of(row, f"{path} row {n}"))
        digest = hashlib.sha256()
        for f in files:
            if f.is_file() and f.suffix in {".jsonl", ".parquet"}:
                digest.update(f.read_bytes())
        sources.append(
            {"path": path.name, "rows": len(examples) - before, "sha256": digest.hexdigest()}
        )
    if not examples:
        raise WebShepherdError("no training rows in " + ", ".join(str(p) for p in paths))
    return examples, sources


def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise WebShepherdError("--device cuda: torch sees no CUDA device (use --device cpu)")
    if name not in {"cpu", "cuda"}:
        raise WebShepherdError(f"--device {name}: expected auto, cpu or cuda")
    return name


def train(opts: TrainOptions, examples: Sequence[Example] | None = None) -> Path:
    """Fine-tune ``opts.base`` on ``examples`` (default: the rows of ``opts.data``) and save the
    checkpoint at ``opts.out`` (written beside it, then renamed into place)."""
    started = time.monotonic()
    sources: list[dict[str, Any]] = []
    if examples is None:
        examples, sources = load_examples(opts.data)
    left_out = 0
    if opts.held_out:
        keep = [e for e in examples if e.task_id not in set(opts.held_out)]
        left_out, examples = len(examples) - len(keep), keep
    if not examples:
        raise WebShepherdError(
            "no training examples" + (" besides the held-out sessions'" if opts.held_out else "")
        )
    device = _device(opts.device)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging
    from trl import SFTConfig, SFTTrainer

    hf_logging.set_verbosity_error()
    if not opts.progress:
        hf_logging.disable_progress_bar()  # loading and writing the weights
    import datasets

    try:
        tok = AutoTokenizer.from_pretrained(opts.base)
        model = AutoModelForCausalLM.from_pretrained(opts.base, dtype=torch.float32)
    except (OSError, ValueError) as e:
        raise WebShepherdError(f"--base {opts.base}: cannot load it ({e})") from e
    if not getattr(tok, "chat_template", None):
        raise WebShepherdError(
            f"--base {opts.base}: its tokenizer has no chat template; the judge is served "
            "through one, so training needs the same"
        )
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    data = Dataset.from_list(
        [
            {"prompt": e.messages, "completion": [{"role": "assistant", "content": e.answer}]}
            for e in examples
        ]
    )
    out = Path(opts.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.with_name(f".{out.name}.train-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    args = SFTConfig(
        output_dir=str(work / "trainer"),
        max_steps=opts.steps if opts.steps is not None else -1,
        num_train_epochs=opts.epochs,
        learning_rate=opts.learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=opts.warmup_steps,
        weight_decay=0.0,
        per_device_train_batch_size=opts.batch_size,
        seed=opts.seed,
        data_seed=opts.seed,
        full_determinism=device == "cpu",
        use_cpu=device == "cpu",
        max_length=opts.max_length,
        completion_only_loss=True,
        report_to="none",
        save_strategy="no",
        logging_strategy="steps",
        logging_steps=10,
        disable_tqdm=not opts.progress,
        dataloader_num_workers=0,
        bf16=False,
        fp16=False,
    )
    peft_config = None
    if opts.lora_rank:
        try:
            from peft import LoraConfig
        except ImportError as e:
            raise WebShepherdError("--lora needs peft: pip install '.[eval]' in a clone") from e
        peft_config = LoraConfig(
            r=opts.lora_rank,
            lora_alpha=2 * opts.lora_rank,
            lora_dropout=0.0,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    bars_were_on = datasets.is_progress_bar_enabled()
    if not opts.progress:
        datasets.disable_progress_bars()  # the tokenizing passes' bars; put back below
    try:
        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=data,
            processing_class=tok,
            peft_config=peft_config,
        )
        if not opts.progress:
            from transformers.trainer_callback import PrinterCallback

            trainer.remove_callback(PrinterCallback)  # the per-step log lines
        result = trainer.train()
    finally:
        if bars_were_on:
            datasets.enable_progress_bars()
    trained: Any = trainer.model
    if peft_config is not None:
        trained = trained.merge_and_unload()  # served as plain weights
    trained.generation_config.eos_token_id = tok.eos_token_id
    trained.generation_config.pad_token_id = tok.pad_token_id
    save = work / "model"
    trained.save_pretrained(save)
    tok.save_pretrained(save)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    card = {
        "base": str(opts.base),
        "data": sources,
        "examples": len(examples),
        "steps": trainer.state.global_step,
        "final_loss": losses[-1] if losses else result.training_loss,
        "train_seconds": round(time.monotonic() - started, 1),
        "options": {
            k: v
            for k, v in asdict(opts).items()
            if k not in {"base", "out", "data", "progress", "notes", "held_out"}
        },
        "device": device,
        "versions": _versions(),
        **(
            {"held_out": {"sessions": list(opts.held_out), "rows_left_out": left_out}}
            if opts.held_out
            else {}
        ),
        **opts.notes,
    }
    (save / CARD).write_text(json.dumps(card, indent=1, default=str) + "\n", "utf-8")
    (save / "README.md").write_text(_readme(card), "utf-8")
    if out.exists():
        shutil.rmtree(out)
    save.rename(out)
    shutil.rmtree(work, ignore_errors=True)
    return out


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("torch", "transformers", "trl", "peft"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _readme(card: dict[str, Any]) -> str:
    data = "\n".join(f"- `{d['path']}`: {d['rows']} rows (sha256 {d['sha256'][:12]}…)"
                     for d in card["data"]) or "- rows given in memory (see the card)"  # fmt: skip
    return (
        "# A judge trained by `webshepherd train`\n\n"
        f"Base: `{card['base']}`. {card['examples']} examples, {card['steps']} steps, final "
        f"loss {card['final_loss']:.4f}, on {card['device']}.\n\n"
        f"Trained on:\n{data}\n\n"
        "Targets come from ground truth (docs/training.md). Serve it with "
        "`webshepherd serve --model <this folder>`.\n"
    )
