"""Behaviour fixture (issue 43): a scripted session over a real daemon through every client
message kind; the replies, the events each connection got and the SQLite tables (ids and
times normalised) must equal the committed golden file, so a refactor of the socket layer or
the session machine is shown to change nothing. Regenerate only for a deliberate change:
``WEBSHEPHERD_WRITE_GOLDEN=1 pytest tests/daemon/server/test_transcript.py``."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.engine.checklist_parse import parse_reference_checklist
from webshepherd.daemon.engine.types import ParsedChecklist
from webshepherd.protocol.commits import held_request

from tests.fixtures.daemon import REFERENCE, DaemonHandle, WsClient, make_config
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

GOLDEN = Path(__file__).parent / "data" / "transcript.golden.json"
URL = "http://shop.test/checkout"
OBS = {
    "url": URL,
    "axtree": "\n".join(
        ["RootWebArea 'Checkout', focused", "\t[4] button 'Place order'", "\t[5] link 'Help'"]
    ),
    "elements": {
        "4": {"tag": "button", "submits": True, "form_method": "POST",
              "form_action": "http://shop.test/orders"},
        "5": {"tag": "a", "href": "http://shop.test/help"},
    },
}  # fmt: skip
ORDER = {"thought": "Place the order.", "action": "click('4')"}
HELP = {"thought": "Read the help.", "action": "click('5')"}
JUDGE = {(URL, "click('4')"): (0.9, (2, 1), "orders"), (URL, "click('5')"): (0.8, (1, 0), "help")}
POST = held_request(
    "POST", "http://shop.test/orders", "write", body=b"item=cable&qty=1",
    content_type="application/x-www-form-urlencoded", page_url=URL, trigger="click('4')",
    element="4",
)  # fmt: skip


class ChecklistJudge(ScriptedJudge):
    """The scripted judge that also writes a checklist (the reference one) when asked."""

    def make_checklist(self, intent: str, start_url: str, axtree: str) -> ParsedChecklist:
        return parse_reference_checklist(REFERENCE)


_HEX_ID = re.compile(r"^a\d+-[0-9a-f]{8}$|^[0-9a-f]{8}$|^[0-9a-f]{32}$|^[A-Za-z0-9_-]{43}$")
_TIME_KEYS = re.compile(r"(^|_)(ts|at|time|ms|s|started|ended|created|elapsed|uptime)$|_at$")


class Normaliser:
    """Ids become ``<id:N>`` by first appearance; times and durations become ``<t>``."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def id(self, value: str) -> str:
        return self.ids.setdefault(value, f"<id:{len(self.ids)}>")

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v, key) for v in value]
        if isinstance(value, str) and value[:1] in "[{":
            try:
                return {"json": self(json.loads(value), key)}
            except ValueError:
                pass
        if _TIME_KEYS.search(key) and isinstance(value, int | float | str) and value is not None:
            return "<t>"
        if isinstance(value, float) and value > 1e9:
            return "<t>"
        if isinstance(value, str) and _HEX_ID.match(value) and key not in ("type", "action"):
            return self.id(value)
        if isinstance(value, str):
            for known, name in self.ids.items():
                value = value.replace(known, name)
        return value


async def _drain(c: WsClient) -> list[dict[str, Any]]:
    """What ``c`` received so far: a ping on its own connection is the barrier. The daemon's
    periodic ``stats`` to monitors are left out: they come by the clock, not by the script."""
    pong = await c.request({"type": "ping"})
    got, c.inbox = c.inbox, []
    return [*(m for m in got if m.get("type") != "stats"), pong]


