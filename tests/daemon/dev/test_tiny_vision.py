"""The tiny vision model is a real Qwen2.5-VL checkpoint, built by the CLI and loaded back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from webshepherd.daemon.dev.tiny_vision import MARKER, is_complete
from webshepherd.daemon.engine.labels import label_token_ids

pytestmark = pytest.mark.model


def test_loads_back_through_from_pretrained(tiny_vision_model_path: Path) -> None:
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

    assert is_complete(tiny_vision_model_path)
    meta = json.loads((tiny_vision_model_path / MARKER).read_text())
    model = AutoModelForImageTextToText.from_pretrained(tiny_vision_model_path)
    tok = AutoTokenizer.from_pretrained(tiny_vision_model_path)
    proc = AutoImageProcessor.from_pretrained(tiny_vision_model_path)
    assert model.config.model_type == "qwen2_5_vl"
    assert meta["parameters"] == sum(p.numel() for p in model.parameters()) < 1_000_000
    assert meta["steps"] > 0 and meta["final_loss"] < 2.0
    assert tok.convert_tokens_to_ids("<|image_pad|>") == model.config.image_token_id
    assert proc.patch_size == model.config.vision_config.patch_size
    assert proc.merge_size == model.config.vision_config.spatial_merge_size
    rendered = tok.apply_chat_template(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "a "},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}},
                    {"type": "text", "text": " b"},
                ],
            }
        ],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert rendered == (
        "<|im_start|>user\na <|vision_start|><|image_pad|><|vision_end|> b<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert set(label_token_ids(tok).values()) == {0, 1, 2}


def test_dev_tiny_model_vision_builds_a_checkpoint(tmp_path: Path, tiny_model_path: Path) -> None:
    out = tmp_path / "vision"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "webshepherd.daemon.cli",
            "dev",
            "tiny-model",
            "--vision",
            str(out),
            "--steps",
            "1",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "WEBSHEPHERD_TINY_MODEL": str(tiny_model_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(str(out))
    assert is_complete(out)
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(out)
    assert model.config.vision_config.depth == 1
