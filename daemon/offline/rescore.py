"""Re-score a finished run through a daemon (``webshepherd rescore``): each imported step is
observed, its executed action scored as the one candidate (``approval: never``) and reported
as executed, in a session with ``source: "import"``; the scored replies give the summary
(rewards, checklist levels, the first bad steps) and the recorded events the signals."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from webshepherd.daemon.offline.imports import ImportedRun, ImportedStep
from webshepherd.protocol.common import AgentInfo, Observation, Screenshot
from webshepherd.protocol.progress import FirstBadSteps, StepJudgement, first_bad_steps, item_levels

CHECKLIST_TIMEOUT_S = 300.0
SCORE_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ScoredStep:
    """One re-scored step (``reward`` None: the judge gave none; ``skipped``: why it was
    not scored)."""

    step: int
    url: str
    action: str
    reward: float | None = None
    levels: dict[int, int] = field(default_factory=dict)
    feedback: str = ""
    judge_inputs: str | None = None
    skipped: str | None = None


@dataclass
class RescoreResult:
    session_id: str
    run: ImportedRun
    checklist: list[tuple[int, str]]
    checklist_source: str
    steps: list[ScoredStep]
    bad: FirstBadSteps
    signals: list[dict[str, Any]]
    report: str | None = None

    @property
    def scored(self) -> int:
        return sum(1 for s in self.steps if s.skipped is None)

    def summary(self) -> dict[str, Any]:
        """What ``--json`` writes: every ``step`` is the wire's index, counted from 0 (the
        terminal's "step 2" is ``"step": 1``), as ``steps_counted_from`` says."""
        return {
            "steps_counted_from": 0,
            "session_id": self.session_id,
            "format": self.run.kind,
            "intent": self.run.intent,
            "steps": len(self.steps),
            "steps_scored": self.scored,
            "skipped": [
                {"step": s.step, "action": s.action, "why": s.skipped}
                for s in self.steps
                if s.skipped is not None
            ]
            + [{"step": None, "entry": n, "why": why} for n, why in self.run.skipped],
            "warnings": self.run.warnings,
            "rewards": [s.reward for s in self.steps],
            "first_bad_steps": self.bad.as_dict(),
            "signals": self.signals,
            "report": self.report,
        }


def skip_reason(step: ImportedStep, vision: bool) -> str | None:
    """Why a step cannot be scored (None: it can)."""
    if step.axtree:
        return None
    if step.screenshot is not None:
        if vision:
            return None
        return "no AX tree, and the judge reads text only (--vision scores the screenshot)"
    return "no AX tree or screenshot in the run"


def _observation(step: ImportedStep) -> Observation:
    shot = (
        Screenshot(mime=step.screenshot_mime, data=base64.b64encode(step.screenshot).decode())
        if step.screenshot is not None
        else None
    )
    return Observation(url=step.url or "about:blank", axtree=step.axtree or "", screenshot=shot)


async def rescore(
    run: ImportedRun,
    url: str | None,
    token: str | None,
    *,
    checklist: str | None = None,
    samples: int | None = None,
    vision: bool = False,
    stalled_after: int | None = None,
    on_step: Callable[[int, int], None] | None = None,
) -> RescoreResult:
    """Score ``run`` on the daemon at ``url`` (None: ``$WEBSHEPHERD_URL`` or the default)."""
    from webshepherd.protocol.client import AsyncClient

    if not run.steps:
        from webshepherd.daemon.offline.imports import ImportFormatError

        raise ImportFormatError(f"the {run.kind} run has no executed steps to score")
    agent = AgentInfo(name=f"import:{run.agent}"[:200])
    if stalled_after is not None:
        agent = AgentInfo(name=agent.name, stalled_after=stalled_after)
    scored: list[ScoredStep] = []
    async with AsyncClient(url, token, name="webshepherd-rescore") as client:
        session = await client.start_session(
            run.intent,
            start_url=run.start_url,
            checklist=checklist if checklist is not None else run.checklist,
            observation=_observation(run.steps[0]),
            agent=agent,
            source="import",
        )
        made = await session.checklist(timeout=CHECKLIST_TIMEOUT_S)
        for n, step in enumerate(run.steps):
            if n:
                obs = _observation(step)
                await session.observe(obs.url, obs.axtree, obs.screenshot)
            why = skip_reason(step, vision)
            if why is None:
                reply = await session.score(
                    [(step.thought, step.action)],
                    samples=samples,
                    approval="never",
                    timeout=SCORE_TIMEOUT_S,
                )
                result = reply.results[0]
                scored.append(
                    ScoredStep(
                        reply.step,
                        step.url,
                        step.action,
                        result.reward,
                        item_levels(result.items),
                        result.feedback,
                        result.judge_inputs,
                    )
                )
            else:
                scored.append(ScoredStep(n, step.url, step.action, skipped=why))
            await session.act(step.action, step.thought or None, step=scored[-1].step)
            if on_step is not None:
                on_step(n + 1, len(run.steps))
        await session.end(run.outcome, run.answer)
        recorded = await client.session(session.session_id)
    signals = [e for e in recorded.events if e.get("type") == "signal"]
    bad = first_bad_steps(
        [StepJudgement(s.step, s.reward, s.levels, s.feedback) for s in scored if not s.skipped]
    )
    return RescoreResult(
        session.session_id,
        run,
        [(it.index, it.title) for it in made.items],
        made.source,
        scored,
        bad,
        signals,
    )
