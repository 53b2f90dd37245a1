"""Big strings moved as their code units (issue 17, item 2): every kind of ``str`` read in
place and made again equal, with its hash and storage, whatever else the object carries
(interned, its UTF-8 cached by SQLite); the codec fallback gives the same results."""

from __future__ import annotations

import gc
import sqlite3
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from webshepherd.daemon.server import str_units
from webshepherd.daemon.server.str_units import (
    Units,
    encode_units,
    in_place,
    text_from_units,
    units_of,
    units_view,
)

KINDS = [("plain ascii\n", 1, 0x7F), ("caf\xe9 cr\xe8me", 1, 0xFF), ("\u2603 snow", 2, 0xFFFF)]
KINDS.append(("smile \U0001f600", 4, 0x10FFFF))


def _new(text: str) -> str:
    return "".join(list(text))


def _bound_by_sqlite(text: str) -> str:
    """``text`` after SQLite bound it: CPython caches its UTF-8 in the object."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x TEXT)")
    db.execute("INSERT INTO t VALUES (?)", (text,))
    return text


def _round_trip(text: str) -> tuple[Units, str]:
    units = units_of(text)
    return units, text_from_units(units, memoryview(bytearray(units_view(text, units))))


def test_this_interpreter_moves_strings_in_place():
    """CI's CPython: the fast path is the one the other tests check."""
    assert sys.implementation.name == "cpython"
    assert in_place()


@pytest.mark.parametrize("how", ["plain", "interned", "utf8_cached"])
@pytest.mark.parametrize(("sample", "kind", "max_char"), KINDS)
def test_every_kind_round_trips_with_its_storage_and_hash(sample, kind, max_char, how):
    text = _new(sample * 5000)
    if how == "interned":
        text = sys.intern(text)
    elif how == "utf8_cached":
        before = sys.getsizeof(text)
        text = _bound_by_sqlite(text)
        assert (kind == 1 and max_char == 0x7F) or sys.getsizeof(text) > before
    units, made = _round_trip(text)
    assert units == Units(kind, max_char, len(text))
    assert made == text and hash(made) == hash(text)
    assert made is not text and units_of(made) == units
    assert made.isascii() == (max_char == 0x7F)
    assert bytes(units_view(text, units)) == encode_units(text, units)


def test_a_view_keeps_its_string_alive():
    units = units_of(_new("caf\xe9" * 100_000))
    view = units_view(_new("caf\xe9" * 100_000), units)  # the only reference is the view's
    gc.collect()
    _new("\xff" * 400_000)  # memory a freed string would have given back
    assert bytes(view) == ("caf\xe9" * 100_000).encode("latin-1")


def test_the_empty_string():
    units, made = _round_trip("")
    assert (units, made) == (Units(1, 0x7F, 0), "")


def test_wrong_units_are_refused():
    with pytest.raises(ValueError, match="expected 8"):
        text_from_units(Units(2, 0xFFFF, 4), memoryview(bytearray(6)))
    with pytest.raises(ValueError, match="no such storage"):
        text_from_units(Units(3, 0xFFFF, 2), memoryview(bytearray(6)))
    with pytest.raises(ValueError, match="no such storage"):
        text_from_units(Units(1, 0xFFFF, 2), memoryview(bytearray(2)))


@given(st.text(st.characters(codec=None, exclude_categories=())))
def test_any_text_round_trips(text):
    units, made = _round_trip(text)
    assert made == text and units_of(made) == units
    assert units.kind == max(
        (1 if ord(c) < 0x100 else 2 if ord(c) < 0x10000 else 4 for c in text), default=1
    )


@given(st.text(st.characters(codec=None, exclude_categories=())))
def test_the_codec_fallback_gives_the_same(text):
    fast = _round_trip(text)
    saved = str_units._OFFSETS, str_units._KIND_FIELD
    str_units._OFFSETS = str_units._KIND_FIELD = None
    try:
        assert not in_place()
        slow = _round_trip(text)
    finally:
        str_units._OFFSETS, str_units._KIND_FIELD = saved
    assert slow == fast
