"""Big ``str`` objects moved between processes as their code units, copied with the GIL
released.

Decoding a 31 MiB tree into a new ``str`` holds the GIL for 10-60 ms (most of it the
kernel faulting in the new object's pages), and every other thread, the event loop's
included, waits that long. Here the receiving side makes an empty ``str`` of the right
size and kind (``PyUnicode_New``, as C code does) and copies the code units into it with
``memmove``, which ctypes calls with the GIL released; the sending side reads a ``str``'s
code units in place.

Two facts of CPython's layout are used: where a compact string's characters start, and
where its kind (1, 2 or 4 bytes a character) is kept. Both are found at import by looking
at strings whose answers are known, and a round trip of every kind is checked; where
anything does not match (another interpreter, an unexpected layout), the code units are
encoded and decoded instead: the same results, with the GIL held.
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass

_CODECS = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}
_MAX_CHAR = {1: 0xFF, 2: 0xFFFF, 4: 0x10FFFF}
ASCII_MAX = 0x7F


@dataclass(frozen=True)
class Units:
    """How a ``str`` is stored: ``kind`` bytes a character, none above ``max_char``."""

    kind: int
    max_char: int
    length: int  # characters

    @property
    def nbytes(self) -> int:
        return self.kind * self.length


def _fresh(sample: str) -> str:
    """A new ``str`` object equal to ``sample`` (not a shared constant)."""
    return "".join(list(sample))


_as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8
_as_utf8.restype = ctypes.c_char_p
_as_utf8.argtypes = [ctypes.py_object]

# One known string per storage class: its ``max_char``, the string, its kind.
_KNOWN = (
    (ASCII_MAX, "\x01ws\x02", 1),
    (0xFF, "\xe9ws\x02", 1),
    (0xFFFF, "\u0100ws", 2),
    (0x10FFFF, "\U0001f600ws", 4),
)
# Those of several lengths; each also interned and with its UTF-8 cached (as SQLite's
# binding leaves it), which set other bits beside the kind's.
_SAMPLES = [(sample * reps, kind) for _, sample, kind in _KNOWN for reps in (1, 2, 5)]


def _variants(text: str) -> list[str]:
    plain, cached = _fresh(text), _fresh(text)
    _as_utf8(cached)
    return [plain, cached, sys.intern(_fresh(text))]


def _probe_kind_field() -> tuple[int, int] | None:
    """Where a ``str`` keeps its kind: the byte offset of a 32-bit word and the shift of
    its 3-bit field, the one place that holds the right kind in every sample."""
    if sys.implementation.name != "cpython":
        return None
    samples = [(v, kind) for text, kind in _SAMPLES for v in _variants(text)]
    size = min(64, *(sys.getsizeof(v) for v, _ in samples)) // 4  # words inside every sample
    words = [
        [ctypes.c_uint32.from_address(id(v) + 4 * i).value for i in range(size)] for v, _ in samples
    ]
    found = [
        (off * 4, shift)
        for off in range(size)
        for shift in range(30)
        if all((w[off] >> shift) & 7 == kind for w, (_, kind) in zip(words, samples, strict=True))
    ]
    return found[0] if len(found) == 1 else None


def _probe_offsets() -> dict[int, int] | None:
    """Where a compact ``str``'s characters start, per ``max_char`` class, found by looking
    for known characters in known strings."""
    if sys.implementation.name != "cpython":
        return None
    offsets: dict[int, int] = {}
    for max_char, sample, kind in _KNOWN:
        text = _fresh(sample)
        units = text.encode(_CODECS[kind], "surrogatepass")
        raw = ctypes.string_at(id(text), sys.getsizeof(text))
        at = raw.find(units)
        if at <= 0 or raw.count(units) != 1:
            return None
        offsets[max_char] = at
    return offsets


_KIND_FIELD = _probe_kind_field()
_OFFSETS = _probe_offsets()
_new = ctypes.pythonapi.PyUnicode_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_ssize_t, ctypes.c_uint32]


def _kind_by_encoding(text: str) -> int:
    try:
        text.encode("latin-1")
        return 1
    except UnicodeEncodeError:
        return 2 if len(text.encode("utf-16-le", "surrogatepass")) == 2 * len(text) else 4


def units_of(text: str) -> Units:
    """The storage of ``text``: CPython keeps every ``str`` in its narrowest kind, read from
    the object (elsewhere found by encoding)."""
    n = len(text)
    if text.isascii():  # a flag in CPython: no scan
        return Units(1, ASCII_MAX, n)
    if _KIND_FIELD is not None and type(text) is str:
        off, shift = _KIND_FIELD
        kind = (ctypes.c_uint32.from_address(id(text) + off).value >> shift) & 7
    else:
        kind = _kind_by_encoding(text)
    return Units(kind, _MAX_CHAR[kind], n)


def encode_units(text: str, units: Units) -> bytes:
    """``text``'s code units as new bytes (with the GIL held)."""
    return text.encode(_CODECS[units.kind], "surrogatepass")


def units_view(text: str, units: Units) -> memoryview:
    """``text``'s code units in place, read-only; the view keeps ``text`` alive. A copy
    where the layout is unknown."""
    if _OFFSETS is None or type(text) is not str or units.length == 0:
        return memoryview(encode_units(text, units))
    array = (ctypes.c_char * units.nbytes).from_address(id(text) + _OFFSETS[units.max_char])
    array.text = text  # type: ignore[attr-defined]  # the view's memory is the text's
    return memoryview(array).cast("B").toreadonly()


def text_from_units(units: Units, data: memoryview) -> str:
    """A new ``str`` of ``units``'s storage holding ``data`` (writable, ``units.nbytes``
    long), copied with the GIL released. ``data`` must be what :func:`units_view` gave for
    a ``str`` of that storage (the characters are not checked against the kind)."""
    if len(data) != units.nbytes:
        raise ValueError(f"{len(data)} bytes of code units, expected {units.nbytes}")
    if units.kind not in _CODECS or units.max_char > _MAX_CHAR[units.kind]:
        raise ValueError(f"no such storage: {units}")
    if _OFFSETS is None or units.length == 0:
        return str(data, _CODECS[units.kind], "surrogatepass")
    text = _new(units.length, units.max_char)
    source = (ctypes.c_char * units.nbytes).from_buffer(data)
    ctypes.memmove(id(text) + _OFFSETS[units.max_char], source, units.nbytes)
    return text


def in_place() -> bool:
    """Whether this interpreter's strings are read and made in place (else by codecs)."""
    return _OFFSETS is not None and _KIND_FIELD is not None


def _self_check() -> bool:
    """The round trip of samples of each kind, plain, interned and with their UTF-8 cached,
    gives equal strings with equal hashes, and reads the kind each was made with."""
    for text, kind in _SAMPLES:
        for v in _variants(text * 3):
            units = units_of(v)
            made = text_from_units(units, memoryview(bytearray(units_view(v, units))))
            if (
                units.kind != kind
                or made != v
                or hash(made) != hash(v)
                or bytes(units_view(v, units)) != encode_units(v, units)
            ):
                return False
    return True


if not (in_place() and _self_check()):
    _OFFSETS = _KIND_FIELD = None
