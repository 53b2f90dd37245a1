"""Preference pairs among a search tree's siblings (``paradigm="tree"``, issue 28).

A tree search expands a node by scoring the policy's top candidates at its page in one step:
those candidates are siblings, and the search may run several of them (it backtracks). What
the exports need from the recorded tree (``Timeline.tree``), per expanded step:

- the trajectory that led to the step: the actions of the path from the root to the expanded
  node, not every action recorded before it (those include abandoned branches);
- the sibling the search kept: on the path it returned (trusted as chosen only in a session
  that ended in success, as for any session: truth.py);
- which siblings ground truth orders: each candidate's labels (``label``, a person's beat the
  environment's, which beat a replay's and a rollout's; the latest of a source wins) as item
  levels (No 0, In Progress 1, Yes 2). A sibling is better than another when it is at least
  as far on every item and further on one.

The judge's rewards never decide a pair (docs/training.md: training targets never come from
the judge): truth orders labelled candidates, at a tree search's step or any other
(truth.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from webshepherd.daemon.recorder.timeline import Step, Timeline
from webshepherd.protocol.common import Turn

LEVELS = {"no": 0, "in_progress": 1, "yes": 2}
#: the labels' sources, in rising trust (replay and rollout: recorded by a later issue)
LABEL_TRUST = ("rollout", "replay", "environment", "person")


@dataclass
class TreeStep:
    """One expansion of a search tree, as a recorded step sees it."""

    node: int  # the node expanded at this step (its children are the step's candidates)
    history: list[Turn]  # the path's actions from the start page to that node
    children: dict[str, int] = field(default_factory=dict)  # candidate action -> child node
    kept: str | None = None  # the child on the path the search returned, if any


def labelled(st: Step, actions: Iterable[str], n_items: int) -> dict[str, tuple[list[str], str]]:
    """Each of ``actions`` scored at ``st`` with ground truth: its item labels and their source
    (the more trusted source wins, :data:`LABEL_TRUST`; the later of one source wins)."""
    wanted = set(actions)
    truth: dict[str, tuple[list[str], str]] = {}
    for source in LABEL_TRUST:
        for lab in st.labels:
            if lab.source == source and lab.action in wanted and len(lab.items) == n_items:
                truth[lab.action] = (list(lab.items), source)
    return truth


def levels(labels: Sequence[str]) -> tuple[int, ...]:
    return tuple(LEVELS.get(x, 0) for x in labels)


def better(a: Sequence[str], b: Sequence[str]) -> bool:
    """Truth says ``a`` is better than ``b``: as far on every item, further on one."""
    la, lb = levels(a), levels(b)
    return all(x >= y for x, y in zip(la, lb, strict=True)) and la != lb


def truth_chosen(truth: dict[str, tuple[list[str], str]], prefer: str | None) -> str | None:
    """The labelled sibling truth puts first: one that no labelled sibling beats and that
    beats at least one; ``prefer`` (the kept sibling) when it qualifies, else the furthest
    (highest level sum; ties: the first labelled)."""
    top = [
        a
        for a, (lab, _) in truth.items()
        if not any(better(o, lab) for o, _ in truth.values())
        and any(better(lab, o) for o, _ in truth.values())
    ]
    if not top:
        return None
    if prefer in top:
        return prefer
    return max(top, key=lambda a: sum(levels(truth[a][0])))


def beaten(truth: dict[str, tuple[list[str], str]], chosen: str) -> list[tuple[str, str]]:
    """The labelled siblings truth puts below ``chosen``, furthest behind first, each with the
    truth's source (the more trusted of the two labels)."""
    if chosen not in truth:
        return []
    top, top_src = truth[chosen]
    out = [(a, lab, src) for a, (lab, src) in truth.items() if a != chosen and better(top, lab)]
    out.sort(key=lambda x: sum(levels(x[1])))
    rank = {s: k for k, s in enumerate(LABEL_TRUST)}
    return [(a, max(src, top_src, key=rank.__getitem__)) for a, _, src in out]


def tree_steps(tl: Timeline) -> dict[int, TreeStep]:
    """The recorded steps that expanded a node of the session's search tree (none when it
    has no tree), each with its path, children and kept child."""
    tree = tl.tree
    if tree is None:
        return {}
    nodes = {n.node: n for n in tree.nodes}
    path = list(tree.path)
    if not path:  # no path said: the one to the node that ended the episode, if any
        done = next((n for n in tree.nodes if n.status == "done"), None)
        while done is not None:
            path.insert(0, done.node)
            done = nodes.get(done.parent) if done.parent is not None else None
    on_path = set(path)
    out: dict[int, TreeStep] = {}
    for n in tree.nodes:
        if n.expanded_at is None:
            continue
        turns: list[Turn] = []
        up: int | None = n.node
        while up is not None and up in nodes:
            a = nodes[up]
            if a.action is not None:
                turns.append(Turn(a.thought or "", a.action))
            up = a.parent
        kids = [c for c in tree.nodes if c.parent == n.node and c.action is not None]
        kept = next((c.action for c in kids if c.node in on_path), None)
        out[n.expanded_at] = TreeStep(
            n.node, turns[::-1], {c.action: c.node for c in kids if c.action}, kept
        )
    return out


def path_done(tl: Timeline, at: TreeStep, n_items: int) -> list[bool]:
    """The items known done on reaching ``at``'s node: the Yes items of the nearest node on
    its path whose action has ground truth (at the step it was scored at); none known: none."""
    if tl.tree is None:
        return [False] * n_items
    nodes = {n.node: n for n in tl.tree.nodes}
    steps = {st.step: st for st in tl.steps}
    up = nodes.get(at.node)
    while up is not None and up.action is not None:
        st = steps.get(up.step) if up.step is not None else None
        got = labelled(st, [up.action], n_items).get(up.action) if st is not None else None
        if got is not None:
            return [x == "yes" for x in got[0]]
        up = nodes.get(up.parent) if up.parent is not None else None
    return [False] * n_items
