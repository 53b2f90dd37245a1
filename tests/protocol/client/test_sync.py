"""The blocking client is derived from the async one: every public coroutine of
:class:`AsyncClient` and :class:`SessionHandle` has a blocking twin with the same parameters,
and ``Client(...)`` takes :class:`AsyncClient`'s own."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest
from webshepherd.protocol.client import AsyncClient, SessionHandle
from webshepherd.protocol.client.sync import Client, SyncSession


def _public(cls: type, *, coroutines: bool = True) -> dict[str, Callable[..., Any]]:
    return {
        name: fn
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and inspect.iscoroutinefunction(fn) == coroutines
    }


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    return list(inspect.signature(fn).parameters.values())


@pytest.mark.parametrize(("aio", "sync"), [(AsyncClient, Client), (SessionHandle, SyncSession)])
def test_every_coroutine_has_a_blocking_twin_with_its_parameters(aio: type, sync: type) -> None:
    calls = _public(aio)
    assert len(calls) >= 9, calls  # the requests, not an empty comparison
    for name, fn in calls.items():
        twin = getattr(sync, name, None)
        assert twin is not None, f"{sync.__name__} has no {name}"
        assert not inspect.iscoroutinefunction(twin), name
        assert _parameters(twin) == _parameters(fn), name


def test_subscribe_takes_the_async_ones_parameters() -> None:
    assert _parameters(Client.subscribe) == _parameters(AsyncClient.subscribe)


def test_the_client_takes_the_async_clients_parameters() -> None:
    params = _parameters(Client.__init__)
    assert params == _parameters(AsyncClient.__init__)
    assert [p.name for p in params[:3]] == ["self", "url", "token"]


def test_start_session_gives_a_blocking_session() -> None:
    # the generated method returns the class's type parameter, which Client binds to
    # SyncSession (so sync_api.py need not import sync.py); test_sync_api.py checks the object
    assert inspect.signature(Client.start_session).return_annotation == "_Session"
    (base,) = typing.get_args(Client.__orig_bases__[0])
    assert base == typing.ForwardRef("SyncSession")
    assert Client.start_session.__doc__ == AsyncClient.start_session.__doc__


def test_the_parameters_reach_the_async_client() -> None:
    c = Client(url="ws://127.0.0.1:9/v1", token="x", name="sync-test", connect_timeout_s=1.5)
    try:
        assert (c.url, c.aio.info.name, c.aio.connect_timeout_s) == (
            "ws://127.0.0.1:9/v1",
            "sync-test",
            1.5,
        )
        assert not c.connected
    finally:
        c.close()
    with pytest.raises(RuntimeError, match="closed"):
        c.ping()
