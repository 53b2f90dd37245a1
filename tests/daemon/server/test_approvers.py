"""Approver credentials over real sockets (issue 35): an agent that holds the token cannot
approve its own step, label as a person or count as a person, whatever role its hello
declares; a forged or revoked credential is refused; a pairing code works once, in time."""

from __future__ import annotations

import asyncio
import json
import stat
import time

import pytest
import pytest_asyncio
from webshepherd.daemon.server import approvers as approvers_module
from webshepherd.daemon.server.approvers import (
    MAX_PER_CONNECTION,
    MAX_PER_WINDOW,
    Approvers,
    normalize_code,
)
from websockets.exceptions import ConnectionClosed

from tests.fixtures.daemon import CANDS, hello, pairing_code, start_session


async def hold(daemon, agent, approval: str = "always", rid: str = "c1") -> str:
    """An agent's session whose score waits for a person; the session id."""
    sid = await start_session(agent)
    await agent.send(
        {
            "type": "score",
            "id": rid,
            "session_id": sid,
            "candidates": CANDS,
            "samples": 1,
            "approval": approval,
        }
    )
    return sid


@pytest.mark.parametrize("declared", ["extension", "monitor"])
async def test_an_agent_declaring_a_persons_role_gets_no_approver_power(daemon, declared):
    """The attack of issue 35: the agent's own second connection, with the token, declares
    itself the extension (or a monitor), named like the extension's panel."""
    agent = await daemon.client(name="agent-1")
    impostor = await daemon.raw()
    welcome = await impostor.request(hello(declared, "webshepherd-extension"))
    assert welcome["type"] == "welcome"
    assert welcome["role"] == "agent" and welcome["approver"] is False  # what was granted
    person = await daemon.client(role="extension", name="laptop")
    sid = await hold(daemon, agent)
    req = await person.wait_for("approval.request", timeout=60)

    for decision, action in (("approve", None), ("edit", "goto('http://127.0.0.1:9/pay-all')")):
        refused = await impostor.request(
            {
                "type": "approval.decide",
                "request_id": req["request_id"],
                "decision": decision,
                "action": action,
                "via": "panel",
            }
        )
        assert (refused["type"], refused["code"]) == ("error", "unauthorized"), refused
        assert "no approver credential" in refused["message"]
        assert "webshepherd pair" in refused["message"]
    labelled = await impostor.request(
        {
            "type": "label",
            "session_id": sid,
            "step": req["step"],
            "action": req["candidate"]["action"],
            "items": ["yes", "yes"],
            "source": "person",
        }
    )
    assert (labelled["type"], labelled["code"]) == ("error", "unauthorized"), labelled
    assert "may not label as a person" in labelled["message"]
    assert daemon.server.core.approvals.session_of(req["request_id"]) == sid  # still open

    # the person's decision goes through, recorded under the name the person paired
    reply = await person.request(
        {
            "type": "approval.decide",
            "request_id": req["request_id"],
            "decision": "reject",
            "via": "panel",
        }
    )
    assert reply["type"] == "approval.resolved" and reply["by"] == "extension:laptop/panel"
    scored = await agent.wait_for(lambda m: m.get("id") == "c1", timeout=30)
    assert scored["decision"]["status"] == "rejected"
    assert scored["decision"]["by"] == "extension:laptop/panel"


async def test_a_declared_extension_still_observes_sees_requests_and_redeems_hook_keys(daemon):
    """A browser an agent framework launched (its extension unpaired) shows the overlay: it
    gets approval requests for display and redeems page-hook keys, but decides nothing."""
    agent = await daemon.client(name="agent-1")
    browser = await daemon.client(role="extension", name="launched", paired=False)
    key = (await agent.request({"type": "hook.grant", "session_id": None}))["key"]
    redeemed = await browser.request({"type": "hook.redeem", "key": key})
    assert redeemed["type"] == "hook.redeemed", redeemed
    await daemon.client(role="monitor", name="tui")  # a person is present
    await hold(daemon, agent)
    req = await browser.wait_for("approval.request", timeout=60)
    refused = await browser.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    assert refused["code"] == "unauthorized"


