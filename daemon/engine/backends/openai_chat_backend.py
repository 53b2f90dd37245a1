"""A judge behind any OpenAI-compatible chat-completions server (``--backend openai-chat``).

No local model files or tokenizer: the engine's rendered prompts are a neutral serialisation of
the judge messages (:func:`render_messages`, read back by :func:`parse_messages`), sent as
``messages`` to ``POST {base}/chat/completions`` with ``logprobs: true`` and ``top_logprobs``,
one request per candidate, ``n`` samples each (separate requests when a server refuses or
ignores ``n``, said once in the log). With ``text+image`` the user message is split around the
screenshot, an ``image_url`` part with a ``data:`` URL, as the authors send it. Label
probabilities come from each generated token's
``top_logprobs`` in ``choices[].logprobs.content``: ``label_source="top_k"``. A token whose
``top_logprobs`` is empty counts only its own log-probability (its sampled label then has
probability 1 at that position). A reply without logprobs is a ``ModelError`` naming what the
server said, never a reward of 0.

Token counts are estimates from the UTF-8 length (the same over-estimate as the completions
backend without a tokenizer); the counts the server reports in ``usage`` are what ``stats``
shows.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from webshepherd.daemon.engine.backends.base import (
    DeltaCallback,
    Generation,
    JudgeBatch,
    JudgeOutput,
)
from webshepherd.daemon.engine.backends.openai_backend import (
    OpenAIBackend,
    StreamedChoices,
    usage_counts,
)
from webshepherd.daemon.engine.prompts import IMAGE_PLACEHOLDER, image_content
from webshepherd.protocol.errors import ModelError

__all__ = ["OpenAIChatBackend", "chat_chunk_as_completion", "parse_messages", "render_messages"]

log = logging.getLogger(__name__)

# Record and unit separators frame the messages in the engine's rendered text; they are
# removed from contents (an AX tree never needs them) so the text always parses back.
_MESSAGE, _ROLE_END = "\x1e", "\x1f"
_CONTROL = re.compile("[\x1e\x1f]")


def render_messages(messages: Sequence[dict[str, Any]]) -> str:
    """Messages as one text whose prefixes are shared exactly like a chat template's."""
    return "".join(
        f"{_MESSAGE}{m['role']}{_ROLE_END}{_CONTROL.sub('', str(m['content']))}" for m in messages
    )


def parse_messages(text: str) -> list[dict[str, str]]:
    """The messages :func:`render_messages` wrote (``ModelError`` for any other text)."""
    if not text.startswith(_MESSAGE):
        raise ModelError("the chat backend was given a prompt it did not render")
    out = []
    for part in text[1:].split(_MESSAGE):
        role, sep, content = part.partition(_ROLE_END)
        if not sep:
            raise ModelError("the chat backend was given a prompt it did not render")
        out.append({"role": role, "content": content})
    return out


def _top(entries: Any) -> dict[str, float | None]:
    """``[{token, logprob}, …]`` as ``{token: logprob}`` (duplicate texts keep the largest)."""
    top: dict[str, float | None] = {}
    for e in entries or []:
        if isinstance(e, dict) and isinstance(e.get("token"), str):
            lp = e.get("logprob")
            if isinstance(lp, int | float):
                prev = top.get(e["token"])
                top[e["token"]] = float(lp) if prev is None else max(prev, float(lp))
    return top


