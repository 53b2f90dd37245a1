"""A tiny REAL vision-language model for tests and demos: Qwen2.5-VL architecture.

It starts from the tiny text model (tiny_model.py: its tokenizer gains the vision special
tokens, its two decoder layers become the language model; for text, M-RoPE with equal
positions on the three axes is the text model's RoPE), adds a one-block vision tower
(8-pixel patches, 2x2 merge) and is trained briefly on CPU on judge prompts in the authors'
multimodal variant, each with a small screenshot drawn from its page, so it writes
judgements with real image tokens in its context. Its rewards are noise; its pipeline is
real: a Qwen2-VL image processor, the chat template's image markup, ``save_pretrained``
and ``from_pretrained``.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webshepherd.daemon.dev.model_cache import ModelCache
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.dev.training import train_steps

if TYPE_CHECKING:
    import torch
    from transformers import (
        PreTrainedModel,
        PreTrainedTokenizerBase,
        Qwen2_5_VLForConditionalGeneration,
    )
    from webshepherd.daemon.dev.tiny_data import Example
    from webshepherd.daemon.engine.backends.vision import Image


TINY_VISION_VERSION = 5  # one more with each new tiny text judge, its base
MARKER = "webshepherd-tiny-vision-model.json"
VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# ChatML; a list content's text parts as they are, an image part as the model's image markup
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}"
    "{%- if part['type'] == 'text' %}{{- part['text'] }}"
    "{%- elif part['type'] in ('image', 'image_url') %}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- endif %}{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
PATCH, MERGE = 8, 2
MIN_PIXELS, MAX_PIXELS = 32 * 32, 96 * 96
STEPS = 200
PEAK_LR = 3e-3


CACHE = ModelCache(
    "WEBSHEPHERD_TINY_VISION_MODEL", "tiny-vision-model", TINY_VISION_VERSION, MARKER
)
#: ``$WEBSHEPHERD_TINY_VISION_MODEL`` or ``<user cache>/webshepherd/tiny-vision-model-v<N>``.
default_tiny_vision_path = CACHE.default_path
is_complete = CACHE.is_complete


def ensure_tiny_vision_model(
    path: str | Path | None = None, *, steps: int = STEPS, progress: bool = True
) -> Path:
    """The cached tiny vision model at ``path`` (default: :func:`default_tiny_vision_path`)."""
    target = Path(path).expanduser() if path is not None else default_tiny_vision_path()
    if is_complete(target):
        return target
    return build_tiny_vision_model(target, steps=steps, progress=progress, replace=False)


def _token_id(tok: PreTrainedTokenizerBase, token: str) -> int:
    tid = tok.convert_tokens_to_ids(token)
    assert isinstance(tid, int), token  # one token: one id
    return tid


def _vision_model(
    text: PreTrainedModel, tok: PreTrainedTokenizerBase
) -> Qwen2_5_VLForConditionalGeneration:
    """A Qwen2.5-VL model whose language model is ``text``'s (embeddings grown for the new
    tokens) and whose one-block vision tower is new."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tc = text.config
    head_dim = tc.hidden_size // tc.num_attention_heads
    third = head_dim // 2 // 3
    rope = dict(tc.rope_parameters or {})
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tok),
            "hidden_size": tc.hidden_size,
            "intermediate_size": tc.intermediate_size,
            "num_hidden_layers": tc.num_hidden_layers,
            "num_attention_heads": tc.num_attention_heads,
            "num_key_value_heads": tc.num_key_value_heads,
            "max_position_embeddings": tc.max_position_embeddings,
            "rms_norm_eps": tc.rms_norm_eps,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": rope.get("rope_theta", 10000.0),
                "mrope_section": [head_dim // 2 - 2 * third, third, third],
            },
            "tie_word_embeddings": True,
            "bos_token_id": None,
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id,
        },
        vision_config={
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": PATCH,
            "spatial_merge_size": MERGE,
            "temporal_patch_size": 2,
            "out_hidden_size": tc.hidden_size,
            "window_size": PATCH * MERGE * 2,
            "fullatt_block_indexes": [0],
        },
        image_token_id=_token_id(tok, "<|image_pad|>"),
        video_token_id=_token_id(tok, "<|video_pad|>"),
        vision_start_token_id=_token_id(tok, "<|vision_start|>"),
        vision_end_token_id=_token_id(tok, "<|vision_end|>"),
        tie_word_embeddings=True,
    )
    model = Qwen2_5_VLForConditionalGeneration(config)
    lm = model.model.language_model
    src = text.model
    with torch.no_grad():
        old = src.embed_tokens.weight
        lm.embed_tokens.weight[: old.shape[0]] = old
        lm.embed_tokens.weight[old.shape[0] :] = old.mean(0)
        lm.layers.load_state_dict(src.layers.state_dict())
        lm.norm.load_state_dict(src.norm.state_dict())
    model.tie_weights()
    return model


