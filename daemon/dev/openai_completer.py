"""The completions behind :mod:`.openai_server`: request validation, and generation on a
transformers model with top-k logprobs in the legacy completions format, whole or as
streamed chunks (plain dicts; no HTTP here). A vision-language model also takes one inline
``image_url`` per chat request, prefilled with its 3D M-RoPE positions as the backend does."""

from __future__ import annotations

import base64
import math
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from webshepherd.daemon.engine.backends.decode_loop import Rows, decode, model_forward, pick_tokens
from webshepherd.daemon.engine.backends.kv_cache import cache_of
from webshepherd.daemon.engine.backends.transformers_backend import TransformersBackend
from webshepherd.daemon.engine.backends.vision import IMAGE_PAD, VISION_END, VISION_START, Image

MAX_LOGPROBS = 20


class RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _stop_cut(text: str, stops: Sequence[str]) -> int | None:
    """Index of the earliest stop string in ``text``, else ``None``."""
    hits = [i for s in stops if s and (i := text.find(s)) >= 0]
    return min(hits) if hits else None


@dataclass
class _Row:
    """One sample being generated: token ids, their logprobs and top-k, what was streamed."""

    ids: list[int] = field(default_factory=list)
    lps: list[float] = field(default_factory=list)
    tops: list[dict[str, float]] = field(default_factory=list)
    finish: str | None = None
    sent_tokens: int = 0
    sent_text: str = ""


@dataclass(frozen=True)
class CompletionParams:
    """A validated completions request."""

    prompts: list[str]
    n: int
    max_tokens: int
    temperature: float
    stops: list[str]
    k: int
    seed: int | None
    include_usage: bool
    image: Image | None = None  # a chat request's screenshot (its tokens are in the prompt)


