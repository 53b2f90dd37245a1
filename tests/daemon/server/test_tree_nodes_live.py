"""A search tree over real sockets (``tree.node``): an agent reports its nodes, a monitor
receives them as events, the recording keeps every update (History's timeline gives each
node's latest state and the path), a restarted daemon still knows the tree, and bad nodes
get clear errors with nothing recorded lost. The judge is scripted: these tests are about
the plumbing, not about judgements."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.recorder import History

from tests.fixtures.daemon import CANDS, DaemonHandle, WsClient, make_config, start_session
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

JUDGE = (0.5, (0, 0), "scripted")


def node(sid: str, n: int, parent: int | None, depth: int, **extra: Any) -> dict[str, Any]:
    return {"type": "tree.node", "session_id": sid, "node": n, "parent": parent,
            "depth": depth, "status": "frontier", "event": "scored", **extra}  # fmt: skip


async def _tree(agent: WsClient) -> tuple[str, int]:
    """A session whose root is expanded: CANDS scored at its step, as nodes 1 and 2."""
    sid = await start_session(agent)
    scored = await agent.request(
        {"type": "score", "session_id": sid, "candidates": CANDS, "approval": "never"}
    )
    assert scored["type"] == "scored", scored
    step = scored["step"]
    root = node(sid, 0, None, 0, status="expanded", event="expanded", executed=True,
                expanded_at=step, url="http://shop.local/", trying=0)  # fmt: skip
    assert (await agent.request(root))["type"] == "tree.node.recorded"
    for k, c in enumerate(CANDS, 1):
        got = await agent.request(
            node(
                sid,
                k,
                0,
                1,
                action=c["action"],
                thought=c["thought"],
                reward=0.5,
                step=step,
                trying=0,
            )
        )
        assert got == {"type": "tree.node.recorded", "id": got["id"], "session_id": sid,
                       "node": k}  # fmt: skip
    return sid, step


async def test_nodes_are_recorded_sent_to_monitors_and_kept_across_a_restart(
    tmp_path: Path,
) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(default=JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        monitor = await d.client(role="monitor", name="tui")
        assert (await monitor.request({"type": "subscribe", "sessions": "*"}))["type"] == (
            "subscribed"
        )
        agent = await d.client(name="tree-agent")
        sid, step = await _tree(agent)
        # node 1 tried: executed first-hand, then node 2 by a replay of nothing (depth 1)
        one = node(sid, 1, 0, 1, action=CANDS[0]["action"], thought=CANDS[0]["thought"],
                   reward=0.5, step=step, status="failed", executed=True, event="executed",
                   error="no element '2'", trying=1)  # fmt: skip
        assert (await agent.request(one))["type"] == "tree.node.recorded"
        two = node(sid, 2, 0, 1, action=CANDS[1]["action"], reward=0.5, step=step,
                   status="done", executed=True, event="executed", trying=2)  # fmt: skip
        assert (await agent.request(two))["type"] == "tree.node.recorded"
        for n, parent, depth in ((0, None, 0), (2, 0, 1)):
            path = node(sid, n, parent, depth, event="path", status="done",
                        action=None if n == 0 else CANDS[1]["action"], step=None if n == 0
                        else step, executed=True)  # fmt: skip
            if n == 0:
                path.update(status="expanded", expanded_at=step)
            assert (await agent.request(path))["type"] == "tree.node.recorded"
        seen = []
        while len(seen) < 7:
            e = await monitor.wait_for(lambda m: m.get("type") == "tree.node")
            seen.append((e["node"], e["event"]))
        assert seen == [(0, "expanded"), (1, "scored"), (2, "scored"), (1, "executed"),
                        (2, "executed"), (0, "path"), (2, "path")]  # fmt: skip
        await d.close_clients()
    history = History.open(tmp_path / "data" / DB_NAME)
    tl = history.timeline(sid)
    history.close()
    assert tl is not None and tl.tree is not None
    t = tl.tree
    assert [
        (n.node, n.parent, n.depth, n.status, n.executed, t.updates[n.node]) for n in t.nodes
    ] == [
        (0, None, 0, "expanded", True, 2),
        (1, 0, 1, "failed", True, 2),
        (2, 0, 1, "done", True, 3),
    ]
    assert t.path == [0, 2] and [c.node for c in t.children(0)] == [1, 2]
    assert t.nodes[1].thought == CANDS[0]["thought"] and t.nodes[1].error == "no element '2'"
    assert t.nodes[1].step == step and t.nodes[0].expanded_at == step
    # the planning metrics read the path, not every action of the session
    assert [a.action for a in tl.executed_path()] == [CANDS[1]["action"]]
    # a restarted daemon knows the tree: children of known nodes only
    async with scripted_daemon(tmp_path, ScriptedJudge(default=JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent = await d.client(name="tree-agent")
        obs = {"type": "observe", "session_id": sid, "url": "http://shop.local/p",
               "axtree": "[1] RootWebArea 'P'"}  # fmt: skip
        assert (await agent.request(obs))["type"] == "observed"
        scored = await agent.request({"type": "score", "session_id": sid,
                                      "candidates": CANDS[:1], "approval": "never"})  # fmt: skip
        deeper = node(sid, 3, 2, 2, action=CANDS[0]["action"], step=scored["step"])
        assert (await agent.request(deeper))["type"] == "tree.node.recorded"
        again = await agent.request(node(sid, 4, 0, 0 + 2, action="click('9')"))
        assert again["code"] == "invalid_message" and "depth" in again["message"], again
        await d.close_clients()


async def test_bad_nodes_get_clear_errors_and_nothing_recorded_is_lost(tmp_path: Path) -> None:
    async with scripted_daemon(tmp_path, ScriptedJudge(default=JUDGE)) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent = await d.client(name="tree-agent")
        sid, step = await _tree(agent)
        act = CANDS[0]["action"]
        bad: list[tuple[dict[str, Any], str, str]] = [
            (node(sid, 3, 7, 2, action=act), "invalid_message", "parent: no node 7"),
            (node(sid, 3, None, 0), "invalid_message", "root already (node 0)"),
            (node(sid, 3, 1, 3, action=act), "invalid_message", "depth: 3 below node 1"),
            (node(sid, 1, 2, 2, action=act), "invalid_message", "node 1 was reported"),
            (node(sid, 3, 1, 2, action="click('77')", step=step), "invalid_message",
             f"not a candidate scored at step {step}"),
            (node(sid, 3, 1, 2, action=act, step=step + 5), "invalid_message",
             "not observed yet"),
            (node(sid, 3, 1, 2, action=act, trying=99), "invalid_message", "trying: no node 99"),
            (node(sid, 3, 1, 2, action=act, thought="x" * 40_000), "invalid_message",
             "thought: String should have at most 32768 characters"),
            (node(sid, 3, 1, 2, action=act, error="e" * 5_000), "invalid_message",
             "error: String should have at most 4096 characters"),
            (node(sid, 3, 1, 2), "invalid_message", "action: a node below the root needs"),
            (node(sid, 10_000, 1, 2, action=act), "invalid_message", "node: "),
            (node("no-such-session", 3, 1, 2, action=act), "unknown_session", "no-such-session"),
        ]  # fmt: skip
        for msg, code, text in bad:
            got = await agent.request(msg)
            assert (got["type"], got["code"]) == ("error", code), (msg, got)
            assert text in got["message"], (text, got["message"])
        other = await d.client(name="another-agent")
        got = await other.request(node(sid, 3, 1, 2, action=act))
        assert got["code"] == "unauthorized" and "held by another" in got["message"], got
        monitor = await d.client(role="monitor", name="tui")
        got = await monitor.request(node(sid, 3, 1, 2, action=act))
        assert got["code"] == "unauthorized" and "'monitor'" in got["message"], got
        # the daemon still takes good nodes from the agent
        assert (await agent.request(node(sid, 3, 1, 2, action=act)))["type"] == (
            "tree.node.recorded"
        )
        await agent.request({"type": "session.end", "session_id": sid, "outcome": "failure"})
        got = await agent.request(node(sid, 4, 1, 2, action=act))
        assert got["code"] == "session_closed", got
        await d.close_clients()
    db = sqlite3.connect(tmp_path / "data" / DB_NAME)
    rows = db.execute("SELECT node, event FROM tree_nodes WHERE session_id = ? ORDER BY id",
                      (sid,)).fetchall()  # fmt: skip
    db.close()
    assert rows == [(0, "expanded"), (1, "scored"), (2, "scored"), (3, "scored")]
