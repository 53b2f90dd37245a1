"""A session handle's calls are generated from :class:`AsyncClient`'s methods marked
``@session_call``: the committed session_api.py is what the generator writes now, a newly
marked method gets its ``SessionClient`` declaration and a forwarder that passes the handle's
session id and each parameter as declared, every marked method has its handle twin with the
same signature less ``session_id``, the handle's public calls are what they were, a forwarder
carries a label to a real daemon and back, and a mark that cannot be carried over is a clear
error."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
from webshepherd.protocol.client import AsyncClient, SessionHandle
from webshepherd.protocol.client.calls import session_call
from webshepherd.protocol.client.gen_sync import (
    SESSION_TARGET,
    GenerationError,
    coroutine_methods,
    generate_session_api,
    main,
    session_calls,
)
from webshepherd.protocol.client.session import SessionRef
from webshepherd.protocol.client.session_api import SessionCalls, SessionClient
from webshepherd.protocol.common import Observation

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

URL = "http://shop.test/"
CHECKLIST = "Checklist 1: Search for USB-C cables\nChecklist 2: Open the cheapest"
OBS = Observation(url=URL, axtree="RootWebArea 'Shop'\n\t[12] searchbox 'Search products'")


class GrownClient(AsyncClient):
    """The async client with one more session call (as when a message kind is added)."""

    @session_call("shout")
    async def yell(
        self, session_id: str, text: str, /, times: int = 2, *rest: str, loud: bool = False
    ) -> str:
        """``text`` ``times`` over, then ``rest``, for ``session_id``."""
        return f"{session_id}: {text * times}{''.join(rest)}{'!' if loud else ''}"


def _less_session_id(fn: Callable[..., object]) -> inspect.Signature:
    sig = inspect.signature(fn)
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name != "session_id"])


def _load(text: str) -> types.ModuleType:
    module = types.ModuleType("grown_session_api")
    exec(compile(text, "<generated>", "exec"), module.__dict__)
    return module


def test_the_committed_file_is_current() -> None:
    assert SESSION_TARGET.read_text("utf-8") == generate_session_api(), "run `make sync-client`"


async def test_a_newly_marked_method_gets_a_declaration_and_a_forwarder(tmp_path: Path) -> None:
    text = generate_session_api(GrownClient)
    assert text != SESSION_TARGET.read_text("utf-8")
    stale = tmp_path / "session_api.py"
    stale.write_text(text, "utf-8")
    assert main(["--check", "--session-out", str(stale)]) == 1
    module = _load(text)
    declared = module.SessionClient.yell
    assert inspect.signature(declared) == inspect.signature(GrownClient.yell)
    shout = module.SessionCalls.shout
    assert inspect.signature(shout) == _less_session_id(GrownClient.yell)
    assert shout.__doc__ == GrownClient.yell.__doc__ and not hasattr(module.SessionCalls, "yell")
    assert inspect.iscoroutinefunction(shout)

    class GrownHandle(module.SessionCalls, SessionRef[GrownClient]):  # type: ignore[name-defined,misc]
        """A handle over the regenerated calls."""

    client = GrownClient("ws://127.0.0.1:9/v1", "x", daemon_wait_s=0.0)
    handle = GrownHandle(client, "s-7", "Buy a cable")
    assert await handle.shout("ab", 3, "c", "d", loud=True) == "s-7: abababcd!"
    assert await handle.shout("ab") == "s-7: abab"
    assert "shout" in coroutine_methods(GrownHandle)  # the blocking twin is generated from it


def test_every_marked_method_has_its_handle_twin() -> None:
    forwarded = []
    for name, mark in session_calls(AsyncClient):
        fn = getattr(AsyncClient, name)
        declared = vars(SessionClient)[name]
        assert inspect.signature(declared) == inspect.signature(fn), name
        if not mark.forward:
            assert not hasattr(SessionHandle, name), name
            continue
        forwarded.append(mark.name)
        twin = getattr(SessionHandle, mark.name)
        assert twin is vars(SessionCalls)[mark.name], mark.name  # generated, not hand-written
        assert inspect.signature(twin) == _less_session_id(fn), mark.name
        assert twin.__doc__ == fn.__doc__, mark.name
    assert sorted(forwarded) == sorted(PUBLIC)
    assert [name for name, mark in session_calls(AsyncClient) if not mark.forward] == ["ping"]


#: The handle's calls as they were before they were generated (bound: no ``self``; the
#: annotations resolved, so an alias and what it stands for read the same; module prefixes
#: left out).
PUBLIC = {
    "act": "(action: str, thought: str | None = None, step: int | None = None, source: Literal['agent', 'human'] = 'agent') -> ActionRecorded",  # noqa: E501
    "checklist": "(timeout: float | None = 60.0) -> Checklist",
    "commit_check": "(request: HeldRequest, *, timeout: float | None = None) -> CommitDecided",
    "end": "(outcome: Literal['success', 'failure', 'unknown'] = 'unknown', answer: str | None = None) -> SessionEnded",  # noqa: E501
    "label": "(step: int, action: str, items: Sequence[Literal['yes', 'in_progress', 'no']], source: Literal['environment', 'person', 'replay', 'rollout'] = 'environment', note: str | None = None) -> LabelRecorded",  # noqa: E501
    "observe": "(url: str, axtree: str, screenshot: Screenshot | Mapping[str, object] | None = None, elements: Mapping[str, ElementFacts | Mapping[str, object]] | None = None) -> Observed",  # noqa: E501
    "score": "(candidates: Sequence[Candidate | Mapping[str, object] | tuple[str, str] | str], observation: Observation | Mapping[str, object] | None = None, samples: int | None = None, approval: Literal['auto', 'always', 'never'] = 'auto', *, on_progress: Callable[[ScoreProgress], object] | None = None, timeout: float | None = None) -> Scored",  # noqa: E501
    "set_mode": "(mode: Literal['ask', 'watch', 'stop']) -> ModeSet",
    "tree_node": "(node: TreeNodeFields) -> TreeNodeRecorded",
}  # fmt: skip
_PREFIXES = r"\b(webshepherd\.protocol\.(replies|common)|collections\.abc|typing)\."


def test_the_handles_public_calls_are_what_they_were() -> None:
    handle = SessionHandle(AsyncClient("ws://127.0.0.1:9/v1", "x"), "s-1", "Buy a cable")
    names = [n for n, f in inspect.getmembers(SessionHandle) if inspect.iscoroutinefunction(f)]
    assert names == sorted(PUBLIC)
    for name in names:
        bound = getattr(handle, name)
        sig, hints = inspect.signature(bound), typing.get_type_hints(bound)
        params = [p.replace(annotation=hints[p.name]) for p in sig.parameters.values()]
        text = str(sig.replace(parameters=params, return_annotation=hints["return"]))
        assert re.sub(_PREFIXES, "", text) == PUBLIC[name], name


async def test_a_generated_forwarder_carries_a_label_to_a_real_daemon(tmp_path: Path) -> None:
    judge = ScriptedJudge({(URL, "click('12')"): (0.75, (2, 0), "Searching helps.")})
    async with (
        scripted_daemon(tmp_path, judge) as server,
        AsyncClient(server.url, TEST_TOKEN, name="session-api-test") as client,
    ):
        session = await client.start_session("Buy", checklist=CHECKLIST, observation=OBS)
        assert type(session).label is SessionCalls.label
        scored = await session.score(["click('12')"], approval="never")
        labelled = await session.label(scored.step, "click('12')", ["yes", "no"], note="ok")
        assert (labelled.session_id, labelled.step) == (session.session_id, scored.step)
        ended = await session.end("success", "$4.99")
        assert (ended.session_id, ended.outcome, ended.answer) == (
            session.session_id,
            "success",
            "$4.99",
        )
    assert [r.reward for r in scored.results] == [0.75]


class NotACoroutine(AsyncClient):
    @session_call()
    def plain(self, session_id: str) -> str:
        """Marked, but blocking."""
        return session_id


class NoSessionId(AsyncClient):
    @session_call()
    async def loose(self, text: str) -> str:
        """Marked, but takes no session id."""
        return text


class TwoAct(AsyncClient):
    @session_call("act")
    async def again(self, session_id: str) -> str:
        """Marked with a name the handle already has."""
        return session_id


class Loopy(AsyncClient):
    @session_call()
    async def handle(self, session_id: str) -> SessionHandle:
        """Returns a class of session.py, which imports session_api.py."""
        return SessionHandle(self, session_id, "")


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (NotACoroutine, r"NotACoroutine\.plain: a session call is a coroutine method"),
        (NoSessionId, r"NoSessionId\.loose: a session call takes session_id first"),
        (TwoAct, r"TwoAct\.again: the handle has 'act'"),
        (Loopy, r"cannot `from webshepherd\.protocol\.client import SessionHandle`"),
    ],
)
def test_a_mark_it_cannot_carry_over_is_a_clear_error(cls: type, message: str) -> None:
    with pytest.raises(GenerationError, match=message):
        generate_session_api(cls)


def test_a_bad_mark_is_refused_where_it_is_made() -> None:
    with pytest.raises(ValueError, match="a name needs a forwarder"):
        session_call("x", forward=False)
    with pytest.raises(ValueError, match="not a method name"):
        session_call("two words")