class Completer:
    """Runs completions on a loaded transformers model (one at a time)."""

    def __init__(self, backend: TransformersBackend) -> None:
        self.backend = backend
        self.model = backend.model
        self.tokenizer = backend.tokenizer
        self.model_id = backend.model_id
        self._lock = backend._lock  # the daemon may score on the same model meanwhile
        self._eos = set(backend._eos)
        self._pieces: dict[int, str] = {}
        self.disconnects = 0  # streams whose client went away before the end

    def params(self, body: dict[str, Any]) -> CompletionParams:
        """Validate a request body (``RequestError`` with an HTTP status when it is bad)."""
        prompts = body.get("prompt")
        if isinstance(prompts, str):
            prompts = [prompts]
        if (
            not isinstance(prompts, list)
            or not prompts
            or not all(isinstance(p, str) for p in prompts)
        ):
            raise RequestError(400, "'prompt' must be a string or a non-empty list of strings")
        n = self._int(body, "n", 1, 1, 64)
        max_tokens = self._int(body, "max_tokens", 16, 1, 1 << 20)
        k = self._int(body, "logprobs", 0, 0, MAX_LOGPROBS) if body.get("logprobs") else 0
        temperature = float(body.get("temperature", 1.0))
        if not 0 <= temperature <= 10:
            raise RequestError(400, "'temperature' must lie in [0, 10]")
        stop = body.get("stop") or []
        stops = [stop] if isinstance(stop, str) else list(stop)
        if not all(isinstance(s, str) for s in stops):
            raise RequestError(400, "'stop' must be a string or a list of strings")
        seed = body.get("seed")
        options = body.get("stream_options") or {}
        return CompletionParams(
            prompts=prompts,
            n=n,
            max_tokens=max_tokens,
            temperature=temperature,
            stops=[s for s in stops if s],
            k=k,
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
            image=body.get("_image"),
        )

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The whole completion as one JSON reply."""
        p = self.params(body)
        if p.image is not None and len(p.prompts) != 1:
            raise RequestError(400, "an image goes with one prompt")
        choices: list[dict[str, Any]] = []
        prompt_ids = [self._prompt_ids(prompt, p.max_tokens) for prompt in p.prompts]
        prompt_tokens = completion_tokens = 0
        with self._lock, torch.inference_mode():
            if p.seed is not None:
                torch.manual_seed(p.seed)
            for ids in prompt_ids:
                prompt_tokens += len(ids)
                *_, rows = self._steps(ids, p)  # the rows after the last token
                for row in rows:
                    completion_tokens += len(row.ids)
                    choices.append({"index": len(choices), **self._choice(row, p)})
        return {
            **self._head("text_completion"),
            "choices": choices,
            "usage": _usage(prompt_tokens, completion_tokens),
        }

    def stream(self, p: CompletionParams) -> Generator[dict[str, Any], None, None]:
        """Server-sent chunks: text and logprobs deltas as tokens are generated.

        Text that could be the start of a stop string is held back until it is not; the
        chunk that ends a sample carries its ``finish_reason``. Close the iterator to stop.
        """
        head = self._head("text_completion")
        prompt_ids = [self._prompt_ids(prompt, p.max_tokens) for prompt in p.prompts]
        prompt_tokens = completion_tokens = 0
        with self._lock, torch.inference_mode():
            if p.seed is not None:
                torch.manual_seed(p.seed)
            for i, ids in enumerate(prompt_ids):
                prompt_tokens += len(ids)
                done: set[int] = set()
                rows: list[_Row] = []
                for rows in self._steps(ids, p):
                    out = []
                    for r, row in enumerate(rows):
                        if r in done:
                            continue
                        delta = self._delta(row, p)
                        if delta is not None:
                            out.append({"index": i * p.n + r, **delta})
                        if row.finish is not None:
                            done.add(r)
                    if out:
                        yield {**head, "choices": out}
                completion_tokens += sum(len(row.ids) for row in rows)
        if p.include_usage:
            yield {**head, "choices": [], "usage": _usage(prompt_tokens, completion_tokens)}

    # -- internals ---------------------------------------------------------------------

    def _head(self, obj: str) -> dict[str, Any]:
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": obj,
            "created": int(time.time()),
            "model": self.model_id,
        }

    def _prompt_ids(self, prompt: str, max_tokens: int) -> list[int]:
        ids = self.backend._encode(prompt)
        if not ids:
            raise RequestError(400, "empty prompt")
        if len(ids) + max_tokens > self.backend.max_context:
            raise RequestError(
                400,
                f"prompt ({len(ids)} tokens) + max_tokens ({max_tokens}) exceed the "
                f"model's context of {self.backend.max_context} tokens",
            )
        return ids

    @staticmethod
    def _int(body: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
        v = body.get(key, default)
        if v is None:
            v = default
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise RequestError(400, f"'{key}' must be an integer in [{lo}, {hi}]")
        return v

    def _piece(self, tid: int) -> str:
        piece = self._pieces.get(tid)
        if piece is None:
            piece = self._pieces[tid] = str(self.tokenizer.decode([tid]))
        return piece

    def _steps(self, ids: list[int], p: CompletionParams) -> Iterator[list[_Row]]:
        """Sample ``p.n`` completions of ``ids`` in one batch; yields the rows after every token.

        The backend's decode loop (decode_loop.py: explicit mask and positions), so a greedy
        completion here is the one the backend writes for the prompt alone. The
        caller holds the model lock and inference mode.
        """
        dev, n = self.backend.device, p.n
        mask = torch.ones((1, len(ids)), dtype=torch.long, device=dev)
        first = torch.tensor([ids], device=dev)
        positions, pos = torch.arange(len(ids), device=dev)[None], len(ids)
        images = []
        if p.image is not None and self.backend.vision is not None:
            # M-RoPE: the image's grid positions, the text after it at index + delta
            positions, delta = self.backend.vision.positions(self.model, ids, p.image)
            pos, images = len(ids) + delta, [p.image]
        out = self.model(
            **self.backend._embed(first, images),
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
        )
        cache, logits = cache_of(out), out.logits[:, -1, :].float()
        if n > 1:
            cache.batch_repeat_interleave(n)
            logits, mask = logits.repeat_interleave(n, dim=0), mask.repeat_interleave(n, dim=0)
        rows = [_Row() for _ in range(n)]

        def take(batch: Rows, chosen: list[int], step: int) -> list[int]:
            logp = torch.log_softmax(batch.logits, dim=-1)
            picked = torch.tensor(chosen, device=dev)
            chosen_lp = logp.gather(1, picked[:, None]).squeeze(1).tolist()
            top = torch.topk(logp, p.k, dim=-1) if p.k else None
            keep: list[int] = []
            for b, tid in enumerate(chosen):
                row = rows[batch.active[b]]
                if tid in self._eos:
                    row.finish = "stop"
                    continue
                row.ids.append(tid)
                row.lps.append(chosen_lp[b])
                if top is not None:
                    row.tops.append(
                        self._top_entry(top.values[b].tolist(), top.indices[b].tolist())
                    )
                text = str(self.tokenizer.decode(row.ids, skip_special_tokens=True))
                if _stop_cut(text, p.stops) is not None:
                    row.finish = "stop"
                    continue
                keep.append(b)
            return keep

        batch = Rows(cache, logits, mask, torch.full((n,), pos, device=dev), list(range(n)))
        forward = model_forward(self.model)
        for _ in decode(
            batch, lambda b: pick_tokens(b.logits, p.temperature), take, forward, p.max_tokens
        ):
            yield rows
        for row in rows:
            row.finish = row.finish or "length"
        yield rows

    def _top_entry(self, lps: list[float], ids: list[int]) -> dict[str, float]:
        """A position's top-k as text -> logprob; tokens decoding to the same text add up."""
        entry: dict[str, float] = {}
        for lp, t in zip(lps, ids, strict=True):
            s = self._piece(t)
            entry[s] = lp if s not in entry else math.log(math.exp(entry[s]) + math.exp(lp))
        return entry

    def _final(self, row: _Row, stops: list[str]) -> tuple[str, int]:
        """A finished row's text and how many of its tokens it keeps (the stop string cut off,
        like OpenAI and vLLM: the stop string is not part of the text)."""
        text = str(self.tokenizer.decode(row.ids, skip_special_tokens=True))
        cut = _stop_cut(text, stops)
        if cut is None:
            return text, len(row.ids)
        kept = used = 0
        while kept < len(row.ids) and used < cut:
            used += len(self._piece(row.ids[kept]))
            kept += 1
        return text[:cut], kept

    def _logprobs(self, row: _Row, lo: int, hi: int, offset: int) -> dict[str, Any]:
        pieces = [self._piece(t) for t in row.ids[lo:hi]]
        offsets = []
        for piece in pieces:
            offsets.append(offset)
            offset += len(piece)
        return {
            "tokens": pieces,
            "token_logprobs": row.lps[lo:hi],
            "top_logprobs": row.tops[lo:hi],
            "text_offset": offsets,
        }

    def _choice(self, row: _Row, p: CompletionParams) -> dict[str, Any]:
        text, kept = self._final(row, p.stops)
        return {
            "text": text,
            "logprobs": self._logprobs(row, 0, kept, 0) if p.k else None,
            "finish_reason": row.finish or "length",
        }

    def _delta(self, row: _Row, p: CompletionParams) -> dict[str, Any] | None:
        """What of ``row`` can be streamed now (None: nothing yet)."""
        lo = row.sent_tokens
        if row.finish is not None:
            text, hi = self._final(row, p.stops)
            delta = text[len(row.sent_text) :] if text.startswith(row.sent_text) else ""
        else:
            # hold back what could still become a stop string, and incomplete characters
            hold = max((len(s) for s in p.stops), default=1) - 1
            text = str(self.tokenizer.decode(row.ids, skip_special_tokens=True))
            safe, hi, used = len(text) - hold, lo, len(row.sent_text)
            while hi < len(row.ids):
                piece = self._piece(row.ids[hi])
                if used + len(piece) > safe or piece.endswith("\ufffd"):
                    break
                used += len(piece)
                hi += 1
            if hi == lo:
                return None
            delta = "".join(self._piece(t) for t in row.ids[lo:hi])
        logprobs = self._logprobs(row, lo, hi, len(row.sent_text)) if p.k else None
        row.sent_tokens, row.sent_text = hi, row.sent_text + delta
        return {"text": delta, "logprobs": logprobs, "finish_reason": row.finish}


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


