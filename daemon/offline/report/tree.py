"""A tree search's nodes in the report: a nested list, each node under its parent, with its
reward, action, thought and what happened to it; the returned path marked. Node texts came
from an agent: every one is redacted and escaped."""

from __future__ import annotations

from webshepherd.daemon.recorder.timeline import RecordedTree
from webshepherd.daemon.redact import Redactor
from webshepherd.protocol.common import TreeNodeFields
from webshepherd.protocol.steps import step_label, step_number
from webshepherd.protocol.terminal_text import html_safe

CSS = """
ul.tree, ul.tree ul { list-style: none; margin: 0; padding-left: 22px;
  border-left: 1px dotted #c9cdd3; }
ul.tree { padding-left: 4px; border-left: none; }
ul.tree li { margin: 4px 0; }
ul.tree li.path > .node { background: #eaf5ee; border-radius: 4px; }
ul.tree .node { padding: 2px 4px; }
ul.tree .mark { display: inline-block; width: 1.2em; text-align: center; }
ul.tree .thought { font-size: 0.82rem; color: #5c6470; margin-left: 1.4em;
  overflow-wrap: anywhere; }
.tag.path { background: #2e9e5b; } .tag.replayed { background: #8a5cd1; }
.tag.stale, .tag.failed { background: #b5361c; } .tag.frontier { background: #8a8f98; }
"""
MARK = {"frontier": "○", "expanded": "●", "leaf": "·", "done": "✓", "failed": "✗", "stale": "⌀"}


def _e(text: object) -> str:
    return html_safe(text)


def tree_section(tree: RecordedTree, red: Redactor) -> str:
    """The ``search-tree`` section: a summary line and every node, depth first."""
    kids: dict[int | None, list[TreeNodeFields]] = {}
    for n in tree.nodes:
        kids.setdefault(n.parent, []).append(n)
    on_path = set(tree.path)
    executed = sum(n.executed for n in tree.nodes if n.parent is not None)
    replays = sum(n.replays for n in tree.nodes)
    stale = sum(n.status == "stale" for n in tree.nodes)
    path = " → ".join(f"#{i}" for i in tree.path) or "none returned"
    out = [
        '<section class="figure" id="search-tree"><h2>Search tree</h2>',
        f'<p class="muted">{len(tree.nodes)} nodes · {executed} actions executed first-hand · '
        f"{replays} replays · {stale} stale · path: {_e(path)}</p>",
        '<ul class="tree">',
    ]
    # depth first without recursion (a tree may be deep): None closes a node's list
    todo: list[TreeNodeFields | None] = list(reversed(kids.get(None, [])))
    while todo:
        item = todo.pop()
        if item is None:
            out.append("</ul></li>")
            continue
        n = item
        out.append(_node(n, n.node in on_path, red))
        below = kids.get(n.node, [])
        if below:
            out.append("<ul>")
            todo.append(None)
            todo += reversed(below)
        else:
            out.append("</li>")
    out.append("</ul></section>")
    return "\n".join(out)


def _node(n: TreeNodeFields, on_path: bool, red: Redactor) -> str:
    classes = " ".join(["path"] * on_path + [n.status])
    what = (
        f"<code>{_e(red.text(n.action))}</code>"
        if n.action is not None
        else '<span class="muted">start page</span>'
    )
    reward = "—" if n.reward is None else f"{n.reward:.3f}"
    tags = []
    if on_path:
        tags.append('<span class="tag path">path</span>')
    if n.executed and n.action is not None:
        tags.append('<span class="tag executed">executed</span>')
    if n.replays:
        tags.append(f'<span class="tag replayed">replayed ×{n.replays}</span>')
    if n.status in ("frontier", "stale", "failed"):
        tags.append(f'<span class="tag {n.status}">{n.status}</span>')
    where = ""
    if n.step is not None:
        where = (
            f' <a class="muted" href="#step-{step_number(n.step)}">scored at '
            f"{_e(step_label(n.step))}</a>"
        )
    parts = [
        f'<li id="node-{n.node}" class="{classes}"><div class="node">',
        f'<span class="mark">{MARK.get(n.status, "?")}</span> <b>#{n.node}</b> ',
        f'<span class="reward">{reward}</span> {what} {"".join(tags)}{where}',
    ]
    if n.url:
        parts.append(f' <span class="url">{_e(red.text(n.url))}</span>')
    if n.thought:
        parts.append(f'<div class="thought">{_e(red.text(n.thought))}</div>')
    if n.error:
        parts.append(f'<div class="thought signal warn">{_e(red.text(n.error))}</div>')
    parts.append("</div>")
    return "".join(parts)