@pytest_asyncio.fixture(loop_scope="function")
async def strict_daemon(start_daemon):
    """Every reward is below the threshold: an ``auto`` score is held whenever a person is."""
    return await start_daemon(approval_threshold=2.0, approval_drop=None, approval_timeout_s=60)


async def test_only_paired_connections_count_as_a_person_present(strict_daemon):
    """With only declared extension and monitor connections, nobody can answer: an ``auto``
    score is not held. Once a paired tool connects, it is."""
    d = strict_daemon
    agent = await d.client(name="agent-1")
    await d.client(role="monitor", name="fake-tui", paired=False)
    await d.client(role="extension", name="fake-ext", paired=False)
    assert not d.server.core.person_present()
    await hold(d, agent, approval="auto", rid="c1")
    scored = await agent.wait_for(lambda m: m.get("id") == "c1", timeout=60)
    assert scored["decision"]["status"] == "auto"

    person = await d.client(role="monitor", name="tui")
    assert d.server.core.person_present()
    await hold(d, agent, approval="auto", rid="c2")
    req = await person.wait_for("approval.request", timeout=60)
    assert req["reason"] == "below_threshold"
    await person.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    scored = await agent.wait_for(lambda m: m.get("id") == "c2", timeout=30)
    assert scored["decision"]["by"] == "monitor:tui"


async def test_a_forged_credential_is_refused_at_hello(daemon):
    c = await daemon.raw()
    forged = "A" * 43  # the shape of a real one
    await c.send({**hello("extension", "ext", forged), "id": "h"})
    err = await c.recv()
    assert (err["type"], err["code"]) == ("error", "unauthorized")
    assert "approver credential" in err["message"] and "pair again" in err["message"]
    with pytest.raises(ConnectionClosed) as closed:
        await c.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_a_revoked_credential_stops_deciding_at_once_and_is_refused_after(daemon):
    credential = await daemon.approver("monitor", "tui")
    agent = await daemon.client(name="agent-1")
    person = await daemon.client(role="monitor", name="tui")
    await hold(daemon, agent)
    req = await person.wait_for("approval.request", timeout=60)
    (entry,) = [a for a in Approvers(daemon.config.config_dir).paired() if a.name == "tui"]
    assert Approvers(daemon.config.config_dir).revoke(entry.id) == entry  # `pair --revoke`
    refused = await person.request(
        {"type": "approval.decide", "request_id": req["request_id"], "decision": "approve"}
    )
    assert refused["code"] == "unauthorized" and "revoked" in refused["message"]
    assert not daemon.server.core.person_present()
    c = await daemon.raw()
    err = await c.request(hello("monitor", "tui", credential))
    assert err["code"] == "unauthorized" and "pair again" in err["message"]


async def test_a_code_pairs_once_and_the_connection_becomes_the_approver(daemon):
    code = pairing_code(daemon.config.config_dir, "extension", "laptop")
    c = await daemon.client(role="extension", name="webshepherd-extension", paired=False)
    paired = await c.request({"type": "pair", "code": code.replace("-", " "), "name": "other"})
    assert paired["type"] == "paired"
    assert (paired["role"], paired["name"]) == ("extension", "laptop")  # --name wins
    assert daemon.server.core.person_present()
    again = await daemon.client(name="agent-1")
    reused = await again.request({"type": "pair", "code": code, "name": "x"})
    assert (reused["type"], reused["code"]) == ("error", "unauthorized")
    assert "already used" in reused["message"]
    welcome = await (await daemon.raw()).request(hello("agent", "whatever", paired["credential"]))
    assert (welcome["role"], welcome["approver"]) == ("extension", True)  # not the declared


def wrong_codes(good: str, n: int) -> list[str]:
    digits = normalize_code(good)
    return [f"{(int(digits) + k) % 10**8:08d}" for k in range(1, n + 1)]


