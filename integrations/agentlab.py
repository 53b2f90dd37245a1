"""AgentLab: reward-guided action selection around any AgentLab agent.

```python
agent_args = RewardGuidedAgentArgs(subagent_args=GenericAgentArgs(...), n_candidates=4)
ExpArgs(agent_args=agent_args, env_args=EnvArgs(task_name="miniwob.click-test")).run()
```

Each step, the subagent proposes ``n_candidates`` actions: through AgentLab's multi-candidate
interface (``get_candidate_generations`` / ``update_agent_state_from_selected_candidate``, as
``MultiCandidateGenericAgent`` has) where the subagent has it, else by calling its
``get_action`` n times, each on a copy of the subagent made before the step (the copy whose
action is picked becomes the subagent; an agent that cannot be copied is sampled in place).
The distinct actions are scored in one request and picked by the paper's best-of-n rule
(:mod:`webshepherd.protocol.agents.best_of_n`: highest reward, then most often proposed).

``select="refine"``: when the pick's reward is below ``refine_below`` (or unparsed), the
judge's feedback goes back to the subagent as its ``hint`` for a second round of candidates,
scored and picked the same way (needs the multi-candidate interface).

``approval_threshold``: a pick whose reward is below it (or unparsed) waits for a person
(the TUI, the extension, any monitor client). The protocol has no per-request threshold, so
this costs a second score request of the pick alone with ``approval="always"``; an edited
action runs instead.

A refused pick (a person rejected it, or the daemon's guard rules refused it with nobody
paired to decide) does not run: the agent takes the best candidate that may run instead, the
next by reward that is neither refused nor guarded (``scored.guarded``), asked for in turn
under ``approval_threshold``; only when every candidate is refused it returns ``noop()``
(always in BrowserGym's action sets). The subagent's hint on the next step says what was
refused, by whom and why (:func:`webshepherd.protocol.agents.refusal.refusal_text`). The
agent never sees AgentLab's env, so the guard rules hold by what the page says (no browser
gate here: :class:`~webshepherd.integrations.browsergym.ProcessRewardWrapper` has one).

A judge that gives no judgement (no parseable checklist, a model error) is a result: every
reward ``None``, ``extra_info["webshepherd"]["reason"]`` says why, and the subagent's most
proposed action runs.

The observation the daemon scores is computed from the raw BrowserGym obs in
``obs_preprocessor`` (before the subagent's own preprocessing drops ``axtree_object``):
:func:`.browsergym.observation_text`, the extension's bytes. One session per agent (per
episode); it ends on :meth:`RewardGuidedAgent.close`, on ``RewardGuidedAgentArgs.close()``
(AgentLab calls it after a study), or when the agent is garbage-collected (AgentLab drops it
when ``ExpArgs.run`` returns), with the episode's result as AgentLab recorded it: the
experiment's ``summary_info.json`` (``cum_reward``, ``terminated``, ``err_msg``; the
experiment's folder is the one ``ExpArgs.run`` logs to as it makes the agent). Success: the
env terminated with a cumulative reward > 0; failure: terminated with <= 0; unknown: an error
or an episode ended before the env terminated, said in the session's answer.

The daemon: ``url`` (else ``$WEBSHEPHERD_URL``) and the token from ``$WEBSHEPHERD_TOKEN`` or
the token store, as :class:`~webshepherd.protocol.client.sync.Client` resolves them; never a
token in the args: AgentLab pickles agent args into each experiment's ``exp_args.pkl``.
"""

from __future__ import annotations

import copy
import json
import logging
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentlab.agents.agent_args import AgentArgs
from browsergym.experiments.agent import Agent, AgentInfo
from webshepherd.integrations.browsergym import (
    JUDGING_ERRORS,
    BrowserGymObs,
    ObservationFields,
    judging_failure,
    no_reward_reason,
    observation,
)
from webshepherd.integrations.browsergym_obs import goal_text
from webshepherd.protocol.agents.best_of_n import (
    BestOfN,
    action_key,
    best_of_n_sync,
    decide,
    group_proposals,
)
from webshepherd.protocol.agents.refusal import refusal_info
from webshepherd.protocol.client.sync import Client, SyncSession
from webshepherd.protocol.common import Candidate, Outcome

