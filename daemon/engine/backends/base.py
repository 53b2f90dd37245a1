"""The small interface every model backend implements (transformers, vLLM, remote).

A backend knows tokens; it knows nothing of checklists, prompts' meaning or
Eq. 2. The engine (engine.py) renders prompts, finds label positions in what
the backend returns, and computes rewards, identically for every backend.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from webshepherd.daemon.engine.sampling import NO_SAMPLING, Sampling
from webshepherd.daemon.engine.types import LabelSource

# Label groups, in this order everywhere: 0 = Yes, 1 = In Progress, 2 = No.
YES, IN_PROGRESS, NO = 0, 1, 2


@dataclass(frozen=True)
class GeneratedToken:
    """One generated token.

    ``piece`` is the token's decoded text (e.g. ``" Yes"``, ``"\\nIn"``,
    ``"complete"``) so word boundaries can be checked; ``group`` is the label
    group of the token's vocabulary entry when it is one of the paper's
    whole-token label variants (Appendix C.2), else ``None``; ``mass`` holds
    the probability mass of the three label groups' tokens at this position
    (full vocabulary where the backend has it, a top-k sum otherwise),
    not yet normalized.
    """

    piece: str
    group: int | None
    mass: tuple[float, float, float]


@dataclass(frozen=True)
class Generation:
    """One sampled completion."""

    text: str
    tokens: tuple[GeneratedToken, ...]
    finish_reason: str  # "stop" (</answer> or end of sequence), "length", "aborted"


@dataclass(frozen=True)
class JudgeBatch:
    """K candidates x n samples sharing one prompt prefix.

    The full prompt of candidate k is ``prefix + suffixes[k]`` (both already
    rendered through the chat template). ``greedy``: decode greedily (``None``: exactly when
    ``samples == 1``); otherwise every sample is drawn at ``temperature``, under the
    checkpoint's sampling settings (``Backend.sampling``).
    """

    prefix: str
    suffixes: Sequence[str]
    samples: int
    max_new_tokens: int
    temperature: float = 1.0
    stop: Sequence[str] = ("</answer>",)
    # (mime, bytes) of the screenshot the prompts' image placeholder stands for, or None
    image: tuple[str, bytes] | None = None
    greedy: bool | None = None

    @property
    def is_greedy(self) -> bool:
        return self.greedy if self.greedy is not None else self.samples <= 1

    @property
    def temperature_used(self) -> float:
        """The temperature the samples are drawn at (0 when greedy)."""
        return 0.0 if self.is_greedy else self.temperature


@dataclass(frozen=True)
class JudgeOutput:
    generations: tuple[tuple[Generation, ...], ...]  # [candidate][sample]
    prefilled_tokens: int
    generated_tokens: int
    prefix_shared: bool
    label_source: LabelSource


# (candidate, sample, text delta); called from the thread running the backend.
DeltaCallback = Callable[[int, int, str], None]


class Backend(ABC):
    """A loaded model. Calls are blocking; a backend with a model in this process serialises
    the calls that run it (its own lock, the one around a model call: engines, the dev
    OpenAI server and benches may share one backend from several threads)."""

    name: str
    model_id: str
    accepts_images: bool = False  # whether judge() takes a JudgeBatch with an image
    # the checkpoint's top_k / top_p / repetition_penalty, applied to every generation
    sampling: Sampling = NO_SAMPLING

    @property
    @abstractmethod
    def max_context(self) -> int:
        """Longest prompt + completion the model accepts, in tokens."""

    @abstractmethod
    def render_chat(self, messages: Sequence[dict[str, str]]) -> str:
        """The model's own chat template, with the generation prompt appended."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens of an already rendered text (no special tokens added)."""

    def count_prompt(self, text: str, image: tuple[str, bytes] | None = None) -> int:
        """Tokens of a rendered prompt whose image placeholder stands for ``image`` (the
        backends that take images count what that image really takes)."""
        return self.count_tokens(text)

    @abstractmethod
    def generate(
        self, prompt: str, max_new_tokens: int, temperature: float = 0.0, stop: Sequence[str] = ()
    ) -> str:
        """One completion of a rendered prompt (used for checklists)."""

    @abstractmethod
    def judge(
        self,
        batch: JudgeBatch,
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> JudgeOutput:
        """Sample every candidate of ``batch``, prefilling the shared prefix once where possible."""

    def judge_many(
        self,
        batches: Sequence[JudgeBatch],
        on_deltas: Sequence[DeltaCallback | None],
        cancels: Sequence[threading.Event | None],
    ) -> list[JudgeOutput | Exception]:
        """Judge independent batches (different sessions) together; one entry per batch, in order:
        its output, or the exception that batch raised (the others are unaffected). A set cancel
        event aborts only its own batch."""
        results: list[JudgeOutput | Exception] = []
        for batch, on_delta, cancel in zip(batches, on_deltas, cancels, strict=True):
            try:
                results.append(self.judge(batch, on_delta=on_delta, cancel=cancel))
            except Exception as exc:  # one batch's failure is that batch's entry only
                results.append(exc)
        return results

    def health(self) -> dict[str, object]:
        """Backend facts for ``stats`` and diagnostics (device, memory, …)."""
        return {"backend": self.name, "model": self.model_id}

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release the model."""
