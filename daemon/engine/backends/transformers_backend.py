"""The transformers backend: a shared prefix prefilled once, then one batched decode loop.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from webshepherd.daemon.engine.backends import split_attention as split
from webshepherd.daemon.engine.backends.base import (
    Backend,
    DeltaCallback,
    GeneratedToken,
    Generation,
    JudgeBatch,
    JudgeOutput,
)
from webshepherd.daemon.engine.backends.decode_loop import (
    Rows,
    decode,
    model_forward,
    pick_tokens,
    seen_mask,
)
from webshepherd.daemon.engine.backends.kv_cache import cache_kwargs, cache_of
from webshepherd.daemon.engine.backends.tokenizer_text import IncrementalText
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


@dataclass
class _Row:
    ids: list[int] = field(default_factory=list)
    tokens: list[GeneratedToken] = field(default_factory=list)
    tail: str = ""  # concatenated pieces, for stop checks
    stream: IncrementalText | None = None  # the text passed to on_delta, token by token
    finish: str | None = None


@dataclass
class _Decoded:
    rows: list[_Row]
    prefilled: int


@dataclass
class _Part:
    """One judge batch inside a decode: its token ids and its own decoding settings."""

    prefix: list[int]  # empty: nothing shared, the suffixes are whole prompts
    suffixes: list[list[int]]
    n: int
    max_new: int
    temperature: float
    stop: tuple[str, ...]
    on_delta: DeltaCallback | None
    cancel: threading.Event | None
    greedy: bool = False
    image: Image | None = None  # the screenshot whose tokens are in the prompts
    # with an image: each full prompt's (prefix + suffix) 3D positions, (3, length)
    positions: list[torch.Tensor] | None = None

    @property
    def prefilled(self) -> int:
        return len(self.prefix) + sum(len(s) for s in self.suffixes)


class _SplitRows:
    """The rows of a split decode (each candidate's samples, a part's rows contiguous) and
    which part each belongs to."""

    def __init__(self, parts: list[_Part], part_of: list[int]):
        self.parts, self.part_of = parts, part_of
        self.rows = [_Row() for _ in part_of]
        self.first_row = [0] * len(parts)
        for b in range(len(part_of) - 1, -1, -1):
            self.first_row[part_of[b]] = b
        self.per_part: list[list[_Row]] = [[] for _ in parts]
        for b, row in enumerate(self.rows):
            self.per_part[part_of[b]].append(row)

    def part(self, b: int) -> _Part:
        return self.parts[self.part_of[b]]

    def where(self, b: int) -> tuple[int, int]:
        """Row ``b`` as (candidate, sample) within its part."""
        i = b - self.first_row[self.part_of[b]]
        n = self.part(b).n
        return i // n, i % n

    def abort_cancelled(self, active: list[int]) -> None:
        """Mark the active rows of every part whose ``cancel`` is set as aborted."""
        cancelled = {
            pi
            for pi, part in enumerate(self.parts)
            if part.cancel is not None and part.cancel.is_set()
        }
        for b in active:
            if self.part_of[b] in cancelled:
                self.rows[b].finish = "aborted"


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
        # Sampling is seeded per call (as vLLM's backend passes a seed): the same request gives
        # the same judgements, run after run.
        self._rng = torch.Generator(device=self.device)
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
        self._group_idx = [
            torch.tensor(
                [t for t, g in self._groups.items() if g == grp],
                dtype=torch.long,
                device=self.device,
            )
            for grp in range(3)
        ]
        eos = {tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)}
        flat: set[int] = set()
        for e in eos:
            flat.update(e if isinstance(e, list) else [e] if e is not None else [])
        self._eos = flat
        self._pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(flat, default=0)
        )
        self._pieces: dict[int, str] = {}

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
                lambda: self._decode_copies(
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
        return self._text(out.rows[0])

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
                out = self._guarded(lambda: self._decode_split([part]))[0]
            else:
                out = self._guarded(
                    lambda: self._decode_copies(
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
        parts: list[tuple[int, _Part]] = []
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
                outs = self._guarded(lambda: self._decode_split([p for _, p in parts]))
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
        p = self._pieces.get(tid)
        if p is None:
            p = self._pieces[tid] = "" if tid in self._eos else str(self.tokenizer.decode([tid]))
        return p

    def _text(self, row: _Row) -> str:
        return str(self.tokenizer.decode(row.ids, skip_special_tokens=True))

    def _guarded(self, fn: Callable[[], R]) -> R:
        if self.model is None:
            raise ModelError("the model has been closed")
        self._rng.manual_seed(SAMPLING_SEED)
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
    ) -> _Part:
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
        return _Part(
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

    def _has_image(self, ids: list[int]) -> bool:
        return self.vision is not None and self.vision.image_token_id in ids

    def _output(self, part: _Part, out: _Decoded) -> JudgeOutput:
        n = part.n
        texts = [self._text(r) for r in out.rows]
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

    def _decode_split(self, parts: list[_Part]) -> list[_Decoded]:
        """All rows of all ``parts`` in one decode; each prefix prefilled and kept once."""
        dev = self.device
        shared, group_of = self._prefill_prefixes(parts)
        # one row per candidate: left-padded suffixes, positions continuing each prefix
        owner = [pi for pi, part in enumerate(parts) for _ in part.suffixes]
        ids, valid, pos, mask = self._suffix_batch(parts, owner)
        extra = {split.KWARG: shared} if shared.keys else {}
        images = [
            part.image
            for part in parts
            for suf in part.suffixes
            if part.image is not None and self._has_image(suf)
        ]
        out = self.model(
            **self._embed(ids, images),
            attention_mask=mask[:, None],
            position_ids=pos,
            use_cache=True,
            logits_to_keep=1,
            **extra,
        )
        cache, logits = cache_of(out), out.logits[:, -1, :].float()
        # the text after the prompt: the same position on M-RoPE's three axes
        next_pos = (pos[0] if pos.dim() == 3 else pos)[:, -1] + 1
        # the samples: row r repeated n times (its part's n), rows of a part stay contiguous
        expand = [r for r in range(len(owner)) for _ in range(parts[owner[r]].n)]
        if len(expand) > len(owner):
            sel = torch.tensor(expand, device=dev)
            cache.batch_select_indices(sel)
            logits, valid, next_pos = logits[sel], valid[sel], next_pos[sel]
        rows = _SplitRows(parts, [owner[r] for r in expand])
        active = [b for b, pi in enumerate(rows.part_of) if parts[pi].max_new > 0]
        if len(active) < len(rows.rows):
            sel = torch.tensor(active, device=dev, dtype=torch.long)
            cache.batch_select_indices(sel)
            logits, valid, next_pos = logits[sel], valid[sel], next_pos[sel]
        sufs = [s for part in parts for s in part.suffixes]
        seen = self._seen([parts[owner[r]].prefix + sufs[r] for r in expand], logits.shape[-1])

        def pick(batch: Rows) -> torch.Tensor:
            rows.abort_cancelled(batch.active)
            return self._choose(
                parts,
                [rows.part_of[b] for b in batch.active],
                batch.logits,
                seen[batch.active] if seen is not None else None,
            )

        def take(batch: Rows, chosen: list[int], step: int) -> list[int]:
            if seen is not None:
                seen[batch.active, chosen] = True
            mass = self._group_mass(batch.logits)
            return [
                i
                for i, (b, tid) in enumerate(zip(batch.active, chosen, strict=True))
                if self._advance(rows, b, tid, mass[i], step)
            ]

        def set_rows(batch: Rows) -> None:
            parts_now = [rows.part_of[b] for b in batch.active]
            shared.rows = _ranges(parts_now, group_of, len(shared.keys))

        forward = model_forward(
            self.model, lambda m: m[:, None, None, :], set_rows, logits_to_keep=1, **extra
        )

        for _ in decode(Rows(cache, logits, valid, next_pos, active), pick, take, forward):
            pass
        for row in rows.rows:
            if row.finish is None:
                row.finish = "length"
        return [
            _Decoded(rows=rows.per_part[pi], prefilled=part.prefilled)
            for pi, part in enumerate(parts)
        ]

    def _prefill_prefixes(self, parts: list[_Part]) -> tuple[split.SharedPrefixes, dict[int, int]]:
        """Each part's shared prefix prefilled once; and part -> its prefix's group."""
        shared = split.SharedPrefixes()
        group_of: dict[int, int] = {}
        start = 0
        for pi, part in enumerate(parts):
            if part.prefix:
                group_of[pi] = len(shared.keys)
                ids = torch.tensor([part.prefix], device=self.device)
                pos = {}
                if part.positions is not None:
                    pos["position_ids"] = part.positions[0][:, None, : len(part.prefix)]
                has = part.image is not None and self._has_image(part.prefix)
                cache = cache_of(
                    self.model(
                        **self._embed(ids, [part.image] if has and part.image else []),
                        **pos,
                        use_cache=True,
                        logits_to_keep=1,
                    )
                )
                shared.add(cache, start, start + len(part.suffixes))
            start += len(part.suffixes)
        return shared, group_of

    def _suffix_batch(
        self, parts: list[_Part], owner: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The suffixes left-padded into one batch: ids, valid, positions (continuing each
        row's prefix; ``(3, B, W)`` M-RoPE positions when a part has a screenshot) and the
        causal mask over the suffixes."""
        dev = self.device
        sufs = [s for part in parts for s in part.suffixes]
        width = max(len(s) for s in sufs)
        ids = torch.full((len(sufs), width), self._pad, dtype=torch.long, device=dev)
        valid = torch.zeros((len(sufs), width), dtype=torch.bool, device=dev)
        three = any(part.positions is not None for part in parts)
        pos = torch.zeros(
            (3, len(sufs), width) if three else (len(sufs), width), dtype=torch.long, device=dev
        )
        first = {pi: owner.index(pi) for pi in set(owner)}
        for r, s in enumerate(sufs):
            part = parts[owner[r]]
            p = len(part.prefix)
            ids[r, width - len(s) :] = torch.tensor(s, device=dev)
            valid[r, width - len(s) :] = True
            if part.positions is not None:
                pos[:, r, width - len(s) :] = part.positions[r - first[owner[r]]][:, p:].to(dev)
            else:
                pos[..., r, width - len(s) :] = torch.arange(p, p + len(s), device=dev)
        causal = torch.ones((width, width), dtype=torch.bool, device=dev).tril()
        # a padding query sees itself only (no fully masked row, no NaN in the cache)
        mask = (valid[:, None, :] & causal) | torch.eye(width, dtype=torch.bool, device=dev)
        return ids, valid, pos, mask

    def _group_mass(self, logits: torch.Tensor) -> list[list[float]]:
        """Per row, the probability mass of each label group at this step."""
        probs = torch.softmax(logits, dim=-1)
        return torch.stack([probs[:, g].sum(-1) for g in self._group_idx], dim=-1).tolist()

    def _seen(self, prompts: list[list[int]], vocab: int) -> torch.Tensor | None:
        """Each row's prompt tokens as a mask, when the checkpoint has a repetition penalty."""
        return seen_mask(prompts, vocab, self.device) if self.sampling.penalizes else None

    def _choose(
        self,
        parts: list[_Part],
        part_of: list[int],
        logits: torch.Tensor,
        seen: torch.Tensor | None,
    ) -> torch.Tensor:
        """The next token of each active row: greedy, or sampled at its part's temperature,
        both under the checkpoint's sampling settings."""
        chosen = pick_tokens(logits, 0.0, self.sampling, seen)
        sampled = [i for i, pi in enumerate(part_of) if not parts[pi].greedy]
        if sampled:
            si = torch.tensor(sampled, device=self.device)
            temps = torch.tensor(
                [max(parts[part_of[i]].temperature, 1e-5) for i in sampled], device=self.device
            )
            chosen[si] = pick_tokens(
                logits[si],
                temps,
                self.sampling,
                seen[si] if seen is not None else None,
                self._rng,
            )
        return chosen

    def _advance(self, rows: _SplitRows, b: int, tid: int, mass: list[float], step: int) -> bool:
        """Append token ``tid`` to row ``b`` (streamed to its part's callback); whether the
        row goes on decoding."""
        row = rows.rows[b]
        if row.finish == "aborted":
            return False
        part = rows.part(b)
        self._append(row, tid, mass, part.stop)
        if part.on_delta is not None:
            self._emit(part.on_delta, *rows.where(b), row)
        return row.finish is None and len(row.tokens) < part.max_new and step + 1 < part.max_new

    def _decode_copies(
        self,
        prefix: list[int],
        suffixes: list[list[int]],
        n: int,
        max_new: int,
        temperature: float,
        greedy: bool,
        stop: Sequence[str],
        on_delta: DeltaCallback | None,
        cancel: threading.Event | None,
    ) -> _Decoded:
        dev, k, p = self.device, len(suffixes), len(prefix)
        cache = None
        if p:
            cache = cache_of(
                self.model(input_ids=torch.tensor([prefix], device=dev), use_cache=True)
            )
            if k > 1:
                cache.batch_repeat_interleave(k)
        width = max(len(s) for s in suffixes)
        ids = torch.full((k, width), self._pad, dtype=torch.long, device=dev)
        mask = torch.zeros((k, p + width), dtype=torch.long, device=dev)
        mask[:, :p] = 1
        pos = torch.full((k, width), p, dtype=torch.long, device=dev)
        for i, s in enumerate(suffixes):
            ids[i, width - len(s) :] = torch.tensor(s, device=dev)
            mask[i, p + width - len(s) :] = 1
            pos[i, width - len(s) :] = torch.arange(p, p + len(s), device=dev)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=pos,
            **cache_kwargs(self.model, cache),
            use_cache=True,
        )
        cache, logits = cache_of(out), out.logits[:, -1, :].float()
        next_pos = pos[:, -1] + 1
        if n > 1:
            cache.batch_repeat_interleave(n)
            logits, mask, next_pos = (
                t.repeat_interleave(n, dim=0) for t in (logits, mask, next_pos)
            )
        rows = [_Row() for _ in range(k * n)]
        stops = tuple(stop)
        seen = self._seen([prefix + suffixes[r // n] for r in range(k * n)], logits.shape[-1])

        def pick(batch: Rows) -> torch.Tensor:
            mine = seen[batch.active] if seen is not None else None
            return pick_tokens(
                batch.logits,
                0.0 if greedy else max(temperature, 1e-5),
                self.sampling,
                mine,
                self._rng,
            )

        def take(batch: Rows, chosen: list[int], step: int) -> list[int]:
            if cancel is not None and cancel.is_set():
                for r in batch.active:
                    rows[r].finish = "aborted"
                return []
            if seen is not None:
                seen[batch.active, chosen] = True
            mass = self._group_mass(batch.logits)
            keep: list[int] = []
            for b, (r, tid) in enumerate(zip(batch.active, chosen, strict=True)):
                self._append(rows[r], tid, mass[b], stops)
                if on_delta is not None:
                    self._emit(on_delta, r // n, r % n, rows[r])
                if rows[r].finish is None:
                    keep.append(b)
            return keep

        batch = Rows(cache, logits, mask, next_pos, list(range(k * n)))
        for _ in decode(batch, pick, take, model_forward(self.model), max_new):
            pass
        for row in rows:
            if row.finish is None:
                row.finish = "length"
        prefilled = p + sum(len(s) for s in suffixes)
        return _Decoded(rows=rows, prefilled=prefilled)

    def _append(self, row: _Row, tid: int, mass: list[float], stops: tuple[str, ...]) -> None:
        if tid in self._eos and not self.ignore_stop:
            row.finish = "stop"
            return
        piece = self._piece(tid)
        row.ids.append(tid)
        row.tokens.append(
            GeneratedToken(
                piece=piece, group=self._groups.get(tid), mass=(mass[0], mass[1], mass[2])
            )
        )
        row.tail = (row.tail + piece)[-64:]
        if not self.ignore_stop and any(s in row.tail for s in stops):
            row.finish = "stop"

    def _emit(self, on_delta: DeltaCallback, cand: int, sample: int, row: _Row) -> None:
        """Passes on the text ``row``'s new token completes (an incomplete UTF-8 character
        waits for its next token); a finished row's held-back bytes go out with it."""
        if row.stream is None:
            row.stream = IncrementalText(self.tokenizer)
        delta = row.stream.extend(row.ids)
        if row.finish is not None:
            delta += row.stream.rest(self._text(row))
        if delta:
            on_delta(cand, sample, delta)


def _ranges(
    parts_of_rows: list[int], group_of: dict[int, int], groups: int
) -> list[tuple[int, int]]:
    """Each prefix group's contiguous range of rows (``(0, 0)`` when none is left)."""
    ranges = [(0, 0)] * groups
    for b, pi in enumerate(parts_of_rows):
        g = group_of.get(pi)
        if g is not None:
            start = ranges[g][0] if ranges[g] != (0, 0) else b
            ranges[g] = (start, b + 1)
    return ranges


def _empty_output() -> JudgeOutput:
    return JudgeOutput(
        generations=(),
        prefilled_tokens=0,
        generated_tokens=0,
        prefix_shared=False,
        label_source="full",
    )
