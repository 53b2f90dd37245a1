"""browser-use: live process rewards for a browser-use ``Agent`` through its own hooks.

```python
agent = Agent(task=..., llm=llm, browser_session=BrowserSession(...))
handle = await attach(agent, mode="refine", threshold=0.5)
history = await agent.run(on_step_end=handle.on_step_end)
```

Hooks used (the user's own are chained, not replaced): ``register_new_step_callback`` (after
the model answers, before the actions run: observe, score, maybe replace the action),
``on_step_end`` (passed to ``agent.run``; the reward goes into the step's first
``ActionResult.metadata["webshepherd"]``) and ``register_done_callback`` (ends the session
with ``history.is_successful()`` and the final result). ``agent.run`` itself is wrapped so
that the session ends on every way the run ends: done (as above), ``max_steps`` reached, an
error, Ctrl-C or a cancelled task (outcome ``unknown``, the answer saying how it ended).

The daemon: the client's ``url`` (else ``$WEBSHEPHERD_URL``) and token (else
``$WEBSHEPHERD_TOKEN`` or the token store), as :class:`~webshepherd.protocol.client.AsyncClient`
resolves them.

Observation: BrowserGym's own capture of the agent's page (playwright attached to the same
Chromium over CDP: BrowserGym marks elements with ``bid``, reads
``Accessibility.getFullAXTree`` per frame) and :func:`.browsergym.observation_text`: the bytes
the extension sends. browser-use's element ``index`` maps to the bid of the same DOM node
(its ``backend_node_id``). Only the first action of a step is scored (the page changes after
it). Mapping: ``click(index)`` → ``click('bid')``, ``input`` → ``fill('bid', text)``,
``navigate`` → ``goto(url)`` (``new_tab`` → ``new_tab()`` then ``goto``), ``go_back`` →
``go_back()``, ``scroll`` → ``scroll(0, ±pages × 600)``, ``select_dropdown`` →
``select_option('bid', text)``, ``send_keys`` → ``keyboard_press(keys)``, ``done`` →
``send_msg_to_user(text)``. Not mapped (scored as ``noop()`` with the original in the
thought): coordinate clicks, ``search``, tabs, files, ``extract``, ``evaluate``, ``wait``.

``overlay=True``: when the agent's Chromium has the extension loaded, paired and its page
hook turned on (``pageHook`` in its settings: the launcher sets it, or the options page), the
page asks it (the page hook's ``attach``, with a key the daemon gives this client for its
session: ``hook.grant``) to follow the session, so its overlay shows each step's candidates,
rewards and checklist; the extension then also sends its own observation of the page. A
session stays with the origin it was attached on: when the agent's page moves to another
origin, the next step attaches there again with the same key. ``handle.overlay_reply`` is the
latest answer (None: no extension answered within 5 s).

``checklist=`` is a reference checklist (``"Checklist 1: ..."`` lines); without it the model
writes one from the task.

Modes: ``observe`` records and scores; ``gate`` asks the daemon's approval policy
(``approval="auto"``): a low reward waits for a person inside browser-use's
``step_timeout`` (the score request's timeout is the step timeout less 5 s; at the limit
browser-use cancels the step, records its timeout error, and no action runs); a refused
action is replaced by ``webshepherd_feedback``, which says who refused it (the person, the
guard, the mode or the daemon), why and the way out; ``refine`` replaces an action whose
reward is below ``threshold`` (default 0.5) by ``webshepherd_feedback``, a registered action
whose result (the judge's feedback) goes into the agent's memory: the paper's refinement. An
unparsed reward (None) counts as below the threshold, as in the daemon's approval policy. A
judge that gave no judgement at all (no parseable checklist, a model error) is a result:
reward None, ``StepReward.reason`` says why, and the agent's action runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from webshepherd.integrations.browsergym import (
    JUDGING_ERRORS,
    judging_failure,
    no_reward_reason,
    observation_text,
)
from webshepherd.protocol.actions import from_browser_use
from webshepherd.protocol.agents.refusal import refusal_text, refused
from webshepherd.protocol.client import AsyncClient, SessionHandle
from webshepherd.protocol.commits import url_origin
from webshepherd.protocol.common import Candidate, Outcome

Mode = Literal["observe", "gate", "refine"]
OVERLAY_TIMEOUT_MS = 5000
#: The extension's page hook (extension/README.md): ``attach`` makes the tab follow a session.
_HOOK_ATTACH = """([sessionId, key, timeout]) => new Promise((resolve) => {
  const id = 'webshepherd-attach-' + Math.random().toString(36).slice(2);
  const timer = setTimeout(() => { removeEventListener('message', on); resolve(null); }, timeout);
  function on(ev) {
    const d = ev.data;
    if (d && d.channel === 'webshepherd' && d.dir === 'reply' && d.id === id) {
      removeEventListener('message', on); clearTimeout(timer); resolve(d);
    }
  }
  addEventListener('message', on);
  const request = {channel: 'webshepherd', dir: 'request', id, type: 'attach'};
  postMessage({...request, session_id: sessionId, key}, '*');
})"""
FEEDBACK_ACTION = "webshepherd_feedback"


class FeedbackParams(BaseModel):
    feedback: str


@dataclass
class StepReward:
    """What webshepherd said about one step's first action."""

    step: int
    action: str  # the BrowserGym form that was scored
    reward: float | None
    feedback: str
    decision: str
    replaced: bool  # the agent's actions were replaced by webshepherd_feedback
    refusal: str | None = None  # who refused it, why, and the way out
    reason: str | None = None  # why the reward is None (the judge gave no judgement)


