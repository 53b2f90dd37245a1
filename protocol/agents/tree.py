"""Tree search, the third planning paradigm (planning-framework paper, §3; Koh et al. 2024).

Best-first search over states with Web-Shepherd as the value function. A node is the state
an action reached; its value is the reward the judge gave that action (checklist progress).
Expanding a node runs its action, observes the page it leads to, and scores the policy's top
``branching`` candidates there in one request: they become its children, on the frontier.
The search always expands the frontier node of highest value (values within
``tie_margin`` of the best count as equal; ties: the answer, then proposed more often, then
created first), so a branch whose continuations score lower than an unexplored sibling is left
for that sibling, and a plateau of equal progress is searched breadth first.

A finished task is recognised by the answer's tie-break. Once the task is done, the judge gives
the answer (``send_msg_to_user``) the top value, but it gives the same top value to the action
that finished the task and to such actions left on other branches (a "place the order" node
scored before). Oldest-first would expand those, each with a reset and a replay; the answer
goes first and ends the search with the task's result. An answer never overtakes a node
valued above it, so a judge that values a premature answer low is not led astray. (The
other way, a goal-value stop as the planning paper describes Koh et al., ends the search at
V = 1; here V is the reward of the action that reached a node, so it would stop at the action
that finished the task, before the answer that reports it.)

An action that leaves the page as it was (the same URL, AX tree and screenshot as where it
ran: a scroll or a click on a title in a text page) is run but not expanded, and stays a
``leaf``: its children would be its parent's candidates again, scored against a longer history
that adds nothing. A judge that values such a step a little above going elsewhere (the tiny
judge gives a wrong product page's in-place actions about 0.49 where the shop's labels say
0.25) would otherwise spend the budget going round on one page.

Going back to an earlier node resets the environment and replays the node's action prefix,
as Koh et al. do; a replay that fails or lands on another page than the recorded one marks
the node (and what hangs below it) stale. The search stops at a final answer (an executed
``send_msg_to_user`` or ``report_infeasible``), when the frontier is empty, or when a budget
runs out: expansions, depth, model calls (candidate judgements: candidates times reward
samples) or wall time.

Every node goes into the session as it is scored and whenever it changes (``tree.node``,
docs/protocol-additions.md): the daemon records each update and sends it to monitors, and
the search ends by reporting the path it returns, root first.
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import Field
from webshepherd.protocol.actions import parse_action
from webshepherd.protocol.agents.best_of_n import group_proposals
from webshepherd.protocol.agents.environment import ActionError, ActionResult, PageState
from webshepherd.protocol.agents.policy import PolicyContext
from webshepherd.protocol.agents.refusal import refusal_text
from webshepherd.protocol.common import (
    MAX_NODE_ERROR_CHARS,
    Candidate,
    DecisionInfo,
    Screenshot,
    TreeNodeEventKind,
    TreeNodeFields,
    Turn,
)

if TYPE_CHECKING:
    from webshepherd.protocol.agents.environment import Environment
    from webshepherd.protocol.agents.policy import AsyncPolicy
    from webshepherd.protocol.client.session import SessionHandle


class SearchOptions(Protocol):
    """What the search reads of the loop's ``EpisodeOptions``."""

    @property
    def samples(self) -> int: ...
    @property
    def reward_samples(self) -> int | None: ...
    @property
    def branching(self) -> int: ...
    @property
    def max_expansions(self) -> int: ...
    @property
    def max_depth(self) -> int: ...
    @property
    def max_model_calls(self) -> int | None: ...
    @property
    def max_seconds(self) -> float | None: ...
    @property
    def tie_margin(self) -> float: ...


class SearchEpisode(Protocol):
    """What the search needs of the loop's episode (``loop._Episode``): the session, the
    environment, the policy and its prompt's facts, the options, and where the latest
    action's error goes."""

    handle: SessionHandle
    env: Environment
    policy: AsyncPolicy
    intent: str
    plan: tuple[str, ...] | None
    last_error: str | None

    @property
    def opts(self) -> SearchOptions: ...


