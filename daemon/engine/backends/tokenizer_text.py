"""A Hugging Face tokenizer's two uses shared by the backends: the chat prompt and the ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def render_chat_template(tokenizer: Any, messages: Sequence[dict[str, str]]) -> str:
    """``messages`` as the model's chat prompt, ending where the assistant's turn begins."""
    return str(
        tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    )


def encode_plain(tokenizer: Any, text: str) -> list[int]:
    """The token ids of ``text`` without special tokens (the prompt is already rendered)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