def build_tiny_vision_model(
    path: str | Path,
    *,
    steps: int = STEPS,
    seed: int = 0,
    progress: bool = True,
    replace: bool = True,
    text_model: str | Path | None = None,
) -> Path:
    """Build, train for ``steps`` steps on CPU, and save the tiny vision model at ``path``
    (from the tiny text model at ``text_model``, default its cache, built if missing)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )
    from webshepherd.daemon.dev.tiny_data import example, judge_example
    from webshepherd.daemon.engine.backends.vision import VisionInputs, place_image

    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    started = time.monotonic()

    base = ensure_tiny_model(text_model, progress=progress)
    tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
    tok.add_tokens(VISION_TOKENS, special_tokens=True)
    tok.chat_template = CHAT_TEMPLATE
    text = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
    model = _vision_model(text, tok)
    del text
    images = Qwen2VLImageProcessorPil(
        min_pixels=MIN_PIXELS,
        max_pixels=MAX_PIXELS,
        patch_size=PATCH,
        merge_size=MERGE,
        temporal_patch_size=2,
    )
    vision = VisionInputs(images, model.config)

    def encode(e: Example) -> tuple[list[int], list[int], Image | None]:
        prompt = str(
            tok.apply_chat_template(e.messages, tokenize=False, add_generation_prompt=True)
        )
        pic = None
        if e.image is not None:
            pic = vision.image(("image/png", e.image), torch.float32)
            prompt, _ = place_image(prompt, pic.markup)
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        return ids, tok(e.answer + "<|im_end|>", add_special_tokens=False)["input_ids"], pic

    # mostly screenshot rows; some text rows keep the text path as it was
    data = [encode(judge_example(rng, with_image=True)) for _ in range(160)]
    data += [encode(example(rng)) for _ in range(40)]

    def loss_of_step(step: int) -> torch.Tensor:
        rows = rng.sample(data, 4)
        width = max(len(p) + len(a) for p, a, _ in rows)
        ids = torch.full((len(rows), width), tok.pad_token_id)
        labels = torch.full((len(rows), width), -100)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, (p, a, _) in enumerate(rows):  # right padding
            ids[i, : len(p) + len(a)] = torch.tensor(p + a)
            labels[i, len(p) : len(p) + len(a)] = torch.tensor(a)
            mask[i, : len(p) + len(a)] = 1
        pics = [pic for _, _, pic in rows if pic is not None]
        extra: dict[str, Any] = {}
        if pics:
            extra = {
                "pixel_values": torch.cat([p.pixel_values for p in pics]),
                "image_grid_thw": torch.cat([p.grid_thw for p in pics]),
            }
        return model(
            input_ids=ids,
            attention_mask=mask,
            labels=labels,
            mm_token_type_ids=(ids == vision.image_token_id).int(),
            **extra,
        ).loss

    loss_v = train_steps(
        model,
        loss_of_step,
        steps=steps,
        peak_lr=PEAK_LR,
        progress=progress,
        label="building tiny vision model",
    )
    meta = {"seed": seed, "steps": steps, "final_loss": loss_v}
    return CACHE.save(tmp, target, model, tok, [images], meta, started=started, replace=replace)
