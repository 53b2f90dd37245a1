"""The transformers backend: a shared prefix prefilled once, then one batched decode loop
(the layouts: decode_split.py, decode_copies.py; the rows: decode_rows.py).

Rows are K candidates x n samples (and, through ``judge_many``, the rows of several
sessions' steps). Each prefix's KV cache is computed once and kept once
(split_attention.py: each row attends to its group's single prefix copy and to its own
cache); the suffixes (different lengths) are left-padded, masked out with the attention
mask, and given explicit position ids continuing their prefix, so every row sees exactly
the positions and keys it would see alone. ``split_attention=False`` keeps the older
layout (the prefix's cache repeated for every row, one step at a time). At every generated
position the full-vocabulary softmax gives the probability mass of the three label groups.

A Qwen2-VL-class checkpoint loads with its image processor (vision.py): a batch's
screenshot becomes image tokens inside the shared prefix, prefilled once with its pixels;
every row's suffix continues at the 3D M-RoPE positions it would have alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from webshepherd.daemon.engine.backends import split_attention as split
from webshepherd.daemon.engine.backends.base import (
    Backend,
    DeltaCallback,
    Generation,
    JudgeBatch,
    JudgeOutput,
)
from webshepherd.daemon.engine.backends.decode_copies import decode_copies
from webshepherd.daemon.engine.backends.decode_rows import Decoded, Part, RowWriter
from webshepherd.daemon.engine.backends.decode_split import decode_split
from webshepherd.daemon.engine.backends.vision import (
    VISION_END,
    VISION_START,
    Image,
    VisionInputs,
    is_vision_config,
    place_image,
)
from webshepherd.daemon.engine.failures import GENERATING, model_error
from webshepherd.daemon.engine.labels import label_token_ids
from webshepherd.daemon.engine.sampling import NO_SAMPLING, Sampling, read_sampling
from webshepherd.protocol.errors import ModelError, WebShepherdError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)
R = TypeVar("R")


#: the seed every decode's sampling starts from
SAMPLING_SEED = 0


def pick_device(device: str = "auto") -> torch.device:
    """``auto``: cuda when available, else cpu."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _common_prefix(prefix: list[int], fulls: list[list[int]]) -> int:
    """Length of the longest prefix of ``prefix`` that every full prompt's ids start with."""
    n = len(prefix)
    for f in fulls:
        i = 0
        while i < min(n, len(f)) and f[i] == prefix[i]:
            i += 1
        n = i
    return n