# -- the chat-completions dialect (``POST /v1/chat/completions``) ---------------------------


def _data_url(part: dict[str, Any]) -> tuple[str, bytes]:
    """An ``image_url`` part's ``data:`` URL as (mime, bytes); only inline images are taken."""
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise RequestError(400, "an image_url must be a data:<mime>;base64,<data> URL here")
    head, _, data = url.partition(";base64,")
    try:
        return head[len("data:") :] or "image/png", base64.b64decode(data, validate=True)
    except ValueError as e:
        raise RequestError(400, f"the image_url's base64 data is not valid ({e})") from e


def _message_parts(
    content: object, vision: bool
) -> tuple[str | list[dict[str, Any]], list[tuple[str, bytes]]]:
    """A chat message's content for the chat template (a string, or with a vision model the
    text and image parts), and its images; a text model refuses images."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise RequestError(400, "a message's 'content' must be a string or a list of parts")
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    images: list[tuple[str, bytes]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
            parts.append({"type": "text", "text": part["text"]})
        elif kind == "image_url" and isinstance(part, dict):
            if not vision:
                raise RequestError(400, "this model takes no images (it is a text model)")
            images.append(_data_url(part))
            parts.append({"type": "image_url", "image_url": {"url": ""}})
        else:
            raise RequestError(400, f"unsupported content part {kind!r}")
    return (parts if images else "".join(texts)), images


def chat_as_completion(
    body: dict[str, Any],
    render: Callable[[list[dict[str, Any]]], str],
    backend: TransformersBackend | None = None,
) -> dict[str, Any]:
    """A chat request as the completions request :class:`Completer` runs (``render``: the
    model's chat template over ``[{role, content}]``; a vision ``backend`` takes one image,
    its tokens placed where the chat template writes the image part)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list")
    vision = backend.vision if backend is not None else None
    plain = []
    images: list[tuple[str, bytes]] = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise RequestError(400, "each message needs a 'role' and a 'content'")
        content, found = _message_parts(m.get("content"), vision is not None)
        plain.append({"role": m["role"], "content": content})
        images += found
    top = body.get("top_logprobs") or 0
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_LOGPROBS:
        raise RequestError(400, f"'top_logprobs' must be an integer in [0, {MAX_LOGPROBS}]")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    prompt = render(plain)
    image = None
    if images:
        assert backend is not None and vision is not None
        if len(images) > 1:
            raise RequestError(400, "at most one image per request")
        markup = VISION_START + IMAGE_PAD + VISION_END
        if prompt.count(markup) != 1:
            raise RequestError(400, "the chat template did not place the image")
        try:
            image = vision.image(images[0], next(backend.model.parameters()).dtype)
        except Exception as e:
            raise RequestError(400, f"the image cannot be read ({type(e).__name__})") from e
        prompt = prompt.replace(markup, image.markup)
    return {
        "prompt": prompt,
        "_image": image,
        "n": body.get("n", 1),
        "max_tokens": 16 if max_tokens is None else max_tokens,
        "temperature": body.get("temperature", 1.0),
        "stop": body.get("stop"),
        "seed": body.get("seed"),
        # the completions path returns the chosen token's own logprob with any k >= 1
        "logprobs": max(1, top) if body.get("logprobs") else 0,
        "stream": body.get("stream"),
        "stream_options": body.get("stream_options"),
        "_top_logprobs": top,
    }


