"""The generated blocking methods: each public coroutine of :class:`AsyncClient` and
:class:`SessionHandle` has a twin in :class:`Client` / :class:`SyncSession` with its whole
signature and docstring, and the twins carry a session's calls to a real daemon on loopback
(scripted judge) and back."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest
from webshepherd.protocol.client import AsyncClient, SessionHandle
from webshepherd.protocol.client.sync import Client, SyncSession
from webshepherd.protocol.client.sync_api import _ClientMethods, _SessionMethods
from webshepherd.protocol.common import Observation
from webshepherd.protocol.replies import Scored

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

URL = "http://shop.test/"
CHECKLIST = "Checklist 1: Search for USB-C cables\nChecklist 2: Open the cheapest"
OBS = Observation(url=URL, axtree="RootWebArea 'Shop'\n\t[12] searchbox 'Search products'")


@pytest.mark.parametrize(
    ("aio", "sync", "generated"),
    [(AsyncClient, Client, _ClientMethods), (SessionHandle, SyncSession, _SessionMethods)],
)
def test_every_coroutine_has_a_generated_twin_with_its_signature(
    aio: type, sync: type, generated: type
) -> None:
    names = [n for n, f in inspect.getmembers(aio) if inspect.iscoroutinefunction(f)]
    names = [n for n in names if not n.startswith("_")]
    assert len(names) >= 9, names
    for name in names:
        fn, twin = getattr(aio, name), getattr(sync, name)
        assert not inspect.iscoroutinefunction(twin), name
        if name != "close":  # sync.Client's own: it also stops the private loop
            assert twin is vars(generated)[name], name
            assert twin.__doc__ == fn.__doc__, name
        theirs, ours = inspect.signature(fn), inspect.signature(twin)
        assert ours.parameters == theirs.parameters, name
        # a session's blocking form is the generated class's type parameter (sync.SyncSession)
        expected = "_Session" if theirs.return_annotation == "SessionHandle" else None
        assert ours.return_annotation == (expected or theirs.return_annotation), name


def test_the_constructor_is_the_async_clients() -> None:
    assert inspect.signature(Client.__init__) == inspect.signature(AsyncClient.__init__)
    client = Client("ws://127.0.0.1:9/v1", "x", daemon_wait_s=0.25, backoff_max_s=2.0)
    try:
        assert (client.aio.daemon_wait_s, client.aio.backoff_max_s) == (0.25, 2.0)
    finally:
        client.close()


async def test_a_session_round_trip_through_the_generated_methods(tmp_path: Path) -> None:
    judge = ScriptedJudge({(URL, "click('12')"): (0.75, (2, 0), "Searching helps.")})
    async with scripted_daemon(tmp_path, judge) as server:

        def blocking() -> tuple[SyncSession, Scored, list[str]]:
            with Client(server.url, TEST_TOKEN, name="sync-api-test") as client:
                session = client.start_session("Buy a cable", checklist=CHECKLIST, observation=OBS)
                assert isinstance(session, SyncSession) and session.client is client
                assert len(session.checklist(timeout=30).items) == 2
                scored = session.score([("The box is [12].", "click('12')")], approval="never")
                session.act("click('12')", step=scored.step)
                labelled = session.label(scored.step, "click('12')", ["yes", "no"])
                assert (labelled.session_id, labelled.step) == (session.session_id, scored.step)
                session.end("success")
                kinds = [event["type"] for event in client.session(session.session_id).events]
                assert client.ping() > 0
                return session, scored, kinds

        session, scored, kinds = await asyncio.to_thread(blocking)  # the daemon runs here
    assert [r.reward for r in scored.results] == [0.75] and scored.best == 0
    assert session.session_id == scored.session_id and session.intent == "Buy a cable"
    assert kinds == [
        "session.started",
        "observed",
        "checklist",
        "scored",
        "action",
        "session.ended",
    ]