class PageCapture:
    """BrowserGym's capture of the agent's Chromium, through playwright over CDP, on one thread
    (playwright's sync API is bound to the thread that started it)."""

    def __init__(self, cdp_url: str) -> None:
        self.cdp_url = cdp_url
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webshepherd-capture")
        self._pw: Any = None
        self._browser: Any = None

    async def capture(self, url: str, backend_ids: dict[int, int]) -> tuple[str, dict[int, str]]:
        """The page's observation text and browser-use index → bid for ``backend_ids``."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._capture, url, backend_ids)

    def _capture(self, url: str, backend_ids: dict[int, int]) -> tuple[str, dict[int, str]]:
        from browsergym.core.observation import (
            _post_extract,
            _pre_extract,
            extract_merged_axtree,
        )

        page = self._page(url)
        _pre_extract(page)
        try:
            axtree = extract_merged_axtree(page)
        finally:
            _post_extract(page)
        cdp = page.context.new_cdp_session(page)
        bids: dict[int, str] = {}
        try:
            for index, backend in backend_ids.items():
                try:
                    node = cdp.send("DOM.resolveNode", {"backendNodeId": backend})
                    got = cdp.send(
                        "Runtime.callFunctionOn",
                        {
                            "objectId": node["object"]["objectId"],
                            "functionDeclaration": "function() { return this.getAttribute && "
                            "this.getAttribute('bid'); }",
                            "returnByValue": True,
                        },
                    )
                except Exception:  # a node gone since browser-use's snapshot
                    continue
                if got["result"].get("value"):
                    bids[index] = got["result"]["value"]
        finally:
            cdp.detach()
        return observation_text({"axtree_object": axtree}), bids

    def _page(self, url: str) -> Any:
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            self._pw = sync_playwright().start()
            self._browser = self._pw.chromium.connect_over_cdp(self.cdp_url)
        pages = [p for c in self._browser.contexts for p in c.pages]
        for page in pages:
            if page.url == url:
                return page
        if not pages:
            raise RuntimeError("the agent's browser has no page")
        return pages[-1]

    async def attach_overlay(self, url: str, session_id: str, key: str) -> dict[str, Any] | None:
        """Asks the extension in the agent's page (its page hook, with the daemon's ``key``)
        to follow ``session_id``; None when no extension answers."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._attach_overlay, url, session_id, key)

    def _attach_overlay(self, url: str, session_id: str, key: str) -> dict[str, Any] | None:
        reply = self._page(url).evaluate(_HOOK_ATTACH, [session_id, key, OVERLAY_TIMEOUT_MS])
        return reply if isinstance(reply, dict) else None

    async def close(self) -> None:
        def stop() -> None:
            if self._pw is not None:
                self._pw.stop()  # leaves the agent's browser running: connect_over_cdp

        await asyncio.get_running_loop().run_in_executor(self._pool, stop)
        self._pool.shutdown(wait=False)