SearchStop = Literal["answer", "frontier", "expansions", "model_calls", "wall_time"]


class ResetUnsupported(ActionError):
    """The environment cannot return to its start state (no ``reset``)."""


class SearchNode(TreeNodeFields):
    """One explored or scored state of the search tree: the wire's tree node as the search
    last reported it (``step``: the step it was scored at; ``expanded_at``: the step whose
    candidates are its children; ``error`` in full), and what only the search keeps."""

    guarded: bool = Field(
        default=False, description="It meets a guard rule: a person approves it before it runs."
    )
    approved: bool = Field(
        default=False, description="A person approved it (a guarded node runs only then)."
    )

    @property
    def value(self) -> float:
        return self.reward if self.reward is not None else -1.0


@dataclass
class SearchTree:
    """All nodes, the path that ended the search, and why it stopped."""

    nodes: list[SearchNode] = field(default_factory=list)
    path: list[int] = field(default_factory=list)  # node ids, root first: the best path found
    stop: SearchStop | None = None
    expansions: int = 0
    model_calls: int = 0
    resets: int = 0
    model_ms: float = 0.0  # the daemon's model time for the search's score requests

    def node(self, node_id: int) -> SearchNode:
        return self.nodes[node_id]

    def path_to(self, node_id: int) -> list[int]:
        """Node ids from the root to ``node_id``."""
        out = [node_id]
        while (parent := self.nodes[out[-1]].parent) is not None:
            out.append(parent)
        return out[::-1]

    def children(self, node_id: int) -> list[SearchNode]:
        return [n for n in self.nodes if n.parent == node_id]

    def frontier(self) -> list[SearchNode]:
        return [n for n in self.nodes if n.status == "frontier"]

    def best_path(self) -> list[int]:
        """The path to the deepest-valued node: the executed node of highest value (ties:
        deeper, then earlier)."""
        reached = [n for n in self.nodes if n.executed and n.status != "stale"]
        if not reached:
            return [0]
        best = max(reached, key=lambda n: (n.value, n.depth, -n.node))
        return self.path_to(best.node)


