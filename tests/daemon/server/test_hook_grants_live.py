"""Page-hook keys over real sockets: an agent gets one, the extension redeems it; nobody else
may do either, and a key opens only its own session."""

from __future__ import annotations

from tests.fixtures.daemon import start_session


async def grant(c, session_id=None):
    return await c.request({"type": "hook.grant", "session_id": session_id})


async def redeem(c, key):
    return await c.request({"type": "hook.redeem", "key": key})


async def test_a_key_for_the_agents_session_names_it_to_the_extension(daemon):
    agent = await daemon.client(name="agent-1")
    ext = await daemon.client(role="extension", name="ext")
    sid = await start_session(agent)
    got = await grant(agent, sid)
    assert got["type"] == "hook.granted" and got["session_id"] == sid, got
    assert len(got["key"]) >= 40 and got["expires_in_s"] > 0
    for _ in range(2):  # another tab, a re-attach: the same key again
        redeemed = await redeem(ext, got["key"])
        assert (redeemed["type"], redeemed["session_id"]) == ("hook.redeemed", sid)
    await agent.request({"type": "session.end", "session_id": sid, "outcome": "success"})
    gone = await redeem(ext, got["key"])
    assert (gone["type"], gone["code"]) == ("error", "unauthorized"), gone


async def test_a_start_key_is_spent_by_its_first_use(daemon):
    agent = await daemon.client(name="agent-1")
    ext = await daemon.client(role="extension", name="ext")
    got = await grant(agent)
    assert got["session_id"] is None
    first = await redeem(ext, got["key"])
    assert (first["type"], first["session_id"]) == ("hook.redeemed", None)
    again = await redeem(ext, got["key"])
    assert (again["type"], again["code"]) == ("error", "unauthorized")
    assert "hook.grant" in again["message"]


async def test_made_up_keys_and_wrong_roles_are_refused(daemon):
    agent = await daemon.client(name="agent-1")
    ext = await daemon.client(role="extension", name="ext")
    monitor = await daemon.client(role="monitor", name="tui")
    sid = await start_session(agent)
    made_up = await redeem(ext, "x" * 43)
    assert (made_up["type"], made_up["code"]) == ("error", "unauthorized")
    for c in (ext, monitor):  # the relay and viewers get no keys
        refused = await grant(c, sid)
        assert (refused["type"], refused["code"]) == ("error", "unauthorized"), refused
    key = (await grant(agent, sid))["key"]
    for c in (agent, monitor):  # only the extension learns what a key opens
        refused = await redeem(c, key)
        assert (refused["type"], refused["code"]) == ("error", "unauthorized"), refused
    assert (await redeem(ext, key))["session_id"] == sid


async def test_no_key_for_another_connections_session(daemon):
    holder = await daemon.client(name="agent-1")
    other = await daemon.client(name="agent-2")
    sid = await start_session(holder)
    refused = await grant(other, sid)
    assert (refused["type"], refused["code"]) == ("error", "unauthorized")
    assert "held by another connection" in refused["message"]
    unknown = await grant(other, "no-such-session")
    assert (unknown["type"], unknown["code"]) == ("error", "unknown_session")
