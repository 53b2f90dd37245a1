"""Training episodes of the bundled shop, labelled by the shop itself.

The scripted agent runs through a shop variant in the text browser, which renders each page
as its own tree or (``chromium=True``) as Chromium's, the tree the extension captures and the
browser demo scores (:func:`~.axtree.to_chromium_axtree`). At every page it proposes
its good action and the distractors; each candidate is tried on a copy of the browser and the
shop, and the shop's progress (:mod:`.progress`) before and after gives its checklist labels
(ground truth, never a judge's output). The agent then runs its good action, or now and then a
distractor, so that the episodes also visit wrong pages and recover from them. Each candidate
becomes one SFT row of the judge prompt the daemon serves; each episode also gives one row of
the checklist prompt with the shop's reference checklist.

Besides detours to wrong pages, the agent now and then dwells: it stays on one page for a few
steps (scrolling, clicking the page's title) before it goes on. Those steps change nothing, so
their labels stay as they were while the history grows: the judge learns that a long history,
or a run of scrolls, is not progress (a tree search otherwise follows rewards that rise with
the history alone).

An episode ends when the order's confirmation page is reached, or (``to_answer=True``) goes on
to it and to the agent's answer (``send_msg_to_user``): the task is done there, so every
candidate is labelled Yes on every item, and the episode ends with the answer.

The shop serves on an ephemeral port, which pages and URLs show. The rows give each episode's
shop an address drawn from the seeded ``rng`` instead, so the same seed gives the same rows on
every run and machine, and a judge trained on them learns that the port does not matter.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from webshepherd.daemon.demo.agent import Proposal, ShopAgent
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.progress import Progress, measure
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import ShopVariant
from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist
from webshepherd.daemon.engine.prompts import checklist_messages, format_trajectory, judge_messages
from webshepherd.daemon.offline.training.rows import sft_row
from webshepherd.daemon.offline.training.targets import checklist_target, judgement
from webshepherd.protocol.agents.environment import ActionError
from webshepherd.protocol.common import ItemLabel, Turn

#: distractors tried per page (the demo's agent proposes two)
BAD_PER_STEP = 2
#: a dwell's length (steps) at most (its chance is ``episode``'s ``dwell``)
DWELL_STEPS = 5
#: the dwell's in-place action when none of the page's distractors stays on the page
SCROLL = Proposal("Let me scroll down to see more.", "scroll(0, 400)", False)


@dataclass(frozen=True)
class Judged:
    """One candidate at one step, with the shop's labels for it."""

    step: int
    url: str
    axtree: str
    history: tuple[Turn, ...]
    proposal: Proposal
    labels: tuple[ItemLabel, ...]
    done_before: tuple[bool, ...]


def _try(browser: Browser, server: ShopServer, action: str) -> tuple[str, str] | None:
    """Run ``action`` and return the page it leads to (url, axtree), or None if it fails."""
    try:
        browser.act(action)
    except ActionError:
        return None
    obs = browser.observe()
    return obs.url, obs.axtree


def _in_place(
    browser: Browser, server: ShopServer, bad: list[Proposal], rng: random.Random
) -> Proposal:
    """A distractor that leaves the page as it is (drawn from ``bad``), else a scroll."""
    here = browser.observe()
    still = []
    for p in bad:
        saved = copy.deepcopy((browser.page, browser.values, browser.history, server.state))
        page = _try(browser, server, p.action)
        if page == (here.url, here.axtree):
            still.append(p)
        browser.page, browser.values, browser.history, server.state = saved
    return rng.choice(still) if still else SCROLL


def outcomes(
    server: ShopServer,
    browser: Browser,
    shop: ShopVariant,
    progress: Progress,
    actions: list[str],
) -> dict[str, Progress]:
    """The progress each of ``actions`` would make from the current page, each tried on a copy
    of the browser and the shop (both are left as they were)."""
    after: dict[str, Progress] = {}
    for action in actions:
        saved = copy.deepcopy((browser.page, browser.values, browser.history, server.state))
        page = _try(browser, server, action)
        after[action] = progress if page is None else measure(shop, server.state, *page, progress)
        browser.page, browser.values, browser.history, server.state = saved
    return after


