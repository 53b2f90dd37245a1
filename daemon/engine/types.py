"""Plain data the engine takes and returns: no torch, no sockets.

The daemon talks to the model only through :class:`Engine` (engine.py) and
these types; backends (transformers, vLLM, remote) sit behind
:class:`webshepherd.daemon.engine.backends.base.Backend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, Protocol

from typing_extensions import TypeVar
from webshepherd.protocol.common import Turn as Turn  # re-exported: a history's turn
from webshepherd.protocol.common import UnparsedReason

LabelSource = Literal["full", "top_k"]
JudgeInputs = Literal["text", "text+image"]
JUDGE_INPUTS: tuple[JudgeInputs, ...] = ("text", "text+image")


@dataclass(frozen=True)
class ChecklistItem:
    index: int
    title: str
    goal: str | None = None


@dataclass(frozen=True)
class ParsedChecklist:
    """A checklist as the judge prompt shows it (``text``, the original text) and as items."""

    items: tuple[ChecklistItem, ...]
    text: str


class CandidateLike(Protocol):
    """A candidate as the judge reads it (its thought and action, never changed): the daemon's
    are the wire's ``Candidate`` as the client sent them, offline callers' a ``Turn``."""

    @property
    def thought(self) -> str: ...

    @property
    def action(self) -> str: ...


C = TypeVar("C", bound=CandidateLike, default=CandidateLike, covariant=True)


@dataclass(frozen=True)
class StepInput(Generic[C]):
    """Everything needed to score the candidates of one step. ``checklist``: None while the
    session's is still being generated (the daemon's runner adds it when the step runs); the
    engine scores no step without one. ``C``: the candidates' own type, kept as it came (the
    daemon's ``StepInput[Candidate]`` gives its record the candidates the client sent)."""

    intent: str
    current_url: str
    axtree: str
    checklist: ParsedChecklist | None
    history: tuple[Turn, ...]
    candidates: tuple[C, ...]
    samples: int = 1
    screenshot: bytes | None = None  # the latest observation's, as recorded
    screenshot_mime: str | None = None


@dataclass(frozen=True)
class LabelProbs:
    """Probabilities of the three label groups at one label position (sum to 1)."""

    yes: float
    in_progress: float
    no: float

    @property
    def reward(self) -> float:
        """Eq. 2 term of one item: P(Yes) + 0.5 * P(In Progress)."""
        return self.yes + 0.5 * self.in_progress


@dataclass(frozen=True)
class ItemScore:
    index: int
    probs: LabelProbs


@dataclass(frozen=True)
class SampleScore:
    text: str
    items: tuple[ItemScore, ...]
    reward: float | None  # None when the sample is unparsed
    unparsed: UnparsedReason | None = None


@dataclass(frozen=True)
class CandidateScore:
    index: int
    reward: float | None  # Eq. 2 over samples (unparsed ones skipped or 0, by the rule)
    items: tuple[ItemScore, ...]  # per-item mean over parsed samples
    feedback: str  # the first parsed sample's feedback paragraph, or an explanation
    samples: tuple[SampleScore, ...]
    parsed_samples: int
    label_source: LabelSource = "full"
    unparsed_samples: int = 0
    judge_inputs: JudgeInputs = "text"


@dataclass(frozen=True)
class StepScore:
    candidates: tuple[CandidateScore, ...]
    prompt_tokens: int  # tokens prefilled (the shared prefix counted once when shared)
    generated_tokens: int
    prefix_shared: bool


@dataclass
class EngineStats:
    generated_tokens: int = 0
    prefilled_tokens: int = 0
    busy_s: float = 0.0
    requests: int = 0


# (candidate index, sample index, text delta) -> None; called from the engine's thread.
ProgressCallback = Callable[[int, int, str], None]
