"""Who is there: the connections the socket layer reports, and the machine's checks of the
caller of a session's step (``SessionCore.handle``), without sockets."""

from __future__ import annotations

import pytest
from webshepherd.daemon.records.labels import LabelRecord
from webshepherd.daemon.sessions import Caller, Reply, RunScore, SessionCore
from webshepherd.daemon.sessions.caller import Connections
from webshepherd.protocol import requests as rq
from webshepherd.protocol.common import Timing
from webshepherd.protocol.errors import UnauthorizedError, UnknownSessionError

from tests.daemon.sessions.test_machine import (
    MONITOR,
    OWNER,
    kinds,
    make_core,
    score_job,
    started,
    step_score,
)

AGENT = Caller(OWNER, "agent:shop-bot", "agent", is_agent=True)
OTHER_AGENT = Caller(3, "agent:other-bot", "agent", is_agent=True)
PERSON = Caller(MONITOR, "monitor:laptop-tui", "monitor", is_agent=False, paired=True)
EXTENSION = Caller(4, "extension:chrome", "extension", is_agent=False)


def test_connections_hold_what_the_socket_layer_reported():
    conns = Connections()
    assert 1 not in conns and not conns.person_present()
    conns.opened(1, person=False)
    assert 1 in conns and not conns.person_present()
    conns.changed(1, person=True)  # it paired
    assert conns.person_present()
    conns.changed(1, person=False)  # its pairing was revoked
    assert 1 in conns and not conns.person_present()
    conns.closed(1)
    conns.changed(1, person=True)  # a pairing that finished after the close opens nothing
    assert 1 not in conns and not conns.person_present()
    conns.closed(1)  # closing twice is harmless


def test_places_name_only_paired_connected_tools_that_show_the_session():
    """The TUI shows every session's approval requests; the extension's side panel only those
    of the sessions its tabs follow (it subscribed to them); an unpaired tool is no place."""
    conns = Connections()
    assert conns.places("s1") == ()
    conns.opened(1, person=True, tool=("extension", "extension:chrome"))
    assert conns.places("s1") == ()  # follows no tab of s1: its panel would not list it
    conns.subscribed(1, ["s1"])
    assert conns.places("s1") == ("the extension's side panel (extension:chrome)",)
    assert conns.places("s2") == ()
    conns.opened(2, person=True, tool=("monitor", "monitor:laptop-tui"))
    assert conns.places("s2") == ("the TUI (monitor:laptop-tui)",)
    assert len(conns.places("s1")) == 2
    conns.opened(3, person=False)  # an agent, or a tool that only declared a role
    conns.subscribed(3, "*")
    assert len(conns.places("s1")) == 2
    conns.changed(1, person=False)  # its pairing was revoked
    assert conns.places("s1") == ("the TUI (monitor:laptop-tui)",)
    conns.changed(1, person=True, tool=("extension", "extension:chrome"))  # paired again
    assert len(conns.places("s1")) == 2
    conns.closed(2)
    assert conns.places("s2") == ()


def label(sid: str, source: str, step: int = 0) -> rq.Label:
    return rq.Label(id="l", session_id=sid, step=step, action="click('1')", items=["yes"],
                    source=source)  # fmt: skip


def scored_step(core: SessionCore) -> str:
    """A session whose step 0 scored click('1') and click('2') (a label names one of them)."""
    sid = started(core)
    job = score_job(core, sid)
    core.score_done(job, step_score(0.9, 0.8), Timing(total_ms=1))
    assert job.step == 0
    return sid


def test_handle_routes_each_step_and_records_who_labelled():
    core = make_core()
    sid = started(core)
    observed = core.handle(AGENT, rq.Observe(id="o", session_id=sid, url="http://a/", axtree="x"))
    assert kinds(observed) == ["record:observation", "reply:observed", "publish:observed"]
    assert next(e for e in observed if isinstance(e, Reply)).conn == OWNER
    score = rq.Score(id="c", session_id=sid, candidates=[{"action": "click('1')"}])
    (job,) = [e for e in core.handle(AGENT, score) if isinstance(e, RunScore)]
    assert (job.conn, job.request_id, job.owner, job.step) == (OWNER, "c", OWNER, 1)
    core.score_done(job, step_score(0.9), Timing(total_ms=1))
    recorded = core.handle(PERSON, label(sid, "person", step=1))
    (row,) = [e for e in recorded if isinstance(e, LabelRecord)]
    assert row.by == "monitor:laptop-tui"
    mode = core.handle(PERSON, rq.SessionMode(id="m", session_id=sid, mode="watch"))
    assert "reply:mode.set" in kinds(mode) and core.get(sid).mode == "watch"
    ended = core.handle(AGENT, rq.SessionEnd(id="e", session_id=sid, outcome="success"))
    assert kinds(ended)[0] == "record:session_ended" and core.get(sid, open_only=False).ended
    with pytest.raises(UnknownSessionError):
        core.handle(AGENT, rq.Action(id="a", session_id="nope", action="click('1')"))


def test_a_persons_verb_needs_a_paired_caller_even_past_the_socket_layer():
    core = make_core()
    sid = scored_step(core)
    for msg in (rq.SessionMode(id="m", session_id=sid, mode="stop"), label(sid, "person")):
        verb = msg.person_verb()
        assert verb is not None
        with pytest.raises(UnauthorizedError, match=f"{msg.type}: may not {verb}: 'agent'"):
            core.handle(AGENT, msg)
    assert core.get(sid).mode == "ask"


def test_environment_labels_and_tree_nodes_come_from_the_agent_holding_the_session():
    core = make_core()
    sid = scored_step(core)
    node = rq.TreeNode(id="t", session_id=sid, node=0, depth=0, status="frontier", event="scored")
    not_env = "label: source 'environment' comes from an agent's connection, not 'extension'"
    with pytest.raises(UnauthorizedError, match=not_env):
        core.handle(EXTENSION, label(sid, "environment"))
    with pytest.raises(UnauthorizedError, match="only an agent's connection reports this, not"):
        core.handle(PERSON, node)
    for msg in (label(sid, "environment"), node):
        with pytest.raises(UnauthorizedError, match="is held by another connection"):
            core.handle(OTHER_AGENT, msg)
    assert kinds(core.handle(AGENT, node))[0] == "record:tree_node"
    core.connections.closed(OWNER)  # the holder left: another agent may go on
    assert kinds(core.handle(OTHER_AGENT, label(sid, "environment")))[0] == "record:label"
    core.check_agent_holds(OTHER_AGENT, sid, "hook.grant")
    assert core.owns(OWNER, sid) and not core.owns(3, sid) and core.owner_of("nope") is None