class TransformersBackend(Backend):
    """A causal LM loaded with ``AutoModelForCausalLM``; see :func:`TransformersBackend.load`."""

    name = "transformers"
    boundary_slack = (
        1  # prefix tokens that may re-tokenize differently at the prefix/suffix boundary
    )

    def __init__(
        self,
        model: Any,
        tokenizer: PreTrainedTokenizerBase,
        model_id: str,
        *,
        share_prefix: bool = True,
        ignore_stop: bool = False,
        split_attention: bool = True,
        merge_batches: bool = True,
        vision: VisionInputs | None = None,
        sampling: Sampling = NO_SAMPLING,
    ) -> None:
        """``share_prefix=False`` prefills every candidate's whole prompt (no shared KV cache);
        ``ignore_stop=True`` ignores end-of-sequence tokens and stop strings, so every row
        generates exactly ``max_new_tokens`` (benchmarks: a fixed output length).
        ``split_attention=False`` repeats the prefix's KV cache for every row instead of
        keeping one copy (the older layout; also the fallback when the model's attention
        cannot be routed); ``merge_batches=False`` makes ``judge_many`` judge one batch after
        the other instead of decoding them together. ``vision``: a vision-language model's
        image inputs (the backend then takes screenshots). ``sampling``: the checkpoint's
        ``top_k`` / ``top_p`` / ``repetition_penalty`` (:func:`read_sampling`), applied to
        every generation (the penalty to greedy ones too)."""
        self.share_prefix = share_prefix
        self.sampling = sampling
        self.ignore_stop = ignore_stop
        self.merge_batches = merge_batches
        self.split_attention = False
        if split_attention:
            try:
                self.split_attention = split.install(model)
            except Exception:  # an unusual model: keep its own attention, repeat the prefix
                log.warning("split prefix attention unavailable for %s", model_id, exc_info=True)
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.model_id = model_id
        self.vision = vision
        self.accepts_images = vision is not None
        self.device = next(model.parameters()).device
        self._lock = threading.Lock()
        self._groups = label_token_ids(tokenizer)
        missing = {0, 1, 2} - set(self._groups.values())
        if missing:
            log.warning(
                "tokenizer of %s has no whole-token label variant for groups %s: "
                "their probabilities will read 0",
                model_id,
                sorted(missing),
            )
        eos = {tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)}
        flat: set[int] = set()
        for e in eos:
            flat.update(e if isinstance(e, list) else [e] if e is not None else [])
        self._eos = flat
        self._pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(flat, default=0)
        )
        self._rows = RowWriter(
            tokenizer,
            self._groups,
            flat,
            device=self.device,
            sampling=sampling,
            ignore_stop=ignore_stop,
        )

    @classmethod
    def load(
        cls,
        model: str,
        *,
        device: str = "auto",
        local_files_only: bool = False,
        share_prefix: bool = True,
        ignore_stop: bool = False,
        split_attention: bool = True,
    ) -> TransformersBackend:
        """Load tokenizer and model (bf16 on cuda, fp32 on cpu); a vision-language checkpoint
        with its image processor. Errors propagate to the caller."""
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoTokenizer,
        )

        dev = pick_device(device)
        tok = AutoTokenizer.from_pretrained(model, local_files_only=local_files_only)
        dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
        config = AutoConfig.from_pretrained(model, local_files_only=local_files_only)
        vision = None
        lm: Any
        if is_vision_config(config):
            vision = VisionInputs.load(model, config, local_files_only)
            lm = AutoModelForImageTextToText.from_pretrained(
                model, dtype=dtype, local_files_only=local_files_only
            )
        else:
            lm = AutoModelForCausalLM.from_pretrained(
                model, dtype=dtype, local_files_only=local_files_only
            )
        return cls(
            lm.to(dev),
            tok,
            model,
            share_prefix=share_prefix,
            ignore_stop=ignore_stop,
            split_attention=split_attention,
            vision=vision,
            sampling=read_sampling(model, local_files_only=local_files_only),
        )

    # -- Backend interface -------------------------------------------------------------

    @property
    def max_context(self) -> int:
        config = self.model.config.get_text_config()
        return int(getattr(config, "max_position_embeddings", 32768))

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        return str(
            self.tokenizer.apply_chat_template(
                list(messages), tokenize=False, add_generation_prompt=True
            )
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text``; with a vision model, a screenshot placeholder counts as the
        most image tokens a screenshot can take."""
        if self.vision is not None:
            text, placed = place_image(text, VISION_START + VISION_END)
            if placed:
                return len(self._encode(text)) + self.vision.max_tokens
        return len(self._encode(text))

    def count_prompt(self, text: str, image: tuple[str, bytes] | None = None) -> int:
        """Tokens of a prompt with ``image`` in its screenshot placeholder: the image tokens
        the processor will make of that image's size (:func:`vision.image_token_count`)."""
        if self.vision is not None and image is not None:
            tokens = self.vision.tokens_for(image)
            text, placed = place_image(text, VISION_START + VISION_END)
            if placed and tokens is not None:
                return len(self._encode(text)) + tokens
        return self.count_tokens(text)

    def generate(
        self, prompt: str, max_new_tokens: int, temperature: float = 0.0, stop: Sequence[str] = ()
    ) -> str:
        with self._lock:
            out = self._guarded(
                lambda: decode_copies(
                    self.model,
                    self._rows,
                    self._pad,
                    [],
                    [self._encode(prompt)],
                    1,
                    max_new_tokens,
                    temperature,
                    temperature <= 0,
                    stop,
                    None,
                    None,
                )
            )
        return self._rows.text(out.rows[0])

    def judge(
        self,
        batch: JudgeBatch,
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> JudgeOutput:
        if not batch.suffixes:
            return _empty_output()
        part = self._part(batch, on_delta, cancel)
        with self._lock:
            if self.split_attention or part.image is not None:
                out = self._guarded(lambda: self._split([part]))[0]
            else:
                out = self._guarded(
                    lambda: decode_copies(
                        self.model,
                        self._rows,
                        self._pad,
                        part.prefix,
                        part.suffixes,
                        part.n,
                        part.max_new,
                        part.temperature,
                        part.greedy,
                        part.stop,
                        on_delta,
                        cancel,
                    )
                )
        return self._output(part, out)

    def judge_many(
        self,
        batches: Sequence[JudgeBatch],
        on_deltas: Sequence[DeltaCallback | None],
        cancels: Sequence[threading.Event | None],
    ) -> list[JudgeOutput | Exception]:
        """Several sessions' batches in one decode (each prefix prefilled and kept once, all
        rows decoded together); when that decode fails, each batch is judged alone so a
        failure is only its own batch's."""
        if not (self.split_attention and self.merge_batches) or len(batches) < 2:
            return super().judge_many(batches, on_deltas, cancels)
        results: list[JudgeOutput | Exception] = [_empty_output() for _ in batches]
        parts: list[tuple[int, Part]] = []
        for i, (b, d, c) in enumerate(zip(batches, on_deltas, cancels, strict=True)):
            if not b.suffixes:
                continue
            try:
                parts.append((i, self._part(b, d, c)))
            except Exception as exc:
                results[i] = exc

        def one_by_one() -> list[JudgeOutput | Exception]:
            rest = super(TransformersBackend, self).judge_many(
                [batches[i] for i, _ in parts],
                [on_deltas[i] for i, _ in parts],
                [cancels[i] for i, _ in parts],
            )
            for (i, _), r in zip(parts, rest, strict=True):
                results[i] = r
            return results

        if len(parts) < 2:
            return one_by_one()
        try:
            with self._lock:
                outs = self._guarded(lambda: self._split([p for _, p in parts]))
        except Exception:
            log.warning("a merged decode of %d batches failed; judging them one by one", len(parts))
            return one_by_one()
        for (i, part), out in zip(parts, outs, strict=True):
            results[i] = self._output(part, out)
        return results

    def health(self) -> dict[str, object]:
        if self.model is None:
            return {"backend": self.name, "model": self.model_id, "closed": True}
        info: dict[str, object] = {
            "backend": self.name,
            "model": self.model_id,
            "device": str(self.device),
            "dtype": str(next(self.model.parameters()).dtype).replace("torch.", ""),
            "label_tokens": len(self._groups),
            "split_attention": self.split_attention,
            "sampling": self.sampling.describe(),
        }
        if self.device.type == "cuda":
            info["gpu_memory_allocated"] = torch.cuda.memory_allocated(self.device)
            info["gpu_memory_total"] = torch.cuda.get_device_properties(self.device).total_memory
        return info

    def close(self) -> None:
        self.model = None
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- internals ---------------------------------------------------------------------

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _piece(self, tid: int) -> str:
        return self._rows.piece(tid)

    def _split(self, parts: list[Part]) -> list[Decoded]:
        image_token = self.vision.image_token_id if self.vision is not None else None
        return decode_split(self.model, self._rows, self._pad, parts, self._embed, image_token)

    def _guarded(self, fn: Callable[[], R]) -> R:
        if self.model is None:
            raise ModelError("the model has been closed")
        self._rows.rng.manual_seed(SAMPLING_SEED)
        try:
            with torch.inference_mode():
                return fn()
        except WebShepherdError:
            raise
        except torch.cuda.OutOfMemoryError as e:
            log.exception("out of GPU memory")
            raise ModelError(
                "the model ran out of GPU memory; try fewer candidates or samples"
            ) from e
        except Exception as e:
            raise model_error(e, GENERATING, context="transformers") from e

    def _part(
        self, batch: JudgeBatch, on_delta: DeltaCallback | None, cancel: threading.Event | None
    ) -> Part:
        """Tokenize a batch and decide whether its prefix is shared."""
        image = None
        if batch.image is not None and self.vision is not None:
            image = self.vision.image(batch.image, next(self.model.parameters()).dtype)
        prefix_text, fulls_text = batch.prefix, [batch.prefix + s for s in batch.suffixes]
        if image is not None:
            prefix_text = place_image(prefix_text, image.markup)[0]
            fulls_text = [place_image(f, image.markup)[0] for f in fulls_text]
        prefix_ids = self._encode(prefix_text) if prefix_text else []
        fulls = [self._encode(f) for f in fulls_text]
        p = _common_prefix(prefix_ids, fulls)
        # Byte-level BPE merges the prefix's trailing "THOUGHT: " space into the suffix's first
        # word: up to ``boundary_slack`` tokens move to the suffixes; beyond that, no sharing.
        # A screenshot's prefix is shared only through split attention (its positions).
        shared = (
            self.share_prefix
            and p > 0
            and len(prefix_ids) - p <= self.boundary_slack
            and all(len(f) > p for f in fulls)
            and (image is None or self.split_attention)
        )
        positions = None
        if image is not None:
            assert self.vision is not None
            positions = [self.vision.positions(self.model, f, image)[0][:, 0] for f in fulls]
        return Part(
            prefix=prefix_ids[:p] if shared else [],
            suffixes=[f[p:] for f in fulls] if shared else fulls,
            n=max(1, batch.samples),
            max_new=batch.max_new_tokens,
            temperature=batch.temperature,
            stop=tuple(batch.stop),
            on_delta=on_delta,
            cancel=cancel,
            greedy=batch.is_greedy,
            image=image,
            positions=positions,
        )

    def _embed(self, ids: torch.Tensor, images: list[Image]) -> dict[str, Any]:
        """The model inputs for ``ids``: token ids, or when they hold ``images`` (in order,
        one per occurrence), embeddings with the vision tower's output in the image tokens'
        places (the tower never sees the shared-prefix argument)."""
        if not images:
            return {"input_ids": ids}
        assert self.vision is not None
        core = self.model.model
        embeds = core.get_input_embeddings()(ids)
        done: dict[int, torch.Tensor] = {}
        feats = []
        for im in images:
            if id(im) not in done:
                out = core.get_image_features(
                    im.pixel_values.to(self.device), im.grid_thw.to(self.device), return_dict=True
                ).pooler_output
                done[id(im)] = torch.cat(list(out), dim=0).to(embeds.dtype)
            feats.append(done[id(im)])
        where = (ids == self.vision.image_token_id)[..., None].expand_as(embeds)
        return {"inputs_embeds": embeds.masked_scatter(where, torch.cat(feats))}

    def _output(self, part: Part, out: Decoded) -> JudgeOutput:
        n = part.n
        texts = [self._rows.text(r) for r in out.rows]
        if part.on_delta is not None:  # rows cut by length: their held-back bytes
            for b, (r, text) in enumerate(zip(out.rows, texts, strict=True)):
                rest = r.stream.rest(text) if r.stream is not None else text
                if rest:
                    part.on_delta(b // n, b % n, rest)
        gens = tuple(
            tuple(
                Generation(
                    text=texts[b],
                    tokens=tuple(out.rows[b].tokens),
                    finish_reason=out.rows[b].finish or "length",
                )
                for b in range(k * n, (k + 1) * n)
            )
            for k in range(len(part.suffixes))
        )
        return JudgeOutput(
            generations=gens,
            prefilled_tokens=out.prefilled,
            generated_tokens=sum(len(r.ids) for r in out.rows),
            prefix_shared=bool(part.prefix),
            label_source="full",
        )


def _empty_output() -> JudgeOutput:
    return JudgeOutput(
        generations=(),
        prefilled_tokens=0,
        generated_tokens=0,
        prefix_shared=False,
        label_source="full",
    )
