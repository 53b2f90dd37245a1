"""A tree search's nodes, live: indented by parent, the node being tried, the frontier, each
node's reward, and the path the search returned."""

from __future__ import annotations

from rich.text import Text
from webshepherd.protocol.common import TreeNodeFields
from webshepherd.tui.plain import plain
from webshepherd.tui.state import SessionView

#: status -> (mark, style); the node being tried is marked ▶ whatever its status
STATUS_MARK: dict[str, tuple[str, str]] = {
    "frontier": ("○", "cyan"),
    "expanded": ("●", ""),
    "leaf": ("·", "dim"),
    "done": ("✓", "bold green"),
    "failed": ("✗", "red"),
    "stale": ("⌀", "dim"),
}
#: the latest update's kind, as what the search is doing
DOING = {
    "scored": "scoring",
    "replayed": "replaying",
    "executed": "executing",
    "expanded": "expanding",
    "stale": "went stale",
    "path": "finished",
}
MAX_LINES = 200


def _order(view: SessionView) -> list[TreeNodeFields]:
    """Depth first from the root, children by id."""
    kids: dict[int | None, list[TreeNodeFields]] = {}
    for n in sorted(view.tree.values(), key=lambda n: n.node):
        kids.setdefault(n.parent, []).append(n)
    out: list[TreeNodeFields] = []
    todo = list(reversed(kids.get(None, [])))
    while todo:
        n = todo.pop()
        out.append(n)
        todo += reversed(kids.get(n.node, []))
    return out


def trying(view: SessionView) -> str:
    """What the search does now: ``node 5 ← 2, depth 2, replaying``."""
    doing = DOING.get(view.tree_event[1], "") if view.tree_event else ""
    n = view.tree.get(view.tree_trying) if view.tree_trying is not None else None
    if n is None:
        return doing
    up = f" ← {n.parent}" if n.parent is not None else ""
    return f"node {n.node}{up}, depth {n.depth}" + (f", {doing}" if doing else "")


def tree_text(view: SessionView, width: int) -> Text:
    """Every node on its own line, indented by depth: mark, id, reward, action, notes."""
    nodes = _order(view)
    frontier = sum(n.status == "frontier" for n in nodes)
    out = Text()
    out.append(f"search tree · {len(nodes)} nodes · frontier {frontier}", "bold")
    out.append(" · ")
    out.append(trying(view), "magenta")
    on_path = set(view.tree_path)
    for n in nodes[:MAX_LINES]:
        out.append("\n" + "  " * min(n.depth, 30))
        mark, style = STATUS_MARK.get(n.status, ("?", ""))
        if n.node == view.tree_trying:
            mark, style = "▶", "bold magenta"
        out.append(mark, style)
        out.append(f" #{n.node} ", "bold" if n.node in on_path else "")
        out.append("  —  " if n.reward is None else f"{n.reward:.3f}")
        out.append(" ")
        line = plain(n.action) if n.action is not None else Text("start page", "dim")
        notes = []
        if n.node in on_path:
            notes.append("★ path")
        if n.replays:
            notes.append(f"replayed ×{n.replays}")
        elif n.executed and n.action is not None:
            notes.append("executed")
        if n.status == "stale":
            notes.append("stale")
        room = max(width - 2 * min(n.depth, 30) - 12 - sum(len(x) + 2 for x in notes), 8)
        line.truncate(room, overflow="ellipsis")
        out.append(line)
        for note in notes:
            out.append("  " + note, "yellow" if note.startswith("★") else "dim")
    if len(nodes) > MAX_LINES:
        out.append(f"\n… {len(nodes) - MAX_LINES} more nodes", "dim")
    return out