async def _script(d: DaemonHandle) -> dict[str, Any]:
    log: list[Any] = []
    monitor = await d.client(role="monitor", name="tui")
    agent = await d.client(role="agent", name="bot")

    async def step(name: str, c: WsClient, msg: dict[str, Any]) -> dict[str, Any]:
        reply = await c.request(msg, timeout=30)
        log.append({"step": name, "reply": reply, "monitor": await _drain(monitor)})
        return reply

    await step("subscribe", monitor, {"type": "subscribe", "sessions": "*"})
    await step("ping", agent, {"type": "ping"})
    started = await step(
        "start_ref", agent,
        {"type": "session.start", "intent": "Buy a cable", "start_url": "http://shop.test/",
         "observation": OBS, "checklist": REFERENCE},
    )  # fmt: skip
    sid = started["session_id"]
    gen = await step(
        "start_generated", agent,
        {"type": "session.start", "intent": "Find help", "start_url": "http://shop.test/",
         "observation": OBS},
    )  # fmt: skip
    await step("observe", agent, {"type": "observe", "session_id": sid, **OBS})
    await step(
        "score_auto", agent,
        {"type": "score", "session_id": sid, "candidates": [HELP], "approval": "auto"},
    )  # fmt: skip
    await step("action", agent, {"type": "action", "session_id": sid, "action": HELP["action"],
                                 "thought": HELP["thought"]})  # fmt: skip
    await step(
        "label", agent,
        {"type": "label", "session_id": sid, "step": 1, "action": HELP["action"],
         "items": ["in_progress", "no"], "source": "environment"},
    )  # fmt: skip
    for k, (decision, approval, cand) in enumerate(
        [("approve", "always", HELP), ("reject", "auto", ORDER)]
    ):
        rid = agent.next_id()
        await agent.send({"type": "score", "id": rid, "session_id": sid, "candidates": [cand],
                          "approval": approval})  # fmt: skip
        req = await monitor.wait_for("approval.request", timeout=30)
        decided = await monitor.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": decision,
             "note": f"person {k}", "via": "panel"}
        )  # fmt: skip
        reply = await agent.wait_for(lambda m, rid=rid: m.get("id") == rid, timeout=30)
        log.append({"step": f"score_{approval}_{decision}", "request": req, "decided": decided,
                    "reply": reply, "monitor": await _drain(monitor)})  # fmt: skip
    await step(
        "tree_node", agent,
        {"type": "tree.node", "session_id": sid, "node": 0, "depth": 0, "status": "frontier",
         "event": "scored"},
    )  # fmt: skip
    held = await step(
        "start_holds", agent,
        {"type": "session.start", "intent": "Buy a cable", "start_url": "http://shop.test/",
         "observation": OBS, "checklist": REFERENCE, "holds": "browser"},
    )  # fmt: skip
    hid = held["session_id"]
    await step(
        "score_predicted", agent,
        {"type": "score", "session_id": hid, "candidates": [ORDER], "approval": "auto"},
    )  # fmt: skip
    for mode in ("watch", "stop"):
        await step(f"mode_{mode}", monitor,
                   {"type": "session.mode", "session_id": hid, "mode": mode})  # fmt: skip
        await step(f"commit_{mode}", agent, {"type": "commit.check", "session_id": hid,
                                             "request": POST.model_dump(mode="json")})  # fmt: skip
    await step("mode_ask", monitor, {"type": "session.mode", "session_id": hid, "mode": "ask"})
    rid = agent.next_id()
    await agent.send({"type": "commit.check", "id": rid, "session_id": hid,
                      "request": POST.model_dump(mode="json")})  # fmt: skip
    req = await monitor.wait_for("approval.request", timeout=30)
    decided = await monitor.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    reply = await agent.wait_for(lambda m: m.get("id") == rid, timeout=30)
    log.append({"step": "commit_ask", "request": req, "decided": decided, "reply": reply,
                "monitor": await _drain(monitor)})  # fmt: skip
    await step("mode_by_agent", agent, {"type": "session.mode", "session_id": hid, "mode": "watch"})
    await step("bad_session", agent, {"type": "observe", "session_id": "nope", **OBS})
    for s, outcome in ((sid, "success"), (gen["session_id"], "unknown"), (hid, "failure")):
        await step(f"end_{outcome}", agent,
                   {"type": "session.end", "session_id": s, "outcome": outcome})  # fmt: skip
    await step("list", monitor, {"type": "sessions.list"})
    await step("get", monitor, {"type": "session.get", "session_id": sid})
    log.append({"step": "agent_rest", "agent": await _drain(agent)})
    await d.close_clients()
    return {"steps": log}


def _tables(db: Path) -> dict[str, list[Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    out: dict[str, list[Any]] = {}
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    for name in sorted(names):
        rows = [dict(r) for r in con.execute(f"SELECT * FROM {name} ORDER BY rowid")]
        out[name] = [{k: v for k, v in r.items() if not isinstance(v, bytes)} for r in rows]
    con.close()
    return out


async def test_every_message_kind_replies_as_the_golden_transcript(tmp_path: Path) -> None:
    async with scripted_daemon(tmp_path, ChecklistJudge(JUDGE)) as server:
        got = await _script(DaemonHandle(server, make_config(tmp_path)))
    got["tables"] = _tables(tmp_path / "data" / DB_NAME)
    norm = Normaliser()
    text = json.dumps(norm(got), indent=1, sort_keys=True) + "\n"
    if os.environ.get("WEBSHEPHERD_WRITE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()