def chat_chunk_as_completion(chunk: dict[str, Any]) -> dict[str, Any]:
    """A chat reply or stream chunk in the completions shape :class:`StreamedChoices` folds
    (``text`` and legacy ``logprobs``); a token without ``top_logprobs`` keeps its own."""
    choices = []
    for c in chunk.get("choices") or []:
        if not isinstance(c, dict):
            raise ModelError("the chat server's reply has a choice that is not an object")
        part = c.get("delta") if isinstance(c.get("delta"), dict) else c.get("message")
        text = part.get("content") if isinstance(part, dict) else None
        content = (c.get("logprobs") or {}).get("content") if isinstance(c, dict) else None
        tokens, tops = [], []
        for t in content or []:
            if not isinstance(t, dict) or not isinstance(t.get("token"), str):
                raise ModelError("the chat server's logprobs have an entry without a token")
            top = _top(t.get("top_logprobs"))
            if not top and isinstance(t.get("logprob"), int | float):
                top = {t["token"]: float(t["logprob"])}
            tokens.append(t["token"])
            tops.append(top)
        choices.append(
            {
                "index": c.get("index", 0),
                "text": text if isinstance(text, str) else "",
                "logprobs": {"tokens": tokens, "top_logprobs": tops} if content else None,
                "finish_reason": c.get("finish_reason"),
            }
        )
    out: dict[str, Any] = {"choices": choices}
    for key in ("usage", "error"):
        if key in chunk:
            out[key] = chunk[key]
    return out


def _with_image(
    messages: list[dict[str, str]], image: tuple[str, bytes] | None
) -> list[dict[str, Any]]:
    """The user messages holding the image placeholder split around the screenshot as a
    ``data:`` URL (the authors' multimodal layout); unchanged without an image."""
    if image is None:
        return list(messages)
    mime, data = image
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return [
        {"role": m["role"], "content": image_content(m["content"], url)}
        if m["role"] == "user" and IMAGE_PLACEHOLDER in m["content"]
        else m
        for m in messages
    ]