class TreeSearch:
    """Runs best-first search for one episode (see the module docstring)."""

    def __init__(self, episode: SearchEpisode) -> None:
        self.ep = episode
        self.opts = episode.opts
        self.tree = SearchTree()
        self.at: list[int] = [0]  # the node path the environment is at now
        self.trying: int | None = 0  # the node being tried (the root: its expansion)
        self.started = time.monotonic()
        self.pages: dict[int, str] = {}  # node id -> digest of the page it was expanded at

    # -- budgets ----------------------------------------------------------
    def _samples(self) -> int:
        return self.opts.reward_samples or 1

    def _out_of_budget(self, next_cost: int = 0) -> SearchStop | None:
        o, t = self.opts, self.tree
        if t.expansions >= o.max_expansions:
            return "expansions"
        if o.max_model_calls is not None and t.model_calls + next_cost > o.max_model_calls:
            return "model_calls"
        if o.max_seconds is not None and time.monotonic() - self.started >= o.max_seconds:
            return "wall_time"
        return None

    # -- the search --------------------------------------------------------
    async def run(self) -> ActionResult | None:
        """Search until a final answer (its result) or a stop; the tree is in ``self.tree``."""
        root = SearchNode(node=0, depth=0, status="frontier", executed=True, event="expanded")
        self.tree.nodes.append(root)
        state = await self.ep.env.observe()
        root.url = state.url
        await self._expand(root, state)
        outcome = await self._search()
        for nid in self.tree.path:
            await self._report(self.tree.node(nid), "path")
        return outcome

    async def _search(self) -> ActionResult | None:
        while True:
            frontier = self.tree.frontier()
            if not frontier:
                self.tree.stop = "frontier"
                break
            stop = self._out_of_budget(self._samples() * self.opts.branching)
            if stop is not None:
                self.tree.stop = stop
                break
            best = self._pick(frontier)
            outcome = await self._try(best)
            if outcome is not None and outcome.done:
                self.tree.stop = "answer"
                self.tree.path = self.tree.path_to(best.node)
                return outcome
        self.tree.path = self.tree.best_path()
        return None

    def _pick(self, frontier: list[SearchNode]) -> SearchNode:
        """The frontier node to expand: the highest value, values within ``tie_margin`` of it
        counting as equal; among equals the answer (``send_msg_to_user``), then the one
        proposed more often, then the first scored (so a plateau is searched breadth first,
        not down the branch with the luckiest noise)."""
        top = max(n.value for n in frontier)
        tied = [n for n in frontier if n.value >= top - self.opts.tie_margin]
        return max(tied, key=lambda n: (_is_answer(n.action), n.count, -n.node))

    async def _try(self, node: SearchNode) -> ActionResult | None:
        """Return to ``node``'s parent, run its action, and expand it (unless it ended the
        episode, failed, left the page as it was, or is as deep as the search goes)."""
        assert node.parent is not None and node.action is not None
        self.trying = node.node
        if not await self._goto(node.parent):
            return None
        ep = self.ep
        if node.guarded and not node.approved and not await self._ask(node):
            return None
        await ep.handle.act(node.action, node.thought or None, node.step, "agent")
        node.executed = True
        try:
            outcome = await ep.env.execute(node.action)
        except ActionError as exc:
            node.status, node.error = "failed", exc.message
            ep.last_error = exc.message
            self.at = self.tree.path_to(node.node)
            await self._report(node, "executed")
            return None
        ep.last_error = None
        self.at = self.tree.path_to(node.node)
        if outcome.done:
            node.status = "done"
            await self._report(node, "executed")
            return outcome
        state = await ep.env.observe()
        node.url = state.url
        unchanged = self.pages.get(node.parent) == _page_digest(state)
        if node.depth >= self.opts.max_depth or unchanged:
            node.status = "leaf"
            await self._report(node, "expanded")
            return outcome
        await self._report(node, "executed")
        await self._expand(node, state)
        return outcome

    async def _ask(self, node: SearchNode) -> bool:
        """A guarded node, at its parent's page, scored alone: the guards hold it for a
        person (or the daemon refuses it, nobody being paired). False, the node failed and
        reported, unless a person approved it."""
        assert node.action is not None
        ep = self.ep
        state = await ep.env.observe()
        await ep.handle.observe(state.url, state.axtree, _shot(state.screenshot), state.elements)
        scored = await ep.handle.score(
            [Candidate(thought=node.thought or "", action=node.action)],
            samples=self.opts.reward_samples,
            approval="never",
        )
        self.tree.model_calls += self._samples()
        self.tree.model_ms += scored.timing.model_ms
        return await self._decided(node, scored.decision)

    async def _decided(self, node: SearchNode, decision: DecisionInfo) -> bool:
        """Apply a person's (or the daemon's) decision on a guarded node: only an approval
        lets it run; a rejection, a timeout or an edit (a node runs its own action only)
        leaves it failed, with why."""
        if decision.status == "approved":
            node.approved = True
            return True
        if decision.status == "edited":  # a node runs its own action only
            who = f" by {decision.by}" if decision.by else ""
            note = f": {decision.note}" if decision.note else ""
            node.status, node.error = "failed", f"not run, edited{who}{note}"
        else:  # who refused (a person only when one decided), why, and the way out
            node.status, node.error = "failed", f"not run: {refusal_text(decision)}"
        await self._report(node, "scored")
        return False

    async def _expand(self, node: SearchNode, state: PageState) -> None:
        """Score the policy's top candidates at ``node``'s page: its children."""
        ep = self.ep
        node.status = "expanded"
        self.pages[node.node] = _page_digest(state)
        history = self._history(node.node)
        observed = await ep.handle.observe(
            state.url, state.axtree, _shot(state.screenshot), state.elements
        )
        node.expanded_at = observed.step
        context = PolicyContext(ep.intent, history, ep.plan, self.opts.samples)
        proposals = await ep.policy.propose(state, context)
        groups = group_proposals(proposals, self.opts.branching)
        if not groups:
            await self._report(node, "expanded")
            return
        scored = await ep.handle.score(
            [g.candidate for g in groups], samples=self.opts.reward_samples, approval="never"
        )
        # the step the candidates were scored at (another client, e.g. the extension
        # following the tab, may have observed since)
        node.expanded_at = scored.step
        await self._report(node, "expanded")
        self.tree.expansions += 1
        self.tree.model_calls += len(groups) * self._samples()
        self.tree.model_ms += scored.timing.model_ms
        rewards = {r.index: r.reward for r in scored.results}
        guarded = set(scored.guarded or ())
        decision = scored.decision
        for k, g in enumerate(groups):
            child = SearchNode(
                node=len(self.tree.nodes),
                parent=node.node,
                depth=node.depth + 1,
                thought=g.candidate.thought,
                action=g.candidate.action,
                reward=rewards.get(k),
                count=g.count,
                status="frontier",
                step=scored.step,
                event="scored",
                guarded=k in guarded,
            )
            self.tree.nodes.append(child)
            # the guards held the best child at this scoring: its decision is already made
            held = child.guarded and decision.index == k and decision.status != "auto"
            if held and not await self._decided(child, decision):
                continue
            await self._report(child, "scored")

    async def _report(self, node: SearchNode, event: TreeNodeEventKind) -> None:
        """The node as it is now, to the session (``tree.node``)."""
        node.event, node.trying = event, self.trying
        error = node.error[:MAX_NODE_ERROR_CHARS] if node.error else None
        await self.ep.handle.tree_node(
            node.model_copy(update={"thought": node.thought or None, "error": error})
        )

    def _history(self, node_id: int) -> tuple[Turn, ...]:
        """The trajectory of actions that reached ``node_id``."""
        turns = []
        for nid in self.tree.path_to(node_id)[1:]:
            n = self.tree.node(nid)
            turns.append(Turn(n.thought or "", n.action or "", n.error))
        return tuple(turns)

    async def _goto(self, node_id: int) -> bool:
        """Bring the environment to ``node_id`` (reset and replay when it is elsewhere);
        False when the replay diverged (the node and its subtree are then stale)."""
        target = self.tree.path_to(node_id)
        if self.at == target:
            return True
        env = self.ep.env
        reset = getattr(env, "reset", None)
        if reset is None:
            raise ResetUnsupported(
                "tree search needs an environment with reset() to return to an earlier state"
            )
        await reset()
        self.tree.resets += 1
        self.at = [0]
        for nid in target[1:]:
            n = self.tree.node(nid)
            assert n.action is not None
            try:
                await env.execute(n.action)
            except ActionError as exc:
                await self._stale(nid, f"replay failed: {exc.message}")
                return False
            n.replays += 1
            self.at.append(nid)
            url = (await env.observe()).url
            if url != n.url:
                await self._stale(nid, f"replay diverged: {url} instead of {n.url}")
                return False
            await self._report(n, "replayed")
        return True

    async def _stale(self, node_id: int, why: str) -> None:
        """Mark ``node_id`` and every node below it stale."""
        todo = [node_id]
        while todo:
            nid = todo.pop()
            n = self.tree.node(nid)
            n.status, n.error = "stale", n.error or why
            await self._report(n, "stale")
            todo += [c.node for c in self.tree.children(nid)]


def _is_answer(action: str | None) -> bool:
    """Whether ``action`` is the agent's answer to the user (``send_msg_to_user``)."""
    if action is None:
        return False
    try:
        return parse_action(action).name == "send_msg_to_user"
    except ActionError:
        return False


def _page_digest(state: PageState) -> str:
    """What a page shows, as one digest: its URL, AX tree and screenshot."""
    h = hashlib.sha256()
    for part in (state.url.encode(), state.axtree.encode(), state.screenshot or b""):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()


def _shot(png: bytes | None) -> Screenshot | None:
    return Screenshot(mime="image/png", data=base64.b64encode(png).decode()) if png else None
