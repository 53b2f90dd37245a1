"""A Hugging Face tokenizer's uses shared by the backends: the chat prompt, the ids, the text
streamed token by token."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tokenizers.decoders import DecodeStream

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def render_chat_template(
    tokenizer: PreTrainedTokenizerBase, messages: Sequence[dict[str, str]]
) -> str:
    """``messages`` as the model's chat prompt, ending where the assistant's turn begins."""
    return str(
        tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    )


def encode_plain(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    """The token ids of ``text`` without special tokens (the prompt is already rendered)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


class IncrementalText:
    """One generated row's text as deltas, at a constant cost per token.

    Fast tokenizers step a ``tokenizers`` ``DecodeStream`` (it re-decodes only the last few
    ids); a character split across tokens comes out whole once its last byte arrives. A
    tokenizer without one, or one that cleans up spaces (which can change earlier text),
    re-decodes the whole row each token: the same text at a cost that grows with the row.
    The deltas joined equal ``tokenizer.decode(ids, skip_special_tokens=True)`` once
    :meth:`rest` has been given that final text.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self._tokenizer = tokenizer
        self._rust = getattr(tokenizer, "backend_tokenizer", None)
        if getattr(tokenizer, "clean_up_tokenization_spaces", False):
            self._rust = None
        self._stream = DecodeStream(skip_special_tokens=True) if self._rust is not None else None
        self._ids: list[int] = []
        self._parts: list[str] = []

    def extend(self, ids: Sequence[int]) -> str:
        """Takes the ids of ``ids`` not seen yet (``ids`` is the whole row so far); returns the
        text they complete ("" while a character is still incomplete)."""
        new = ids[len(self._ids) :]
        self._ids.extend(new)
        if not new:
            return ""
        if self._stream is not None and self._rust is not None:
            try:
                chunks = [self._stream.step(self._rust, tid) for tid in new]
            except Exception:  # the stream lost its prefix: re-decode from here on
                self._stream = None
            else:
                return self._add("".join(c for c in chunks if c))
        text = str(self._tokenizer.decode(self._ids, skip_special_tokens=True))
        if text.endswith("\ufffd"):
            return ""
        return self._after_sent(text)

    def rest(self, text: str) -> str:
        """What of the row's final ``text`` has not been passed on yet (held-back bytes)."""
        return self._after_sent(text)

    def _after_sent(self, text: str) -> str:
        sent = "".join(self._parts)
        self._parts = [sent]
        if len(text) > len(sent) and text.startswith(sent):
            return self._add(text[len(sent) :])
        return ""

    def _add(self, delta: str) -> str:
        if delta:
            self._parts.append(delta)
        return delta