def _chat_logprobs(legacy: dict[str, Any] | None, k: int) -> dict[str, Any] | None:
    if legacy is None:
        return None
    content = []
    for token, lp, top in zip(
        legacy["tokens"], legacy["token_logprobs"], legacy["top_logprobs"], strict=True
    ):
        ranked = sorted(top.items(), key=lambda kv: -kv[1])[:k]
        content.append(
            {
                "token": token,
                "logprob": lp,
                "bytes": list(token.encode("utf-8")),
                "top_logprobs": [
                    {"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))} for t, v in ranked
                ],
            }
        )
    return {"content": content}


def chat_reply(reply: dict[str, Any], k: int) -> dict[str, Any]:
    """A completions reply in the chat format (``message`` and ``logprobs.content``)."""
    return {
        **reply,
        "id": str(reply["id"]).replace("cmpl-", "chatcmpl-", 1),
        "object": "chat.completion",
        "choices": [
            {
                "index": c["index"],
                "message": {"role": "assistant", "content": c["text"]},
                "logprobs": _chat_logprobs(c.get("logprobs"), k),
                "finish_reason": c["finish_reason"],
            }
            for c in reply["choices"]
        ],
    }


def chat_chunk(chunk: dict[str, Any], k: int) -> dict[str, Any]:
    """A streamed completions chunk in the chat format (``delta`` and ``logprobs.content``)."""
    out = {
        **chunk,
        "id": str(chunk.get("id", "")).replace("cmpl-", "chatcmpl-", 1),
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": c["index"],
                "delta": {"content": c["text"]},
                "logprobs": _chat_logprobs(c.get("logprobs"), k),
                "finish_reason": c.get("finish_reason"),
            }
            for c in chunk.get("choices") or []
        ],
    }
    return out