Select = Literal["best", "refine"]
REJECTED_ACTION = "noop()"


@dataclass
class Proposal:
    """One candidate of the subagent: its action, AgentInfo, and the state it came from."""

    action: str
    info: AgentInfo
    raw: Any = None  # the multi-candidate dict, or the sampled copy of the subagent


@dataclass
class Round:
    """One round of candidates: scored (``result``), or not judged (``reason`` says why)."""

    proposals: list[Proposal]
    result: BestOfN | None
    hint: list[str] | None
    candidates: list[Candidate] = field(default_factory=list)  # distinct, most proposed first
    counts: list[int] = field(default_factory=list)
    reason: str | None = None

    @property
    def rewards(self) -> list[float | None]:
        return list(self.result.rewards) if self.result else [None] * len(self.candidates)

    @property
    def index(self) -> int:
        """The pick: best-of-n's, or the most proposed when nothing was judged."""
        return self.result.index if self.result else 0

    @property
    def feedback(self) -> str:
        return self.result.feedback if self.result else ""


@dataclass
class RewardGuidedAgentArgs(AgentArgs):
    """Wraps ``subagent_args``: its agent proposes, webshepherd picks."""

    subagent_args: AgentArgs | None = None
    n_candidates: int = 3
    select: Select = "best"
    approval_threshold: float | None = None
    refine_below: float = 0.5
    checklist: str | None = None  # a reference checklist; else the model writes one
    intent: str | None = None  # else the env's goal
    samples: int = 1
    url: str | None = None  # else the local daemon

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.select not in ("best", "refine"):
            raise ValueError(f"select must be 'best' or 'refine', not {self.select!r}")
        if self.n_candidates < 1:
            raise ValueError("n_candidates must be at least 1")
        if self.subagent_args is not None and getattr(self.subagent_args, "agent_name", None):
            self.agent_name = "WS-" + self.subagent_args.agent_name
        self._agents: weakref.WeakSet[RewardGuidedAgent] = weakref.WeakSet()

    def make_agent(self) -> RewardGuidedAgent:
        if self.subagent_args is None:
            raise ValueError("RewardGuidedAgentArgs needs subagent_args")
        agent = RewardGuidedAgent(self, self.subagent_args.make_agent())
        self._agents.add(agent)
        return agent

    def set_benchmark(self, benchmark: object, demo_mode: bool) -> None:
        if self.subagent_args is not None and hasattr(self.subagent_args, "set_benchmark"):
            self.subagent_args.set_benchmark(benchmark, demo_mode)

    def set_reproducibility_mode(self) -> None:
        sub = self.subagent_args
        if sub is not None and hasattr(sub, "set_reproducibility_mode"):
            sub.set_reproducibility_mode()

    def prepare(self) -> object:
        return self.subagent_args.prepare() if self.subagent_args is not None else None

    def close(self) -> object:
        for agent in list(self._agents):
            agent.close()
        return self.subagent_args.close() if self.subagent_args is not None else None

    def __getstate__(self) -> dict[str, object]:  # AgentLab pickles args; live agents stay out
        state = dict(self.__dict__)
        state.pop("_agents", None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._agents = weakref.WeakSet()


class RewardGuidedAgent(Agent):
    """The agent :class:`RewardGuidedAgentArgs` makes (one webshepherd session per agent)."""

    def __init__(self, args: RewardGuidedAgentArgs, subagent: Any) -> None:
        self.args = args
        self.subagent = subagent
        self.action_set = subagent.action_set
        self.client = Client(args.url)  # None: $WEBSHEPHERD_URL, else the local daemon
        self.session: SyncSession | None = None
        self.exp_dir = _experiment_dir()  # where AgentLab writes this episode's result
        self._observation: ObservationFields | None = None
        self._hint: list[str] | None = None
        self._checklist: list[str] | None = None
        # ends the session when the agent is collected or closed: _end(client, session, exp_dir)
        self._finalizer: (
            weakref.finalize[[Client, SyncSession, Path | None], RewardGuidedAgent] | None
        ) = None

    @property
    def multi_candidate(self) -> bool:
        return hasattr(self.subagent, "get_candidate_generations") and hasattr(
            self.subagent, "update_agent_state_from_selected_candidate"
        )

    def obs_preprocessor(self, obs: BrowserGymObs) -> object:
        """Records the raw page for webshepherd, then the subagent's own preprocessing."""
        self._observation = observation(obs)
        if self.session is None:
            intent = self.args.intent or obs.get("goal") or goal_text(obs)
            if not self.client.connected:
                self.client.connect()
            self.session = self.client.start_session(
                intent,
                start_url=obs["url"],
                checklist=self.args.checklist,
                observation=self._observation,
                agent=f"agentlab:{getattr(self.subagent, '__class__', type(self)).__name__}",
            )
            self._finalizer = weakref.finalize(self, _end, self.client, self.session, self.exp_dir)
        else:
            self.session.observe(**self._observation)
        return self.subagent.obs_preprocessor(obs)

    def get_action(self, obs: object) -> tuple[str | None, AgentInfo]:
        if self.session is None:
            raise RuntimeError("obs_preprocessor (the experiment loop) starts the session")
        session = self.session
        started = time.perf_counter()
        hint, self._hint = self._hint, None
        first = self._round(obs, hint)
        if first is None:  # the subagent stops: so does the episode (ended with its result)
            return None, AgentInfo(stats={"ws_reward": None, "ws_latency_s": 0.0})
        rounds = [first]
        if self.args.select == "refine" and _below(
            first.rewards[first.index], self.args.refine_below
        ):
            if not self.multi_candidate:
                raise TypeError("select='refine' needs a subagent with get_candidate_generations")
            feedback = first.feedback or first.reason or "no judgement"
            second = self._round(obs, [f"Judge's feedback: {feedback}"])
            rounds += [second] if second is not None else []
        final = rounds[-1]
        chosen, k, decision, refusals = self._pick(session, final)
        latency = time.perf_counter() - started

        picked = _proposal_for(final, final.candidates[k].action)
        info = picked.info if picked is not None else AgentInfo()
        if refusals:  # the subagent learns what was refused, by whom and why
            self._hint = [str(r["text"]) for r in refusals]
        if chosen is None:
            action = REJECTED_ACTION
            session.act(action, self._hint[0] if self._hint else None)
        else:
            action = chosen.action
            if picked is not None:
                self._commit(picked, action)
            session.act(action, chosen.thought or None)
        ws = {
            "session_id": session.session_id,
            "reward": final.rewards[final.index],
            "rewards": final.rewards,
            "candidates": [c.action for c in final.candidates],
            "counts": list(final.counts),
            "index": final.index,
            "ran": k if chosen is not None else None,
            "feedback": final.feedback,
            "checklist": _items(final.result) if final.result else [],
            "decision": decision,
            "action": action,
            "refused": refusals,
            "rounds": len(rounds),
            "hint": final.hint,
        }
        if final.reason:
            ws["reason"] = final.reason
        return action, _with_rewards(info, ws, latency, self._markdown(rounds, ws))

    def _pick(
        self, session: SyncSession, rnd: Round
    ) -> tuple[Candidate | None, int, str, list[dict[str, object]]]:
        """The best candidate that may run: best-of-n's pick unless refused, else the next by
        reward that is neither refused nor guarded (each asked for under
        ``approval_threshold``). ``(candidate or None, its index, decision, refusals)``."""
        result = rnd.result
        guarded = set(result.scored.guarded or []) if result else set()
        refusals: list[dict[str, object]] = []
        decision = result.decision.status if result else "auto"
        for k in _ranked(rnd):
            cand = rnd.candidates[k]
            d = None
            if result is not None and k == result.index:
                chosen, d = result.chosen, result.decision
            elif k in guarded:  # a guard would hold it too: no way round a refusal
                continue
            else:
                chosen = cand
            if (
                chosen is not None
                and self.args.approval_threshold is not None
                and _below(rnd.rewards[k], self.args.approval_threshold)
            ):
                asked = session.score([chosen], samples=self.args.samples, approval="always")
                chosen, d = decide([chosen], 0, asked.decision), asked.decision
            if d is not None:
                decision = d.status
            if chosen is not None:
                return chosen, k, decision, refusals
            assert d is not None
            refusals.append(refusal_info(d, cand.action))
        return None, rnd.index, decision, refusals

    def close(self) -> None:
        """Ends the session (with AgentLab's result when written) and closes the connection."""
        if self._finalizer is not None:
            self._finalizer()
        else:
            self.client.close()

    def _round(self, obs: object, hint: list[str] | None) -> Round | None:
        proposals = self._propose(obs, hint)
        if not proposals:
            return None
        assert self.session is not None
        cands = [Candidate(thought=p.info.think or "", action=p.action) for p in proposals]
        try:
            result = best_of_n_sync(
                self.session,
                cands,
                top_n=len(proposals),
                samples=self.args.samples,
                approval="never",
            )
        except JUDGING_ERRORS as exc:  # no judgement: a result, never an exception
            groups = group_proposals(cands)
            return Round(
                proposals,
                None,
                hint,
                [g.candidate for g in groups],
                [g.count for g in groups],
                judging_failure(exc),
            )
        reason = None if result.reward is not None else no_reward_reason(result.scored.results)
        return Round(proposals, result, hint, result.candidates, result.counts, reason)

    def _propose(self, obs: object, hint: list[str] | None) -> list[Proposal]:
        n = self.args.n_candidates
        if self.multi_candidate:
            generations = self.subagent.get_candidate_generations(obs, hint=hint, n_candidates=n)
            proposals = [Proposal(g["action"], g["agent_info"], g) for g in generations]
        else:
            proposals = []
            for _ in range(n):
                try:
                    sample = copy.deepcopy(self.subagent)
                except Exception:  # an agent holding sockets or locks: sampled in place
                    sample = self.subagent
                action, info = sample.get_action(obs)
                proposals.append(Proposal(action, _as_info(info), sample))
        return [p for p in proposals if p.action]

    def _commit(self, picked: Proposal, action: str) -> None:
        """The subagent's state follows the executed action."""
        if self.multi_candidate:
            self.subagent.update_agent_state_from_selected_candidate(
                dict(picked.raw, action=action)
            )
        else:
            self.subagent = picked.raw

    def _checklist_items(self) -> list[str]:
        """The session's checklist, asked once (it exists after the first score)."""
        if self._checklist is None and self.session is not None:
            try:
                reply = self.session.checklist(timeout=10.0)
                self._checklist = [f"Checklist {i.index}: {i.title}" for i in reply.items]
            except Exception:  # not written yet, or unparsed: the page says so
                return ["(no checklist yet)"]
        return self._checklist or []

    def _markdown(self, rounds: Sequence[Round], ws: dict[str, Any]) -> str:
        lines = [f"## webshepherd: session `{ws['session_id']}`", ""]
        for n, rnd in enumerate(rounds, 1):
            title = f"### Round {n}" + (f" (hint: {'; '.join(rnd.hint)})" if rnd.hint else "")
            lines += [title, "", "| # | action | proposed | reward |", "|---|---|---|---|"]
            for i, (cand, count, reward) in enumerate(
                zip(rnd.candidates, rnd.counts, rnd.rewards, strict=True)
            ):
                mark = " **picked**" if i == rnd.index else ""
                shown = "unparsed" if reward is None else f"{reward:.3f}"
                action = cand.action.replace("|", "\\|")
                lines.append(f"| {i} | `{action}`{mark} | {count} | {shown} |")
            lines += ["", f"*Not judged: {rnd.reason}*"] if rnd.reason else []
            lines.append("")
        lines += ["### Checklist (the pick's label probabilities)", ""]
        probs = {item["index"]: item for item in ws["checklist"]}
        for n, text in enumerate(self._checklist_items(), 1):
            item = probs.get(n)
            shown = (
                f"yes {item['yes']:.2f}, in progress {item['in_progress']:.2f}, no {item['no']:.2f}"
                if item
                else "not judged"
            )
            lines.append(f"- {text}: {shown}")
        lines += ["", f"**Feedback:** {ws['feedback']}", ""]
        lines += [f"**Refused:** {r['text']}" for r in ws["refused"]]
        lines.append(f"**Decision:** {ws['decision']}; executed `{ws['action']}`")
        return "\n".join(lines)


def _experiment_dir() -> Path | None:
    """The experiment folder ``ExpArgs.run`` logs to (its ``experiment.log`` handler on the
    root logger, set before it makes the agent); None outside AgentLab's loop."""
    for handler in reversed(logging.getLogger().handlers):
        name = getattr(handler, "baseFilename", None)
        if isinstance(handler, logging.FileHandler) and name and name.endswith("experiment.log"):
            return Path(name).parent
    return None


def episode_result(exp_dir: Path | None) -> tuple[Outcome, str]:
    """The session's outcome and answer from AgentLab's ``summary_info.json`` in ``exp_dir``:
    success when the env terminated with cum_reward > 0, failure when it terminated with
    <= 0, unknown for an error, an episode ended before termination, or no result written."""
    path = exp_dir / "summary_info.json" if exp_dir is not None else None
    if path is None or not path.is_file():
        return "unknown", "interrupted: AgentLab wrote no result for this episode"
    try:
        summary = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return "unknown", f"AgentLab's result could not be read: {exc}"
    reward, error = summary.get("cum_reward"), summary.get("err_msg")
    if error:
        lines = str(error).strip().splitlines()
        return "unknown", f"the episode ended in an error: {' '.join(lines[:3])}"
    if summary.get("terminated"):
        won = isinstance(reward, int | float) and reward > 0
        return ("success" if won else "failure"), f"the env terminated, cum_reward {reward}"
    return "unknown", f"interrupted mid-episode: the env did not terminate (cum_reward {reward})"


def _end(client: Client, session: SyncSession, exp_dir: Path | None) -> None:
    try:
        session.end(*episode_result(exp_dir))
    except Exception:  # the daemon or the connection is gone: nothing left to end
        pass
    finally:
        client.close()


def _ranked(rnd: Round) -> list[int]:
    """The round's candidates best first: best-of-n's pick, then by reward (None last), most
    proposed, proposed first."""

    def rank(i: int) -> tuple[bool, bool, float, int, int]:
        r = rnd.rewards[i]
        return (i == rnd.index, r is not None, r if r is not None else 0.0, rnd.counts[i], -i)

    return sorted(range(len(rnd.candidates)), key=rank, reverse=True)


def _below(reward: float | None, threshold: float) -> bool:
    return reward is None or reward < threshold


def _items(result: BestOfN) -> list[dict[str, object]]:
    if not result.scored.results:
        return []
    by_index = {r.index: r for r in result.scored.results}
    picked = by_index.get(result.index)
    return [item.model_dump() for item in picked.items] if picked else []


def _proposal_for(rnd: Round, action: str) -> Proposal | None:
    key = action_key(action)
    return next((p for p in rnd.proposals if action_key(p.action) == key), None)


def _as_info(info: Any) -> AgentInfo:
    if isinstance(info, AgentInfo):
        return info
    return AgentInfo(**dict(info or {}))


def _with_rewards(info: AgentInfo, ws: dict[str, Any], latency: float, markdown: str) -> AgentInfo:
    """A copy of the pick's AgentInfo with webshepherd's figures added."""
    out = copy.copy(info)
    out.stats = dict(info.stats or {}, ws_reward=ws["reward"], ws_latency_s=latency)
    out.extra_info = dict(info.extra_info or {}, webshepherd=ws)
    page = info.markdown_page or ""
    out.markdown_page = f"{page}\n\n{markdown}" if page else markdown
    return out
