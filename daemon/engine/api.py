"""What the daemon needs of an engine: :class:`EngineAPI`, which
:class:`~webshepherd.daemon.engine.engine.Engine` satisfies (the type check proves it below)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from webshepherd.daemon.engine.types import (
    EngineStats,
    ParsedChecklist,
    ProgressCallback,
    StepInput,
    StepScore,
)

if TYPE_CHECKING:
    from webshepherd.daemon.engine.engine import Engine


class EngineAPI(Protocol):
    """The engine as the daemon uses it (blocking calls, from one worker thread)."""

    @property
    def model_id(self) -> str: ...
    @property
    def backend_name(self) -> str: ...
    @property
    def stats(self) -> EngineStats: ...
    @property
    def settings(self) -> dict[str, object]: ...

    def make_checklist(self, intent: str, start_url: str, axtree: str) -> ParsedChecklist: ...
    def parse_reference_checklist(self, text: str) -> ParsedChecklist: ...
    def health(self) -> dict[str, object]: ...
    def score(
        self,
        step: StepInput,
        on_progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> StepScore: ...
    def score_many(
        self,
        steps: Sequence[StepInput],
        on_progress: Sequence[ProgressCallback | None] | None = None,
        cancels: Sequence[threading.Event | None] | None = None,
    ) -> list[StepScore | Exception]: ...


if TYPE_CHECKING:

    def _engine_is_an_engine_api(engine: Engine) -> EngineAPI:
        return engine  # fails the type check when Engine stops satisfying EngineAPI