@dataclass
class Handle:
    """An attached agent's webshepherd session; ``on_step_end`` goes to ``agent.run``."""

    agent: Any
    client: AsyncClient
    mode: Mode
    threshold: float
    own_client: bool
    checklist: str | None = None
    overlay: bool = False
    overlay_reply: dict[str, Any] | None = None  # the extension's latest answer to ``attach``
    overlay_key: str | None = None  # the page hook's key for this session (from the daemon)
    overlay_origin: str | None = None  # the origin the overlay was last attached on
    user_step_end: Callable[..., Any] | None = None
    session: SessionHandle | None = None
    session_id: str | None = None  # kept after the session ends
    rewards: list[StepReward] = field(default_factory=list)
    capture: PageCapture | None = None
    _pending: StepReward | None = None

    async def on_new_step(self, state: Any, output: Any, n_steps: int) -> None:
        if not output.action:
            return
        first = output.action[0].model_dump(exclude_unset=True)
        (name, params), *_ = first.items() or [("noop", {})]
        params = params or {}
        selector = getattr(getattr(state, "dom_state", None), "selector_map", {}) or {}
        wanted = {}
        if isinstance(params.get("index"), int) and params["index"] in selector:
            wanted[params["index"]] = selector[params["index"]].backend_node_id
        if self.capture is None:
            self.capture = PageCapture(self.agent.browser_session.cdp_url)
        axtree, bids = await self.capture.capture(state.url, wanted)
        if self.session is None:
            await self._ensure_connected()
            self.session = await self.client.start_session(
                self.agent.task,
                start_url=state.url,
                checklist=self.checklist,
                observation={"url": state.url, "axtree": axtree},
                agent="browser-use",
            )
            self.session_id = self.session.session_id
        else:
            await self.session.observe(state.url, axtree)
        if self.overlay:
            await self._follow_in_page(state.url)
        action = from_browser_use(name, params, bids)
        thought = " ".join(
            str(x)
            for x in (getattr(output, "thinking", None), getattr(output, "next_goal", None))
            if x
        )
        if action is None:
            thought, action = (
                f"{thought} (browser-use action {first} has no BrowserGym form)",
                "noop()",
            )
        approval: Literal["auto", "never"] = "auto" if self.mode == "gate" else "never"
        timeout = max(1.0, float(self.agent.settings.step_timeout) - 5.0)
        try:
            scored = await self.session.score(
                [Candidate(thought=thought, action=action)], approval=approval, timeout=timeout
            )
        except JUDGING_ERRORS as exc:  # no judgement: a result, and the agent's action runs
            await self.session.act(action, thought or None)
            why = judging_failure(exc)
            self._pending = StepReward(n_steps, action, None, "", "auto", False, None, why)
            self.rewards.append(self._pending)
            return
        result = scored.results[0] if scored.results else None
        reward = result.reward if result else None
        feedback = result.feedback if result else ""
        decision = scored.decision
        rejected = refused(decision) and decision.action is None
        low = self.mode == "refine" and (reward is None or reward < self.threshold)
        replaced = rejected or low
        refusal = refusal_text(decision) if rejected else None
        if replaced:
            why = refusal if refusal is not None else f"reward {reward}"
            text = f"webshepherd held back {action} ({why}). Judge's feedback: {feedback}"
            output.action = [self._feedback_action(text)]
        else:
            await self.session.act(action, thought or None)
        unparsed = no_reward_reason([result]) if result and reward is None else None
        self._pending = StepReward(
            n_steps, action, reward, feedback, decision.status, replaced, refusal, unparsed
        )
        self.rewards.append(self._pending)

    async def _follow_in_page(self, url: str) -> None:
        """Attach the extension's overlay on the page's origin (again after the agent moved
        to another origin: the extension hands a session to no other origin by itself)."""
        origin = url_origin(url)  # None on an opaque page (about:blank): no overlay there
        if self.capture is None or self.session_id is None or origin == self.overlay_origin:
            return
        self.overlay_origin = origin  # one try per origin (no extension: no 5 s wait per step)
        for fresh in (self.overlay_key is None, True):
            if fresh:  # the first, or the old key expired unredeemed (a new tab after 10 min)
                self.overlay_key = await self.client.hook_key(self.session_id)
            assert self.overlay_key is not None
            self.overlay_reply = await self.capture.attach_overlay(
                url, self.session_id, self.overlay_key
            )
            if (self.overlay_reply or {}).get("code") != "unauthorized":
                return

    def _feedback_action(self, text: str) -> Any:
        model = self.agent.tools.registry.create_action_model(include_actions=[FEEDBACK_ACTION])
        return model.model_validate({FEEDBACK_ACTION: {"feedback": text}})

    async def on_step_end(self, agent: Any) -> None:
        if self._pending is not None and agent.history.history:
            results = agent.history.history[-1].result
            if results:
                meta = dict(results[0].metadata or {})
                meta["webshepherd"] = self._pending.__dict__.copy()
                results[0].metadata = meta
            self._pending = None
        if self.user_step_end is not None:
            await self.user_step_end(agent)

    async def on_done(self, history: Any) -> None:
        if self.session is not None:
            success = history.is_successful()
            outcome: Outcome = (
                "unknown" if success is None else ("success" if success else "failure")
            )
            await self.session.end(outcome, history.final_result())
            self.session = None
        await self.close()

    async def on_run_end(self, history: Any = None, error: BaseException | None = None) -> None:
        """The run ended without ``done`` (max_steps, an error, Ctrl-C, a cancelled task):
        the session ends ``unknown`` with how it ended, and the connection closes."""
        if self.session is not None:
            session, self.session = self.session, None
            if error is not None:
                how = f"the run ended with {type(error).__name__}: {error}".rstrip(": ")
            else:
                errors = history.errors() if history is not None else []
                last = next((e for e in reversed(errors or []) if e), None)
                how = f"the run ended without done: {last or 'no final result'}"
            # the daemon or the connection gone: nothing left to end
            with contextlib.suppress(Exception):
                await session.end("unknown", how.splitlines()[0][:2000])
        await self.close()

    async def close(self) -> None:
        if self.capture is not None:
            capture, self.capture = self.capture, None
            await capture.close()
        if self.own_client:
            await self.client.close()

    async def _ensure_connected(self) -> None:
        if not self.client.connected:
            await self.client.connect()


