"""A tree-search agent's nodes, checked against those already reported (sans-I/O)."""

from __future__ import annotations

from webshepherd.daemon.sessions.state import LiveSession
from webshepherd.protocol import requests as rq
from webshepherd.protocol.errors import ProtocolError

#: A node as the tree keeps it: (parent, depth, action).
TreeKey = tuple[int | None, int, str | None]


def check_tree_node(st: LiveSession, msg: rq.TreeNode) -> TreeKey:
    """The node's (parent, depth, action), once it is consistent with the tree so far: one
    root; a known parent one level up; parent, depth and action never change; ``trying`` a
    known node; steps observed already; a scored action a candidate at its step. A
    ``ProtocolError`` names the field that is not."""
    known = st.tree.get(msg.node)
    first = (msg.parent, msg.depth, msg.action)
    if known is not None and known != first:
        parent, depth, _ = known
        raise ProtocolError(
            f"node: node {msg.node} was reported with parent {parent}, depth {depth} and "
            "another action; a node's parent, depth and action do not change"
        )
    if known is None and msg.parent is None:
        root = next((n for n, (p, _, _) in st.tree.items() if p is None), None)
        if root is not None:
            raise ProtocolError(f"parent: the tree has its root already (node {root})")
    if known is None and msg.parent is not None:
        up = st.tree.get(msg.parent)
        if up is None:
            raise ProtocolError(f"parent: no node {msg.parent} in this session's tree")
        if msg.depth != up[1] + 1:
            raise ProtocolError(
                f"depth: {msg.depth} below node {msg.parent} of depth {up[1]} "
                f"(expected {up[1] + 1})"
            )
    if msg.trying is not None and msg.trying not in st.tree and msg.trying != msg.node:
        raise ProtocolError(f"trying: no node {msg.trying} in this session's tree")
    for name, step in (("step", msg.step), ("expanded_at", msg.expanded_at)):
        if step is not None and step > st.step:
            raise ProtocolError(f"{name}: step {step} is not observed yet (at {st.step})")
    if (
        msg.step is not None
        and msg.action is not None
        and msg.action not in (a for a, _ in st.step_candidates.get(msg.step, []))
    ):
        raise ProtocolError(f"action: not a candidate scored at step {msg.step}")
    return first
