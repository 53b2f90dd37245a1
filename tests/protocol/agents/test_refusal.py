"""A refusal as an agent keeps it: the sentence (tests/protocol/test_refusal.py checks it for
each decider) and the plain data beside it; over a real daemon, the sentence each decider's
answer gives, naming as places to decide only the paired tools that show the session."""

from __future__ import annotations

import asyncio
from pathlib import Path

from webshepherd.protocol.agents.refusal import refusal_info, refusal_text, refused
from webshepherd.protocol.client import AsyncClient
from webshepherd.protocol.common import DecisionInfo, GuardHit
from webshepherd.protocol.refusal import PERSON_FINAL

from tests.daemon.server.test_commits_live import JUDGE, POST, _session
from tests.fixtures.daemon import TEST_TOKEN, DaemonHandle, make_config
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon


def test_refusal_info_keeps_the_parts_and_a_person_s_refusal_no_way_out() -> None:
    hit = GuardHit(rule="form_submit", detail="a POST form")
    d = DecisionInfo(status="rejected", by="daemon", note="held", decider="guard", guard=[hit])
    info = refusal_info(d, "click('3')")
    assert info["decider"] == "guard" and info["guard"] == ["form_submit"]
    assert info["action"] == "click('3')" and info["text"].startswith("click('3'): refused by")
    person = DecisionInfo(status="rejected", by="monitor:x", decider="person", way_out="retry")
    assert refusal_info(person)["way_out"] is None and refused(person)


async def test_the_sentence_of_each_decider_over_a_real_daemon(tmp_path: Path) -> None:
    """Over real sockets: a person's Reject (final, no way out), the mode 'stop', nobody
    paired (the daemon), nobody deciding in time; the places named are the paired tools that
    show the session: a TUI, never an extension that follows no tab of it."""
    async with scripted_daemon(tmp_path, ScriptedJudge(JUDGE), approval_timeout_s=1.0) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        async with AsyncClient(d.url, TEST_TOKEN) as agent:
            # nobody paired: the daemon refuses at once, and says how to pair
            session = await _session(agent, holds="browser")
            got = await session.commit_check(POST, timeout=30)
            text = refusal_text(got.decision)
            assert text.startswith("refused by daemon (mode ask): this sends a POST to shop.test")
            assert "webshepherd pair tui" in text and "None" not in text

            # a paired extension that follows none of the session's tabs is no place to decide
            extension = await d.client(role="extension", name="chrome")
            monitor = await d.client(role="monitor", name="tui")
            asking = asyncio.create_task(session.commit_check(POST, timeout=30))
            req = await monitor.wait_for("approval.request", timeout=30)
            await monitor.request(
                {"type": "approval.decide", "request_id": req["request_id"], "decision": "reject"}
            )
            got = await asking
            assert refusal_text(got.decision) == (
                f"refused by person monitor:tui (mode ask): they gave no reason — {PERSON_FINAL}"
            )
            assert got.decision.way_out is None

            # nobody decides in time: the way out names the TUI only
            got = await session.commit_check(POST, timeout=30)
            text = refusal_text(got.decision)
            assert text.startswith("refused by timeout (mode ask): nobody decided within 1 s")
            assert text.endswith("when it is asked again, in the TUI (monitor:tui)"), text
            assert "extension" not in text and "'watch'" not in text
            # once the extension follows the session, its side panel is named too
            await extension.request({"type": "subscribe", "sessions": [session.session_id]})
            got = await session.commit_check(POST, timeout=30)
            assert refusal_text(got.decision).endswith(
                "in the TUI (monitor:tui) or the extension's side panel (extension:chrome)"
            )

            # the mode 'stop' refuses without asking, naming where a person switches it
            await monitor.request(
                {"type": "session.mode", "session_id": session.session_id, "mode": "stop"}
            )
            got = await session.commit_check(POST, timeout=30)
            text = refusal_text(got.decision)
            assert text.startswith("refused by mode (mode stop): the session's mode is 'stop'")
            assert text.endswith(
                "switches this session to 'ask' or 'watch', in the TUI (monitor:tui) or the "
                "extension's side panel (extension:chrome)"
            ), text
        await d.close_clients()
