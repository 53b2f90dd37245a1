"""vLLM's outputs as the backend's types, from plain Python data (no vLLM imported here).

The top-k logprobs of a position, one sample's stream of delta outputs, and a batch's
:class:`~.backend.JudgeOutput` with its prefix-cache counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from webshepherd.daemon.engine.backends.base import GeneratedToken, Generation, JudgeOutput
from webshepherd.daemon.engine.backends.topk import mass_by_id

if TYPE_CHECKING:  # the type only: vLLM is not imported here
    from vllm.logprobs import Logprob

__all__ = ["SampleStream", "external_id", "judge_output", "plain_top"]


def plain_top(entry: Mapping[int, float | Logprob] | None, k: int) -> dict[int, float]:
    """``{token id: logprob}`` of the top ``k`` of one position.

    ``entry`` maps token ids to floats or to objects with ``logprob`` and ``rank`` (vLLM's
    ``Logprob``); vLLM adds the sampled token even when it ranks below ``k``: it is left out, so
    the mass is a plain top-k sum.
    """
    out: dict[int, float] = {}
    for tid, value in (entry or {}).items():
        logprob = getattr(value, "logprob", value)
        rank = getattr(value, "rank", None)
        if logprob is None or (rank is not None and rank > k):
            continue
        out[int(tid)] = float(logprob)
    return out


@dataclass
class SampleStream:
    """One sample's text, tokens and finish, folded from the engine's delta outputs."""

    parts: list[str] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    tokens: list[GeneratedToken] = field(default_factory=list)
    finish: str | None = None

    def add(
        self,
        text: str,
        token_ids: Sequence[int],
        logprobs: Sequence[Mapping[int, float]] | None,
        finish_reason: str | None,
        *,
        piece: Callable[[int], str],
        groups: Mapping[int, int],
        skip: Iterable[int] = (),
    ) -> str:
        """Fold one delta in (``logprobs``: plain top-k per new token); returns the text delta.

        Tokens in ``skip`` (end of sequence) end the sample without becoming tokens.
        """
        skipped = set(skip)
        for i, tid in enumerate(token_ids):
            if tid in skipped:
                continue
            top = logprobs[i] if logprobs is not None and i < len(logprobs) else {}
            self.ids.append(tid)
            self.tokens.append(
                GeneratedToken(
                    piece=piece(tid), group=groups.get(tid), mass=mass_by_id(top, groups)
                )
            )
        if text:
            self.parts.append(text)
        if finish_reason is not None:
            self.finish = str(finish_reason)
        return text

    def generation(self, aborted: bool = False) -> Generation:
        """``finish_reason``: vLLM's ``stop``/``length``; ``abort`` or none when aborted."""
        finish = {"stop": "stop", "length": "length"}.get(self.finish or "")
        if finish is None:
            finish = "aborted" if aborted or self.finish == "abort" else "length"
        return Generation(text="".join(self.parts), tokens=tuple(self.tokens), finish_reason=finish)


def judge_output(
    streams: Sequence[Sequence[SampleStream]],
    prompt_tokens: Sequence[int],
    cached_tokens: Sequence[int],
    *,
    aborted: bool = False,
    warm_tokens: int = 0,
) -> JudgeOutput:
    """A batch's :class:`JudgeOutput`: ``streams[candidate][sample]``, each candidate's prompt
    length and its tokens vLLM found in its prefix cache; ``warm_tokens`` were prefilled to
    seed the cache (the prefix alone)."""
    prefilled = warm_tokens + sum(
        max(0, p - c) for p, c in zip(prompt_tokens, cached_tokens, strict=True)
    )
    gens = tuple(tuple(s.generation(aborted) for s in row) for row in streams)
    return JudgeOutput(
        generations=gens,
        prefilled_tokens=prefilled,
        generated_tokens=sum(len(s.ids) for row in streams for s in row),
        prefix_shared=sum(cached_tokens) > 0,
        label_source="top_k",
    )


def external_id(request_id: str) -> str:
    """The id a request was added with, should an engine report its internal ``ID-suffix``."""
    return request_id.rsplit("-", 1)[0]
