"""A session's checklist, owned here: the engine is asked for one at a time, the scores that
come while it is being made wait for it in the session, and its result (or its failure)
releases them. A client's own checklist is parsed by the socket layer and arrives here ready.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from webshepherd.daemon.engine.types import CandidateScore, ParsedChecklist, StepScore
from webshepherd.daemon.records.checklists import ChecklistRecord
from webshepherd.daemon.sessions import convert
from webshepherd.daemon.sessions.effects import Effect, Publish, RunChecklist, RunScore
from webshepherd.daemon.sessions.state import LiveSession
from webshepherd.protocol.common import ChecklistSource, Timing

if TYPE_CHECKING:
    from collections.abc import Mapping

NO_CHECKLIST = (
    "the judge wrote no checklist it could parse for this task: pass the task's own with "
    "checklist=… (the session's next step asks the judge again)"
)


def no_checklist(job: RunScore, why: str) -> StepScore:
    """A step the judge cannot score for want of a checklist, as a result: every candidate's
    reward None, ``feedback`` the reason (and the generation's own error, when it said one)."""
    reason = f"{NO_CHECKLIST}: {why}" if why else NO_CHECKLIST
    unscored = tuple(
        CandidateScore(i, None, (), reason, (), parsed_samples=0)
        for i in range(len(job.input.candidates))
    )
    return StepScore(unscored, prompt_tokens=0, generated_tokens=0, prefix_shared=False)


class Checklists:
    """The checklist side of :class:`SessionCore`: ``sessions`` is the machine's."""

    def __init__(self, sessions: Mapping[str, LiveSession]) -> None:
        self.sessions = sessions

    def ask(self, st: LiveSession) -> list[Effect]:
        """Ask the engine for ``st``'s checklist (at the start, after a restart cut a
        generation off, or again after one failed), unless it is being made."""
        if st.checklist is not None or st.checklist_asked:
            return []
        st.checklist_asked = True
        h = st.header
        start_url = h.start_url or (st.url or "")
        return [RunChecklist(h.session_id, h.intent, start_url, st.axtree or "", st.owner)]

    def score(self, st: LiveSession, job: RunScore) -> list[Effect]:
        """``job`` to the engine with the session's checklist, or waiting for it."""
        if job.input.checklist is not None:
            return [job]
        st.awaiting_checklist.append(job)
        return self.ask(st)

    def ready(
        self, session_id: str, parsed: ParsedChecklist, source: ChecklistSource
    ) -> list[Effect]:
        """The checklist is known: recorded, published, and the scores waiting for it go."""
        st = self.sessions[session_id]
        st.checklist, st.checklist_asked = parsed, False
        event = convert.checklist_event(session_id, parsed, source)
        out: list[Effect] = [ChecklistRecord(event), Publish(session_id, event)]
        waiting, st.awaiting_checklist = st.awaiting_checklist, []
        return out + [replace(j, input=replace(j.input, checklist=parsed)) for j in waiting]

    def failed(self, session_id: str, why: str) -> list[tuple[RunScore, StepScore, Timing]]:
        """The generation failed (``why``: what the client may read): the scores waiting for
        it become results without a reward that say why; the session's next score asks
        again."""
        st = self.sessions.get(session_id)
        if st is None:
            return []
        st.checklist_asked = False
        waiting, st.awaiting_checklist = st.awaiting_checklist, []
        return [(job, no_checklist(job, why), Timing()) for job in waiting]
