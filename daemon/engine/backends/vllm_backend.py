"""The vLLM backend: an in-process vLLM engine with automatic prefix caching (the ``gpu`` extra).

Every candidate's prompt is ``prefix + suffix`` (the candidate last), so vLLM's prefix cache
holds the shared prefix once: the prefix is prefilled first by a one-token request, then all
K candidates are added with ``SamplingParams(n=samples)`` and the engine is stepped until the
K x n sequences are done, in one batch. :meth:`VLLMBackend.judge_many` adds the requests of
several sessions' batches to the same engine before stepping, so they share the GPU batch.

Label probabilities come from the top-k log-probabilities of the model's raw distribution
(``label_source="top_k"``: label tokens outside the top k count 0). Generation stops at
``</answer>`` (kept in the text, like the transformers backend). A set ``cancel`` event aborts
its batch's requests between engine steps. ``prefilled_tokens`` counts what vLLM did not take
from its prefix cache (``num_cached_tokens``), so it reports how much of the prefix was reused.

vLLM is imported only when a backend is loaded; the conversion of its outputs
(:mod:`.vllm_outputs`, re-exported here) takes plain Python data and needs no vLLM.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from webshepherd.daemon.engine.backends.base import Backend, DeltaCallback, JudgeBatch, JudgeOutput
from webshepherd.daemon.engine.backends.tokenizer_text import encode_plain, render_chat_template
from webshepherd.daemon.engine.backends.vllm_outputs import (
    SampleStream,
    external_id,
    judge_output,
    plain_top,
)
from webshepherd.daemon.engine.failures import GENERATING, model_error
from webshepherd.daemon.engine.labels import label_token_ids
from webshepherd.daemon.engine.sampling import sampling_from_json
from webshepherd.protocol.errors import ModelError, WebShepherdError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from vllm import LLMEngine, RequestOutput, SamplingParams

__all__ = [
    "MIN_TOP_LOGPROBS",
    "PREFIX_BLOCK",
    "SampleStream",
    "VLLMBackend",
    "judge_output",
    "plain_top",
]

log = logging.getLogger(__name__)

MIN_TOP_LOGPROBS = 20
PREFIX_BLOCK = 16  # vLLM caches whole KV blocks (16 tokens by default): shorter prefixes never hit

# -- the engine --------------------------------------------------------------------------------


@dataclass
class _Job:
    """One batch in flight: its requests, their streams, its callbacks."""

    batch: JudgeBatch
    on_delta: DeltaCallback | None
    cancel: threading.Event | None
    prompt_ids: list[list[int]]
    prefix_ids: list[int]
    request_ids: list[str] = field(default_factory=list)
    streams: list[list[SampleStream]] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    warm_tokens: int = 0
    aborted: bool = False
    error: Exception | None = None


class VLLMBackend(Backend):
    """A model in a vLLM ``LLMEngine``; see :meth:`VLLMBackend.load`."""

    name = "vllm"

    def __init__(
        self,
        engine: LLMEngine,
        tokenizer: PreTrainedTokenizerBase,
        model_id: str,
        *,
        max_context: int,
        top_logprobs: int = MIN_TOP_LOGPROBS,
        warm_prefix: bool = True,
        eos_ids: Iterable[int] = (),
        ignore_stop: bool = False,
    ) -> None:
        """``ignore_stop=True`` ignores end of sequence and stop strings: every sample is
        exactly ``max_new_tokens`` long (benchmarks: a fixed output length)."""
        self.engine = engine
        self.ignore_stop = ignore_stop
        self.tokenizer = tokenizer
        self.model_id = model_id
        self._max_context = max_context
        self.top_logprobs = top_logprobs
        self.warm_prefix = warm_prefix
        self._groups = label_token_ids(tokenizer)
        self._eos = {int(e) for e in eos_ids}
        if tokenizer.eos_token_id is not None:
            self._eos.add(int(tokenizer.eos_token_id))
        self._pieces: dict[int, str] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.prompt_tokens_total = 0
        self.cached_tokens_total = 0
        self.dtype: str | None = None  # what vLLM computes in (float32, bfloat16, ...)

    @classmethod
    def load(
        cls,
        model: str,
        *,
        top_logprobs: int = MIN_TOP_LOGPROBS,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        seed: int = 0,
        warm_prefix: bool = True,
        ignore_stop: bool = False,
        **engine_args: object,
    ) -> VLLMBackend:
        """Start a vLLM engine on ``model`` with prefix caching and top-k logprobs.

        ``engine_args`` go to ``vllm.EngineArgs`` as they are (``dtype``, ``enforce_eager``…).
        """
        from transformers import AutoTokenizer, GenerationConfig
        from vllm import EngineArgs, LLMEngine

        known = set(getattr(EngineArgs, "__dataclass_fields__", {}))
        args: dict[str, object] = {
            "model": model,
            "enable_prefix_caching": True,
            "max_logprobs": max(MIN_TOP_LOGPROBS, top_logprobs),
            "gpu_memory_utilization": gpu_memory_utilization,
            "seed": seed,
        }
        if max_model_len is not None:
            args["max_model_len"] = max_model_len
        if "logprobs_mode" in known:  # the model's distribution, before temperature
            args["logprobs_mode"] = "raw_logprobs"
        if "disable_log_stats" in known:
            args["disable_log_stats"] = True
        args.update(engine_args)
        engine = LLMEngine.from_engine_args(EngineArgs(**args))
        tokenizer = AutoTokenizer.from_pretrained(model)
        eos: list[int] = []
        try:
            gen_eos = GenerationConfig.from_pretrained(model).eos_token_id
            eos = list(gen_eos) if isinstance(gen_eos, list) else [gen_eos] if gen_eos else []
        except Exception:  # no generation_config.json: the tokenizer's eos only
            log.debug("no generation config for %s", model)
        config = getattr(engine, "model_config", None) or engine.get_model_config()
        # what vLLM's OpenAI server applies to a request that leaves them out (explicit
        # SamplingParams to an in-process engine get none of it)
        diff = (
            config.get_diff_sampling_param() if hasattr(config, "get_diff_sampling_param") else {}
        )
        backend = cls(
            engine,
            tokenizer,
            model,
            max_context=int(config.max_model_len),
            top_logprobs=top_logprobs,
            warm_prefix=warm_prefix,
            eos_ids=eos,
            ignore_stop=ignore_stop,
        )
        backend.sampling = sampling_from_json(dict(diff), "vLLM's generation config of the model")
        backend.dtype = str(getattr(config, "dtype", "")).removeprefix("torch.") or None
        return backend

    # -- Backend interface -------------------------------------------------------------

    @property
    def max_context(self) -> int:
        return self._max_context

    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        return render_chat_template(self.tokenizer, messages)

    def count_tokens(self, text: str) -> int:
        return len(self._encode(text))

    def generate(
        self, prompt: str, max_new_tokens: int, temperature: float = 0.0, stop: Sequence[str] = ()
    ) -> str:
        from vllm import SamplingParams

        params = SamplingParams(
            n=1,
            temperature=temperature,
            max_tokens=max_new_tokens,
            stop=list(stop) or None,
            **self.sampling.request_fields(),
        )
        rid = f"ws-gen-{next(self._ids)}"
        text = ""
        with self._lock:
            self._check_open()
            try:
                self.engine.add_request(rid, {"prompt_token_ids": self._encode(prompt)}, params)
                while self.engine.has_unfinished_requests():
                    for out in self.engine.step():
                        if rid in (out.request_id, external_id(out.request_id)) and out.finished:
                            text = str(out.outputs[0].text)
            except WebShepherdError:
                raise
            except Exception as e:
                raise model_error(e, GENERATING, context="vLLM") from e
        return text

    def judge(
        self,
        batch: JudgeBatch,
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> JudgeOutput:
        result = self.judge_many([batch], [on_delta], [cancel])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def judge_many(
        self,
        batches: Sequence[JudgeBatch],
        on_deltas: Sequence[DeltaCallback | None],
        cancels: Sequence[threading.Event | None],
    ) -> list[JudgeOutput | Exception]:
        """All batches' requests in the one engine, stepped together; errors stay per batch."""
        jobs = [self._job(b, d, c) for b, d, c in zip(batches, on_deltas, cancels, strict=True)]
        with self._lock:
            self._check_open()
            try:
                self._run([j for j in jobs if j.error is None])
            except WebShepherdError as e:
                for j in jobs:
                    j.error = j.error or e
            except Exception as e:
                failure = model_error(e, GENERATING, context="vLLM, scoring")
                for j in jobs:
                    j.error = j.error or failure
                self._abort_all(jobs)
        results: list[JudgeOutput | Exception] = []
        for j in jobs:
            if j.error is not None:
                results.append(j.error)
                continue
            results.append(
                judge_output(
                    j.streams,
                    [len(p) for p in j.prompt_ids],
                    j.cached,
                    aborted=j.aborted,
                    warm_tokens=j.warm_tokens,
                )
            )
            self.prompt_tokens_total += sum(len(p) for p in j.prompt_ids)
            self.cached_tokens_total += sum(j.cached)
        return results

    def health(self) -> dict[str, object]:
        info: dict[str, object] = {
            "backend": self.name,
            "model": self.model_id,
            "prefix_caching": True,
            "top_logprobs": self.top_logprobs,
            "label_source": "top_k",
            "prompt_tokens": self.prompt_tokens_total,
            "cached_prompt_tokens": self.cached_tokens_total,
        }
        if self.dtype:
            info["dtype"] = self.dtype
        if self.engine is None:
            info["closed"] = True
            return info
        try:
            import torch

            if torch.cuda.is_available():
                free, total = torch.cuda.mem_get_info()
                info["device"] = "cuda"
                info["gpu"] = torch.cuda.get_device_name()
                info["gpu_memory_free"] = int(free)
                info["gpu_memory_total"] = int(total)
        except Exception:  # health must not fail because a probe did
            log.debug("no CUDA facts", exc_info=True)
        return info

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is None:
            return
        for owner in (engine, getattr(engine, "engine_core", None)):
            shutdown = getattr(owner, "shutdown", None)
            if callable(shutdown):
                try:
                    shutdown()
                except Exception:
                    log.debug("vLLM shutdown failed", exc_info=True)
                break
        del engine
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:
            log.debug("could not empty the CUDA cache", exc_info=True)

    # -- internals ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.engine is None:
            raise ModelError("the model has been closed")

    def _encode(self, text: str) -> list[int]:
        return encode_plain(self.tokenizer, text)

    def _piece(self, tid: int) -> str:
        p = self._pieces.get(tid)
        if p is None:
            p = self._pieces[tid] = str(self.tokenizer.decode([tid]))
        return p

    def _job(
        self, batch: JudgeBatch, on_delta: DeltaCallback | None, cancel: threading.Event | None
    ) -> _Job:
        try:
            prompts = [self._encode(batch.prefix + s) for s in batch.suffixes]
            prefix = self._encode(batch.prefix) if batch.prefix else []
        except Exception as e:
            job = _Job(batch, on_delta, cancel, [], [])
            job.error = model_error(e, "the prompt could not be tokenized", context="vLLM")
            return job
        job = _Job(batch, on_delta, cancel, prompts, prefix)
        n = max(1, batch.samples)
        job.streams = [[SampleStream() for _ in range(n)] for _ in prompts]
        job.cached = [0] * len(prompts)
        longest = max((len(p) for p in prompts), default=0)
        if longest + batch.max_new_tokens > self._max_context:
            job.error = ModelError(
                f"prompt ({longest} tokens) + max_new_tokens ({batch.max_new_tokens}) exceed "
                f"the model's context of {self._max_context} tokens"
            )
        return job

    def _params(self, batch: JudgeBatch) -> SamplingParams:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        n = max(1, batch.samples)
        return SamplingParams(
            n=n,
            temperature=batch.temperature_used,
            **self.sampling.request_fields(),
            max_tokens=batch.max_new_tokens,
            stop=None if self.ignore_stop else list(batch.stop) or None,
            ignore_eos=self.ignore_stop,
            include_stop_str_in_output=True,
            logprobs=self.top_logprobs,
            output_kind=RequestOutputKind.DELTA,
        )

    def _warm(self, jobs: list[_Job]) -> None:
        """Prefill each batch's prefix alone (one token), so its candidates find it cached."""
        from vllm import SamplingParams

        params = SamplingParams(n=1, temperature=0.0, max_tokens=1)
        warm: dict[str, _Job] = {}
        for j in jobs:
            if len(j.prefix_ids) < PREFIX_BLOCK or len(j.prompt_ids) * j.batch.samples < 2:
                continue
            rid = f"ws-warm-{next(self._ids)}"
            self.engine.add_request(rid, {"prompt_token_ids": j.prefix_ids}, params)
            warm[rid] = j
        while warm and self.engine.has_unfinished_requests():
            for out in self.engine.step():
                owner = warm.get(out.request_id) or warm.get(external_id(out.request_id))
                if owner is not None and out.finished:
                    cached = getattr(out, "num_cached_tokens", None) or 0
                    owner.warm_tokens = max(0, len(owner.prefix_ids) - int(cached))

    def _run(self, jobs: list[_Job]) -> None:
        for j in jobs:
            j.aborted = j.cancel is not None and j.cancel.is_set()  # cancelled before it began
        jobs = [j for j in jobs if not j.aborted]
        if not jobs:
            return
        if self.warm_prefix:
            self._warm(jobs)
        route: dict[str, tuple[_Job, int]] = {}
        for j in jobs:
            params = self._params(j.batch)
            try:
                for c, ids in enumerate(j.prompt_ids):
                    rid = f"ws-{next(self._ids)}-{c}"
                    self.engine.add_request(rid, {"prompt_token_ids": ids}, params)
                    j.request_ids.append(rid)
                    route[rid] = (j, c)
            except Exception as e:  # a request vLLM refuses fails its batch only
                j.error = model_error(e, "the model refused the request", context="vLLM")
                self._abort(j)
        seen_cached: dict[str, int] = {}
        while self.engine.has_unfinished_requests():
            for j in jobs:
                if not j.aborted and j.cancel is not None and j.cancel.is_set():
                    self._abort(j)
            if not self.engine.has_unfinished_requests():
                break  # all aborted: an idle engine's step() waits for output forever (V1)
            for out in self.engine.step():
                hit = route.get(out.request_id) or route.get(external_id(out.request_id))
                if hit is None:
                    continue
                j, c = hit
                if j.aborted or j.error is not None:
                    continue
                cached = getattr(out, "num_cached_tokens", None)
                if cached is not None:  # the least over the n samples: the first one's prefill
                    seen = seen_cached.get(out.request_id)
                    seen_cached[out.request_id] = int(cached) if seen is None else min(seen, cached)
                    j.cached[c] = seen_cached[out.request_id]
                self._fold(j, c, out)

    def _fold(self, j: _Job, c: int, out: RequestOutput) -> None:
        for comp in out.outputs:
            s = int(getattr(comp, "index", 0))
            if not 0 <= s < len(j.streams[c]):
                continue
            tops = None
            if comp.logprobs is not None:
                tops = [plain_top(e, self.top_logprobs) for e in comp.logprobs]
            delta = j.streams[c][s].add(
                str(comp.text or ""),
                list(comp.token_ids or ()),
                tops,
                comp.finish_reason,
                piece=self._piece,
                groups=self._groups,
                skip=() if self.ignore_stop else self._eos,
            )
            if delta and j.on_delta is not None:
                try:
                    j.on_delta(c, s, delta)
                except Exception as e:  # a failing listener fails its own batch only
                    j.error = model_error(e, "streaming the judge's text failed", context="vLLM")
                    self._abort(j)
                    return

    def _abort(self, j: _Job) -> None:
        j.aborted = True
        if j.request_ids:
            self.engine.abort_request(list(j.request_ids))

    def _abort_all(self, jobs: Sequence[_Job]) -> None:
        for j in jobs:
            if j.request_ids and not j.aborted:
                try:
                    self._abort(j)
                except Exception:
                    log.debug("abort failed", exc_info=True)
