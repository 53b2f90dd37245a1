"""What every export format shares: the per-session loop (timeline → Redactor taught the
session's typed passwords) and the :class:`Summary` of what was written and skipped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Timeline
from webshepherd.daemon.redact import Redactor
from webshepherd.protocol.common import SessionSummary
from webshepherd.protocol.errors import WebShepherdError


class UnparsedAction(TypedDict):
    """A step whose action the export could not read (its session and step)."""

    task_id: str
    step_id: int


class ExportInfo(TypedDict):
    """What an export wrote (``webshepherd export`` prints it as JSON): rows (mind2web:
    sessions), screenshots, per session; the row formats add what they skipped and why, and
    every format the files it wrote."""

    rows: int
    images: int
    per_session: dict[str, int]
    unparsed_actions: NotRequired[list[UnparsedAction]]
    skipped: NotRequired[int]
    skipped_by_reason: NotRequired[dict[str, int]]
    files: NotRequired[list[str]]
    llamafactory_dataset: NotRequired[str]  # sft: the dataset_info.json entry's name


@dataclass
class Summary:
    rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    per_session: dict[str, int] = field(default_factory=dict)
    images: int = 0
    unparsed_actions: list[UnparsedAction] = field(default_factory=list)

    def as_dict(self) -> ExportInfo:
        return {
            "unparsed_actions": self.unparsed_actions,
            "rows": self.rows,
            "skipped": sum(self.skipped.values()),
            "skipped_by_reason": dict(self.skipped),
            "per_session": self.per_session,
            "images": self.images,
        }


def learn(red: Redactor, tl: Timeline) -> None:
    """Teach the redactor the values typed into password fields anywhere in the session:
    executed, scored and approved actions, each with the page of its step."""
    pages = {st.step: st.axtree for st in tl.steps}
    acts = [(x.action, pages.get(x.step, "")) for x in tl.actions]
    acts += [
        (c.candidate.action, st.axtree)
        for st in tl.steps
        for sc in st.scorings
        for c in sc.candidates
    ]
    acts += [(a.action, st.axtree) for st in tl.steps for a in st.approvals if a.action is not None]
    red.learn_passwords(acts)


def redacted_sessions(
    history: History, sessions: Sequence[SessionSummary], redact: Sequence[str] = ()
) -> Iterator[tuple[SessionSummary, Timeline, Redactor]]:
    """Each session with its timeline and a redactor (``redact``'s patterns, and the
    passwords typed in it): the one loop every export format runs."""
    for s in sessions:
        tl = history.timeline(s.session_id)
        if tl is None:
            raise WebShepherdError(f"no recorded session {s.session_id}")
        red = Redactor(redact)
        learn(red, tl)
        yield s, tl, red
