"""A finished run to re-score, whatever framework made it: the task and its steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from webshepherd.daemon.offline.files import ImageMime
from webshepherd.protocol.errors import WebShepherdError

__all__ = ["ImageMime", "ImportFormatError", "ImportedRun", "ImportedStep", "Outcome"]

Outcome = Literal["success", "failure", "unknown"]


class ImportFormatError(WebShepherdError):
    """A file or folder that is not a run ``webshepherd rescore`` reads (the message says
    where and why)."""


@dataclass(frozen=True)
class ImportedStep:
    """One executed step: what the agent saw (``axtree``: the page as text, None when the
    run kept none; ``screenshot``: image bytes) and what it did."""

    url: str
    action: str
    thought: str = ""
    axtree: str | None = None
    screenshot: bytes | None = None
    screenshot_mime: ImageMime = "image/png"
    note: str | None = None  # how the observation was read, when it is not an AX tree


@dataclass
class ImportedRun:
    """A run: its task (``intent``, ``start_url``, an optional reference ``checklist``), its
    steps in order, and how it ended."""

    kind: str  # the format it was read from: browser-use, agentlab, jsonl, webshepherd, …
    intent: str
    start_url: str | None
    steps: list[ImportedStep]
    checklist: str | None = None
    agent: str = "imported"
    outcome: Outcome = "unknown"
    answer: str | None = None
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (index, why) not stepped
    warnings: list[str] = field(default_factory=list)  # what was left out (a refused screenshot)