async def attach(
    agent: Any,
    *,
    client: AsyncClient | None = None,
    mode: Mode = "observe",
    threshold: float | None = None,
    checklist: str | None = None,
    on_step_end: Callable[..., Any] | None = None,
    overlay: bool = False,
) -> Handle:
    """Score ``agent``'s steps with webshepherd; pass ``handle.on_step_end`` to ``agent.run``."""
    if mode not in ("observe", "gate", "refine"):
        raise ValueError(f"mode must be observe, gate or refine, not {mode!r}")
    handle = Handle(
        agent=agent,
        client=client or AsyncClient(),
        mode=mode,
        threshold=0.5 if threshold is None else threshold,
        own_client=client is None,
        checklist=checklist,
        overlay=overlay,
        user_step_end=on_step_end,
    )
    registry = agent.tools.registry
    if FEEDBACK_ACTION not in registry.registry.actions:

        @registry.action(
            "webshepherd's judge held back your action: read its feedback and act again",
            param_model=FeedbackParams,
        )
        async def webshepherd_feedback(params: FeedbackParams) -> Any:
            from browser_use.agent.views import ActionResult

            return ActionResult(extracted_content=params.feedback, long_term_memory=params.feedback)

        del webshepherd_feedback

    handle.user_new_step = agent.register_new_step_callback  # type: ignore[attr-defined]
    user_done = agent.register_done_callback

    async def new_step(state: Any, output: Any, n_steps: int) -> None:
        await _call(handle.user_new_step, state, output, n_steps)  # type: ignore[attr-defined]
        await handle.on_new_step(state, output, n_steps)

    async def done(history: Any) -> None:
        await handle.on_done(history)
        await _call(user_done, history)

    agent.register_new_step_callback = new_step
    agent.register_done_callback = done
    user_run = agent.run

    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            history = await user_run(*args, **kwargs)
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # cancelled (Ctrl-C, a caller's timeout) and the run swallowed it (Python
                # 3.11's wait_for can, racing a result): the task still stops, as asked
                raise asyncio.CancelledError
        except BaseException as exc:  # an error, Ctrl-C, a cancelled task: ended all the same
            await asyncio.shield(handle.on_run_end(error=exc))
            raise
        await handle.on_run_end(history)  # after done: nothing left to end
        return history

    agent.run = run
    return handle


async def _call(callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is None:
        return
    result = callback(*args)
    if inspect.isawaitable(result):
        await result
