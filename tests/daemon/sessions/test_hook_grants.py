"""The book of page-hook keys: grant, redeem, spend, expire, bound."""

from __future__ import annotations

import pytest
from webshepherd.daemon.sessions.hook_grants import HookGrants
from webshepherd.protocol.errors import ErrorCode, UnauthorizedError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_keys_are_fresh_and_open_only_their_session() -> None:
    book = HookGrants()
    a, b = book.grant("s1"), book.grant("s2")
    assert a != b and len(a) >= 40
    assert (book.redeem(a), book.redeem(b), book.redeem(a)) == ("s1", "s2", "s1")


def test_a_start_key_is_spent_once() -> None:
    book = HookGrants()
    key = book.grant(None)
    assert book.redeem(key) is None
    with pytest.raises(UnauthorizedError) as info:
        book.redeem(key)
    assert info.value.code is ErrorCode.UNAUTHORIZED


def test_keys_expire_and_go_with_their_session() -> None:
    clock = Clock()
    book = HookGrants(ttl_s=10, clock=clock)
    old, kept = book.grant("s1"), book.grant("s2")
    clock.now = 10.0
    with pytest.raises(UnauthorizedError):
        book.redeem(old)
    with pytest.raises(UnauthorizedError):
        book.redeem(kept)
    key = book.grant("s3")
    book.drop_session("s3")
    with pytest.raises(UnauthorizedError):
        book.redeem(key)


def test_the_book_is_bounded() -> None:
    book = HookGrants(limit=3)
    first = book.grant("s0")
    for i in range(3):
        book.grant(f"s{i + 1}")
    assert len(book) == 3
    with pytest.raises(UnauthorizedError):
        book.redeem(first)


def test_a_keys_reply_key_is_its_own_and_not_derivable_from_it() -> None:
    """The reply key is the same for a key each time (the agent's grant, the extension's
    redeem), differs between keys and between daemons, and is not the key."""
    book, other = HookGrants(), HookGrants()
    a, b = book.grant(None), book.grant(None)
    assert book.reply_key(a) == book.reply_key(a) != book.reply_key(b)
    assert book.reply_key(a) != other.reply_key(a)  # a per-daemon secret, not a hash of the key
    assert a not in book.reply_key(a) and len(book.reply_key(a)) == 43