def episode(
    server: ShopServer,
    shop: ShopVariant,
    rng: random.Random,
    explore: float = 0.25,
    max_steps: int = 24,
    linger: float = 0.5,
    chromium: bool = False,
    to_answer: bool = False,
    dwell: float = 0.0,
) -> Iterator[Judged]:
    """One episode in ``shop``, served by ``server``: every candidate of every step with its
    labels, until the agent answers. ``explore``: the chance that a distractor runs instead of
    the good action; ``linger``: the chance that another one follows a distractor (detours of
    several steps, so that a long history does not mean progress); ``dwell``: the chance that a
    detour stays on the page instead, for 1 to :data:`DWELL_STEPS` in-place steps (the page's
    distractors that leave it as it is, else a scroll); ``chromium``: pages as Chromium renders
    them; ``to_answer``: on past the order to the answer."""
    server.use(shop)
    browser = Browser(chromium=chromium)
    browser.goto(server.url)
    agent = ShopAgent(seed=rng.randrange(1 << 30), bad_per_step=BAD_PER_STEP, shop=shop)
    history: list[Turn] = []
    obs = browser.observe()
    progress = measure(shop, server.state, obs.url, obs.axtree, Progress())
    wandering = False
    dwelling = 0  # in-place steps left in the current dwell
    for step in range(max_steps):
        obs = browser.observe()
        if not to_answer and agent.done(obs.url):
            return
        proposals = agent.propose(obs.url, obs.axtree)
        done_before = progress.done()
        after = outcomes(server, browser, shop, progress, [p.action for p in proposals])
        for p in proposals:
            labels = after[p.action].labels(progress)
            yield Judged(step, obs.url, obs.axtree, tuple(history), p, labels, done_before)
        good = next(p for p in proposals if p.good)
        bad = [p for p in proposals if not p.good]
        if dwelling:
            dwelling -= 1
            run = _in_place(browser, server, bad, rng)
        else:
            was = wandering
            wandering = bool(bad) and rng.random() < (linger if wandering else explore)
            if dwell and wandering and not was and rng.random() < dwell:
                wandering, dwelling = False, rng.randrange(DWELL_STEPS)
                run = _in_place(browser, server, bad, rng)
            else:
                run = rng.choice(bad) if wandering else good
        if run.action.startswith("send_msg_to_user("):
            return  # the answer ends the episode
        page = _try(browser, server, run.action)
        progress = after.get(run.action, progress) if page is not None else progress
        history.append(Turn(run.thought, run.action))


def rows(
    server: ShopServer,
    shop: ShopVariant,
    rng: random.Random,
    explore: float = 0.25,
    chromium: bool = False,
    to_answer: bool = False,
    dwell: float = 0.0,
) -> Iterator[dict[str, Any]]:
    """SFT rows (sharegpt layout) of one episode in ``shop``, served by ``server``, its address
    replaced by one drawn from ``rng``; ``chromium``, ``to_answer``, ``dwell``: as
    :func:`episode`."""
    task = f"shop-{shop.number}"
    server.use(shop)
    served = server.url.rstrip("/")
    shown = f"http://127.0.0.1:{rng.randrange(1024, 65536)}"

    def at(msgs: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{**m, "content": m["content"].replace(served, shown)} for m in msgs]

    browser = Browser(chromium=chromium)
    browser.goto(server.url)
    first = browser.observe()
    titles = [it.title for it in parse_reference_checklist(shop.checklist).items]
    yield sft_row(
        "sharegpt",
        at(checklist_messages(shop.intent, first.url, first.axtree)),
        checklist_target(shop.checklist, titles),
        {"task_id": task, "step_id": 0, "label": "reference"},
    )
    for j in episode(
        server, shop, rng, explore, chromium=chromium, to_answer=to_answer, dwell=dwell
    ):
        msgs = at(
            judge_messages(
                shop.intent,
                format_trajectory(j.history),
                j.url,
                j.axtree,
                shop.checklist,
                j.proposal.thought,
                j.proposal.action,
            )
        )
        target = judgement(j.labels, j.done_before)
        meta = {"task_id": task, "step_id": j.step, "label": "good" if j.proposal.good else "bad"}
        yield sft_row("sharegpt", msgs, target, meta)