async def test_an_expired_code_pairs_nothing_and_costs_a_second(daemon):
    store = Approvers(daemon.config.config_dir)
    expired = store.create_code("monitor", ttl_s=-1).code
    c = await daemon.client(name="agent-1")
    t0 = time.monotonic()
    reply = await c.request({"type": "pair", "code": expired, "name": "x"})
    assert reply["code"] == "unauthorized" and "expired" in reply["message"]
    assert time.monotonic() - t0 >= 0.9  # a wrong code costs the connection a second
    assert daemon.server.approvers.paired() == []


async def test_a_connection_closes_at_its_third_wrong_code_and_the_code_stays_good(
    daemon, monkeypatch
):
    monkeypatch.setattr("webshepherd.daemon.server.access.PAIR_FAILURE_DELAY_S", 0.0)
    good = pairing_code(daemon.config.config_dir, "monitor", "desk")
    c = await daemon.client(name="agent-1")
    wrong = wrong_codes(good, MAX_PER_CONNECTION)
    for w in wrong[:-1]:
        reply = await c.request({"type": "pair", "code": w, "name": "x"})
        assert reply["code"] == "unauthorized" and "3 wrong codes" in reply["message"]
    last = await c.request({"type": "pair", "code": wrong[-1], "name": "x"})
    assert last["code"] == "unauthorized"
    with pytest.raises(ConnectionClosed):
        await c.request({"type": "pair", "code": good, "name": "x"})
    assert c.ws.close_code == 1008
    # the person's code was not voided: it pairs from the person's tool
    person = await daemon.client(role="monitor", name="tui", paired=False)
    paired = await person.request({"type": "pair", "code": good, "name": "tui"})
    assert (paired["type"], paired["name"]) == ("paired", "desk")


async def test_many_wrong_codes_pause_pairing_without_voiding_the_code(daemon, monkeypatch):
    """MAX_PER_WINDOW wrong codes from several connections: no code is tried until the
    window has room, the right one neither; then the person's code still pairs."""
    monkeypatch.setattr("webshepherd.daemon.server.access.PAIR_FAILURE_DELAY_S", 0.0)
    monkeypatch.setattr(approvers_module, "WINDOW_S", 3.0)
    good = pairing_code(daemon.config.config_dir, "extension", "laptop")
    wrong = iter(wrong_codes(good, MAX_PER_WINDOW))
    for _ in range(-(-MAX_PER_WINDOW // (MAX_PER_CONNECTION - 1))):
        c = await daemon.client(name="guesser")
        for _ in range(MAX_PER_CONNECTION - 1):  # short of the connection's last
            w = next(wrong, None)
            if w is not None:
                reply = await c.request({"type": "pair", "code": w, "name": "x"})
                assert reply["code"] == "unauthorized" and "wrong" in reply["message"]
    t0 = time.monotonic()
    person = await daemon.client(role="extension", name="ext", paired=False)
    paused = await person.request({"type": "pair", "code": good, "name": "ext"})
    assert paused["code"] == "unauthorized"
    assert f"{MAX_PER_WINDOW} wrong pairing codes in the last 3 s" in paused["message"]
    assert "the pending code still works" in paused["message"]
    assert not daemon.server.core.person_present()
    wait = int(paused["message"].rsplit("again in ", 1)[1].split(" s")[0])
    assert 1 <= wait <= 3
    # the window's length is the subject: only its end lets the code in (later is as good)
    await asyncio.sleep(max(0.0, 3.1 - (time.monotonic() - t0)))
    person = await daemon.client(role="extension", name="ext", paired=False)
    paired = await person.request({"type": "pair", "code": good, "name": "ext"})
    assert (paired["type"], paired["name"]) == ("paired", "laptop")
    assert daemon.server.core.person_present()


async def test_the_files_are_owner_only_and_hold_no_secret(daemon):
    credential = await daemon.approver("extension", "ext")
    code = pairing_code(daemon.config.config_dir, "monitor")
    store = Approvers(daemon.config.config_dir)
    for path in (store.path, store.codes_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        text = path.read_text()
        assert credential not in text and normalize_code(code) not in text
    (entry,) = json.loads(store.path.read_text())["approvers"]
    assert entry["sha256"] == approvers_module.digest(credential)
    assert {"id", "role", "name", "created_at"} <= entry.keys()
