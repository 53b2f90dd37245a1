"""The blocking client's methods are generated from the async ones: the committed sync_api.py
is what the generator writes now, an async method added without regenerating makes it stale
(and the regenerated code runs it on the private loop), and a signature the generator cannot
carry over is refused with a clear error."""

from __future__ import annotations

import asyncio
import inspect
import threading
import types
from pathlib import Path

import pytest
from webshepherd.protocol.client import AsyncClient, SessionHandle
from webshepherd.protocol.client.gen_sync import (
    TARGET,
    GenerationError,
    coroutine_methods,
    generate,
    main,
    session_calls,
)
from webshepherd.protocol.client.sync import Client


class GrownClient(AsyncClient):
    """The async client with one more coroutine method (as when a message kind is added)."""

    async def echo(self, text: str, *, times: int = 2) -> str:
        """``text`` ``times`` over, with the name of the thread it ran on."""
        await asyncio.sleep(0)
        return f"{text * times} on {threading.current_thread().name}"


def _load(text: str) -> types.ModuleType:
    module = types.ModuleType("grown_sync_api")
    exec(compile(text, "<generated>", "exec"), module.__dict__)
    return module


def test_the_committed_file_is_current() -> None:
    assert TARGET.read_text("utf-8") == generate(), "run `make sync-client`"
    assert main(["--check"]) == 0


def test_a_new_async_method_makes_it_stale_until_regenerated(tmp_path: Path) -> None:
    grown = generate(GrownClient, SessionHandle)
    assert grown != TARGET.read_text("utf-8")
    assert "    def echo(self, text: str, *, times: int = 2) -> str:\n" in grown
    stale = tmp_path / "sync_api.py"
    stale.write_text(grown, "utf-8")
    assert main(["--check", "--out", str(stale)]) == 1
    assert stale.read_text("utf-8") == grown  # --check writes nothing
    assert main(["--out", str(stale)]) == 0 and main(["--check", "--out", str(stale)]) == 0
    assert stale.read_text("utf-8") == TARGET.read_text("utf-8")


def test_the_regenerated_twin_runs_the_new_method_on_the_private_loop() -> None:
    module = _load(generate(GrownClient, SessionHandle))
    twin = module._ClientMethods.echo
    assert inspect.signature(twin) == inspect.signature(GrownClient.echo)
    assert twin.__doc__ == GrownClient.echo.__doc__

    class GrownSync(module._ClientMethods, Client):
        """The regenerated methods over sync.Client's hand-written machinery."""

        _start, _run, _session = Client._start, Client._run, Client._session

    client = GrownSync("ws://127.0.0.1:9/v1", "x", daemon_wait_s=0.0)
    try:
        assert isinstance(client.aio, GrownClient) and client.aio.daemon_wait_s == 0.0
        assert client.echo("ab", times=3) == "ababab on webshepherd-client"
    finally:
        client.close()


def test_methods_come_bases_first_in_source_order() -> None:
    names = list(coroutine_methods(GrownClient, frozenset({"close"})))
    assert names[:2] == ["connect", "call"] and names[2] == "start_session"
    assert names[-1] == "echo" and "close" not in names
    # the handle's are inherited (session_api.py's SessionCalls), in the client's order
    forwarded = [mark.name for _, mark in session_calls(AsyncClient) if mark.forward]
    assert list(coroutine_methods(SessionHandle)) == forwarded
    assert forwarded[:4] == ["observe", "score", "act", "label"]


class Local:
    """A class of this module, used in a signature."""


class Welcome:
    """Named like the reply :meth:`AsyncClient.connect` returns, meaning something else."""


class Odd(AsyncClient):
    async def odd(self, value: Hidden) -> None:  # noqa: F821 (the point)
        """Annotated with a name its module does not define."""


class Clash(AsyncClient):
    async def greet(self) -> Welcome:
        """Returns this module's ``Welcome``, not the reply."""
        return Welcome()


class Static(AsyncClient):
    @staticmethod
    async def helper(value: int) -> int:
        """No ``self``: its first parameter is not the client."""
        return value


class Elsewhere(SessionHandle):
    async def local(self) -> Local:
        """Returns a class of this module."""
        return Local()


def test_a_name_it_cannot_import_is_a_clear_error() -> None:
    with pytest.raises(GenerationError, match=r"Odd\.odd: 'Hidden' is not a module-level name"):
        generate(Odd, SessionHandle)


def test_one_name_with_two_meanings_is_a_clear_error() -> None:
    with pytest.raises(GenerationError, match="'Welcome' means two things"):
        generate(Clash, SessionHandle)


def test_a_static_coroutine_is_a_clear_error() -> None:
    with pytest.raises(GenerationError, match=r"Static\.helper: not a method taking self"):
        generate(Static, SessionHandle)


def test_a_class_made_inside_a_function_is_a_clear_error() -> None:
    class Inner(AsyncClient):
        """Not importable by the generated module."""

    with pytest.raises(GenerationError, match="Inner is not a module-level class"):
        generate(Inner, SessionHandle)


def test_a_name_of_another_module_is_imported_from_there() -> None:
    module = _load(generate(AsyncClient, Elsewhere))
    assert module.Local is Local and module.Elsewhere is Elsewhere
    twin = module._SessionMethods.local
    assert (twin.__doc__, inspect.signature(twin)) == (
        Elsewhere.local.__doc__,
        inspect.signature(Elsewhere.local),
    )