class OpenAIChatBackend(OpenAIBackend):
    """The completions backend's HTTP, retries and streaming, speaking chat-completions."""

    name = "openai-chat"
    endpoint = "chat/completions"
    accepts_images = True

    def __init__(self, base_url: str, model: str, **options: Any) -> None:
        # no checkpoint here: a request names its temperature and n only, as the authors'
        # langchain requests did (a vLLM server adds its model's generation config itself)
        options.pop("tokenizer", None)
        options.pop("sampling", None)
        super().__init__(base_url, model, **options)
        self._n_refused = False
        self._n_lock = threading.Lock()

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        return render_messages(messages)

    def generate(
        self, prompt: str, max_new_tokens: int, temperature: float = 0.0, stop: Sequence[str] = ()
    ) -> str:
        reply = self._complete(
            {
                "messages": parse_messages(prompt),
                "max_tokens": max_new_tokens,
                "temperature": temperature,
                "stop": list(stop) or None,
            }
        )
        folded = StreamedChoices(1)
        folded.add(chat_chunk_as_completion({"choices": reply["choices"][:1]}))
        return folded.generations()[0].text

    def judge(
        self,
        batch: JudgeBatch,
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> JudgeOutput:
        n, k, answered = self._opening(batch, cancel)
        if answered is not None:
            return answered
        messages: list[list[dict[str, Any]]] = [
            _with_image(parse_messages(batch.prefix + s), batch.image) for s in batch.suffixes
        ]
        temperature = batch.temperature_used

        def one(c: int) -> tuple[list[Generation], dict[str, Any]]:
            def delta(sample: int, text: str) -> None:
                if on_delta is not None:
                    on_delta(c, sample, text)

            return self._samples(messages[c], n, batch, temperature, delta, cancel)

        with ThreadPoolExecutor(min(k, self.max_concurrency), "openai-chat") as pool:
            results = list(pool.map(one, range(k)))
        usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0}
        cached = 0
        for _, u in results:
            usage["prompt_tokens"] += int(u.get("prompt_tokens") or 0)
            usage["completion_tokens"] += int(u.get("completion_tokens") or 0)
            details = u.get("prompt_tokens_details")
            if isinstance(details, dict):
                cached += int(details.get("cached_tokens") or 0)
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        self.remote.add_usage(usage)
        prefilled, generated, shared = usage_counts(
            usage,
            sum(len(g.tokens) for gens, _ in results for g in gens),
        )
        return JudgeOutput(
            generations=tuple(tuple(gens) for gens, _ in results),
            prefilled_tokens=prefilled,
            generated_tokens=generated,
            prefix_shared=shared,
            label_source="top_k",
        )

    def health(self) -> dict[str, object]:
        return {**super().health(), "n_refused": self._n_refused}

    # -- internals ---------------------------------------------------------------------

    def _samples(
        self,
        messages: list[dict[str, Any]],
        n: int,
        batch: JudgeBatch,
        temperature: float,
        on_delta: Callable[[int, str], None],
        cancel: threading.Event | None,
    ) -> tuple[list[Generation], dict[str, Any]]:
        """``n`` samples of one candidate: one request with ``n``, or one per sample."""
        body = {
            "messages": messages,
            "max_tokens": batch.max_new_tokens,
            "temperature": temperature,
            "stop": list(batch.stop) or None,
            "logprobs": True,
            "top_logprobs": self.top_logprobs,
        }
        gens: list[Generation] = []
        usages: list[dict[str, Any]] = []
        if n > 1 and not self._n_refused:
            try:
                got, usage = self._request_choices({**body, "n": n}, n, on_delta, cancel)
            except ModelError as e:
                if "HTTP 400" not in e.message or not re.search(r"\bn\b", e.message):
                    raise
                self._refuse_n(f"it refused n={n} ({e.message})")
                got, usage = [], {}
            if got and len(got) < n:
                self._refuse_n(f"it returned {len(got)} choices for n={n}")
            gens.extend(got[:n])
            usages.append(usage)
        while len(gens) < n:
            first = len(gens)

            def shifted(sample: int, text: str, first: int = first) -> None:
                on_delta(first + sample, text)

            got, usage = self._request_choices(body, 1, shifted, cancel)
            gens.extend(got[:1])
            usages.append(usage)
        for g in gens:
            if g.text and not g.tokens and g.finish_reason != "aborted":
                raise ModelError(
                    f"the chat server {self.base_url} ({self.model_id}) answered without "
                    f"logprobs (it wrote {g.text[:80]!r}): rewards need a server that returns "
                    "logprobs with top_logprobs"
                )
        total: dict[str, Any] = {}
        for u in usages:
            for key in ("prompt_tokens", "completion_tokens"):
                total[key] = int(total.get(key) or 0) + int(u.get(key) or 0)
            details = u.get("prompt_tokens_details")
            if isinstance(details, dict):
                cached = int(details.get("cached_tokens") or 0)
                total["prompt_tokens_details"] = {
                    "cached_tokens": total.get("prompt_tokens_details", {}).get("cached_tokens", 0)
                    + cached
                }
        return gens, total

    def _refuse_n(self, why: str) -> None:
        with self._n_lock:
            if not self._n_refused:
                log.warning(
                    "the chat server %s: %s; sampling with one request per sample from now on",
                    self.base_url,
                    why,
                )
            self._n_refused = True

    def _request_choices(
        self,
        body: dict[str, Any],
        count: int,
        on_delta: Callable[[int, str], None],
        cancel: threading.Event | None,
    ) -> tuple[list[Generation], dict[str, Any]]:
        """One request's choices (fewer than ``count`` when the server ignored ``n``)."""
        if self.stream:
            folded, cancelled, seen = self._stream_choices(
                body, count, on_delta, cancel, convert=chat_chunk_as_completion
            )
            gens = folded.generations(aborted=cancelled)
        else:
            folded = StreamedChoices(count)
            reply = self._complete(body)
            converted = chat_chunk_as_completion(reply)
            seen = len(converted["choices"])
            for i, text in folded.add(converted):
                on_delta(i, text)
            gens = folded.generations()
        if not seen:
            raise ModelError(f"the chat server {self.base_url} returned no choices")
        return gens[: min(seen, count)], folded.usage
