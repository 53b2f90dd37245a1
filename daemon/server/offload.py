"""Big frames parsed and big events serialised in a worker process, so the event loop never
waits on the GIL for them; big frames read without copying them over and over.

Parsing and validating a 31 MiB frame (pydantic, from bytes) or serialising a 31 MiB event
holds the GIL for 100-200 ms in one C call: on a worker thread that still stalls the loop
for as long. A process of its own does it instead, behind two pipes: the frame's bytes are
written and the result read into a lazily mapped buffer with the GIL released. The result
crosses as a pickle with its big strings (the AX tree) left out and sent after it as their
code units, read in place on one side and copied into a new ``str`` with the GIL released
on the other (:mod:`str_units`): unpickling the tree's ``str`` held the GIL 20-40 ms. The
worker is started by the first big frame; one that dies is replaced by the next, and its
work done on a thread meanwhile, so nothing is lost. (``ProcessPoolExecutor`` pickles the
frame and reads the result through ``BytesIO`` with the GIL held: 80-150 ms a 31 MiB frame
here.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import logging
import mmap
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Generator
from types import MethodType
from typing import Any

from pydantic import BaseModel
from webshepherd.daemon.server.str_units import Units, text_from_units, units_of, units_view
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.union import ClientMessage, dump, parse_client_message
from websockets import frames
from websockets.asyncio.server import ServerConnection
from websockets.streams import StreamReader

log = logging.getLogger(__name__)

PARSE_OFF_LOOP_BYTES = 256 * 1024  # frames above this are parsed off the loop (a thread)
OFF_PROCESS_BYTES = 2 * 1024 * 1024  # frames and events above this: in the worker process
_HEAD = struct.Struct("!cQ")  # an operation (or a result's status) and the payload's length
_LENGTH = struct.Struct("!Q")
LIFT_CHARS = 64 * 1024  # strings above this cross the pipes as their code units


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, n: int) -> memoryview:
    """``n`` bytes from ``fd`` into an anonymous mapping (pages appear as the kernel fills
    them, the GIL released meanwhile)."""
    buf = memoryview(mmap.mmap(-1, max(n, 1)))[:n]
    got = 0
    while got < n:
        k = os.readv(fd, [buf[got:]])
        if k == 0:
            raise EOFError("the offload worker closed its pipe")
        got += k
    return buf


def _message(fd: int) -> tuple[bytes, memoryview]:
    head = _read_exactly(fd, _HEAD.size)
    op, n = _HEAD.unpack(head)
    return op, _read_exactly(fd, n)


Parts = list[bytes | memoryview]


def _send(fd: int, op: bytes, parts: Parts) -> None:
    _write_all(fd, _HEAD.pack(op, sum(len(p) for p in parts)))
    for part in parts:
        _write_all(fd, part)


class _Packer(pickle.Pickler):
    """Pickles an object with its big strings left out, to be sent after it as their code
    units (read in place: :func:`units_view`); a string met again is named, not sent."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.texts: list[tuple[str, Units]] = []
        self._index: dict[int, int] = {}  # id of a lifted string -> its place in texts

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is not str or len(obj) <= LIFT_CHARS:
            return None
        index = self._index.get(id(obj))
        if index is None:
            index = self._index[id(obj)] = len(self.texts)
            self.texts.append((obj, units_of(obj)))
        units = self.texts[index][1]
        return (index, units.kind, units.max_char, units.length)


class _Unpacker(pickle.Unpickler):
    """Unpickles a packed object, making its big strings from the code units that follow
    it (the copy with the GIL released: :func:`text_from_units`)."""

    def __init__(self, head: memoryview, units: memoryview) -> None:
        super().__init__(io.BytesIO(head))
        self.units, self.at = units, 0
        self.made: list[str] = []

    def persistent_load(self, pid: Any) -> Any:
        index, kind, max_char, length = pid
        if index < len(self.made):
            return self.made[index]
        if index != len(self.made):
            raise pickle.UnpicklingError(f"string {index} out of order")
        units = Units(kind, max_char, length)
        data = self.units[self.at : self.at + units.nbytes]
        self.at += units.nbytes
        self.made.append(text_from_units(units, data))
        return self.made[-1]


def pack(obj: Any) -> Parts:
    """``obj`` as parts to send: the pickle's length, the pickle, its big strings' units."""
    buf = io.BytesIO()
    packer = _Packer(buf)
    packer.dump(obj)
    head = buf.getvalue()
    return [_LENGTH.pack(len(head)), head, *(units_view(t, u) for t, u in packer.texts)]


def unpack(data: memoryview) -> Any:
    """The object of :func:`pack`'s parts, received into one writable buffer."""
    (n,) = _LENGTH.unpack(data[: _LENGTH.size])
    head = data[_LENGTH.size : _LENGTH.size + n]
    return _Unpacker(head, data[_LENGTH.size + n :]).load()


def worker_main(read_fd: int, write_fd: int) -> None:
    """The worker: ``P`` parses a client frame (``O`` and the packed message, or ``E`` and
    the protocol error's text); ``D`` serialises a packed model (``O`` and the packed
    frame)."""
    while True:
        try:
            op, payload = _message(read_fd)
        except EOFError:
            return
        if op == b"P":
            try:
                msg = parse_client_message(bytes(payload))
            except ProtocolError as exc:
                _send(write_fd, b"E", [exc.message.encode()])
                continue
            _send(write_fd, b"O", pack(msg))
        else:
            _send(write_fd, b"O", pack(dump(unpack(payload))))


class _Worker:
    """One worker process and its two pipes; one request at a time."""

    def __init__(self) -> None:
        to_r, self._to = os.pipe()
        self._from, from_w = os.pipe()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from webshepherd.daemon.server.offload import worker_main; "
                f"worker_main({to_r}, {from_w})",
            ],
            pass_fds=(to_r, from_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        os.close(to_r)
        os.close(from_w)
        self.lock = threading.Lock()

    def call(self, op: bytes, payload: Parts) -> tuple[bytes, memoryview]:
        with self.lock:
            _send(self._to, op, payload)
            return _message(self._from)

    def close(self) -> None:
        for fd in (self._to, self._from):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Offload:
    """The daemon's worker process for its biggest parsing and serialising (above the
    thresholds only: small work stays inline or on a thread, where it costs less)."""

    def __init__(self) -> None:
        self._worker: _Worker | None = None
        self._closed = False
        self._starting = threading.Lock()

    def close(self) -> None:
        """Stop the worker for good (the daemon is stopping)."""
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()

    def _call(self, op: bytes, payload: Parts) -> tuple[bytes, memoryview] | None:
        """On a thread: the worker's answer, or None when it cannot be had."""
        with self._starting:
            if self._worker is None and not self._closed:
                self._worker = _Worker()
            worker = self._worker
        if worker is None:
            return None
        try:
            return worker.call(op, payload)
        except (OSError, EOFError):
            log.warning("the offload worker died; a new one starts with the next frame")
            with self._starting:
                if self._worker is worker:
                    self._worker = None
            worker.close()
            return None

    def _parse_in_worker(self, raw: bytes | memoryview | str) -> ClientMessage:
        data = raw.encode() if isinstance(raw, str) else raw
        answer = self._call(b"P", [data])
        if answer is None:
            return parse_client_message(bytes(data))
        status, payload = answer
        if status == b"E":
            raise ProtocolError(bytes(payload).decode())
        msg: ClientMessage = unpack(payload)
        return msg

    def _dump_in_worker(self, message: BaseModel) -> str:
        answer = self._call(b"D", pack(message))
        if answer is None:
            return dump(message)
        frame: str = unpack(answer[1])
        return frame

    async def parse(self, raw: bytes | memoryview | str) -> ClientMessage:
        """Parse and validate a client frame: inline when small, on a thread above
        :data:`PARSE_OFF_LOOP_BYTES`, in the worker above :data:`OFF_PROCESS_BYTES`."""
        if len(raw) <= PARSE_OFF_LOOP_BYTES:
            return parse_client_message(bytes(raw) if isinstance(raw, memoryview) else raw)
        if len(raw) <= OFF_PROCESS_BYTES:
            small = bytes(raw) if isinstance(raw, memoryview) else raw  # pydantic: no views
            return await asyncio.to_thread(parse_client_message, small)
        return await asyncio.to_thread(self._parse_in_worker, raw)

    async def dump(self, message: BaseModel, size_hint: int) -> str:
        """Serialise a message: in the worker when ``size_hint`` (its big fields' length)
        is above :data:`OFF_PROCESS_BYTES`."""
        if size_hint <= OFF_PROCESS_BYTES:
            return dump(message)
        return await asyncio.to_thread(self._dump_in_worker, message)


class _Payload(mmap.mmap):
    """A big frame's payload, unmasked chunk by chunk as it arrived."""


def _apply_mask(data: bytes | bytearray | memoryview, mask: bytes | bytearray) -> Any:
    """websockets' unmasking, skipped for a :class:`_Payload` (already unmasked)."""
    if isinstance(data, memoryview) and isinstance(data.obj, _Payload):
        return data
    return _unmask(data, mask)


_unmask = frames.apply_mask
frames.apply_mask = _apply_mask  # Frame.parse looks it up at each frame


def _feed_data(reader: Any, data: bytes | bytearray) -> None:
    if reader.eof:
        raise EOFError("stream ended")
    big = reader.big
    if big is None:
        reader.buffer += data
        return
    at = reader.big_len
    k = min(len(big) - at, len(data))
    key = reader.mask[at % 4 :] + reader.mask[: at % 4]  # the mask as it falls at ``at``
    big[at : at + k] = _unmask(memoryview(data)[:k], key)
    reader.big_len += k
    if k < len(data):
        reader.buffer += memoryview(data)[k:]


def _read_exact(reader: Any, n: int) -> Generator[None, None, Any]:
    """websockets' ``read_exact``; a big payload is unmasked and written, as its chunks
    arrive, into an anonymous mapping of its size (the kernel zeroes its pages lazily) and
    handed over whole. Growing one ``bytearray`` copied it again and again (~50 ms of the
    loop's read callbacks for 31 MiB here), and unmasking it whole held the loop for
    20-90 ms. The read before a payload's is its mask's (a client's frames are masked)."""
    if n < PARSE_OFF_LOOP_BYTES or len(reader.buffer) >= n:
        data = yield from StreamReader.read_exact(reader, n)
        reader.mask = data
        return data
    if len(reader.mask) != 4:  # not a masked payload: websockets' own way
        return (yield from StreamReader.read_exact(reader, n))
    big = _Payload(-1, n)
    have = len(reader.buffer)
    big[:have] = _unmask(reader.buffer, reader.mask)
    del reader.buffer[:]
    reader.big, reader.big_len = big, have
    try:
        while reader.big_len < n:
            if reader.eof:
                raise EOFError(f"stream ends after {reader.big_len} bytes, expected {n} bytes")
            yield
        return memoryview(big)
    finally:
        reader.big, reader.mask = None, b""


def gather_big_payloads(reader: StreamReader) -> None:
    """Make a server's reader gather big payloads (:func:`_read_exact`) from its next frame
    on: they come out of ``Frame.parse`` as views of a :class:`_Payload`."""
    r: Any = reader
    r.big, r.big_len, r.mask = None, 0, b""
    r.feed_data = MethodType(_feed_data, reader)
    r.read_exact = MethodType(_read_exact, reader)


class PayloadConnection(ServerConnection):
    """A server connection whose big payloads are gathered by :func:`_read_exact` once
    :meth:`gather_big_payloads` is called, and handed over as gathered: websockets would
    join a message's frames into new bytes (a 31 MiB copy on the loop). A one-frame message
    with such a payload goes through websockets' assembler as a small stand-in, in order
    with the others; :meth:`recv_payload` gives back the payload in its place."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._payloads: deque[tuple[bytes, memoryview]] = deque()

    def gather_big_payloads(self) -> None:
        """From the next frame on."""
        gather_big_payloads(self.protocol.reader)

    def process_event(self, event: Any) -> None:
        data = getattr(event, "data", None)
        if (
            isinstance(event, frames.Frame)
            and event.fin
            and event.opcode in (frames.Opcode.TEXT, frames.Opcode.BINARY)
            and isinstance(data, memoryview)
            and isinstance(data.obj, _Payload)
        ):
            stand_in = bytes(8)  # a new object each time: identified by ``is``
            self._payloads.append((stand_in, data))
            event = dataclasses.replace(event, data=stand_in)
        super().process_event(event)

    async def recv_payload(self) -> bytes | memoryview:
        """The next message's bytes (a text message's undecoded): a big payload as gathered."""
        raw = await self.recv(decode=False)
        if self._payloads and self._payloads[0][0] is raw:
            return self._payloads.popleft()[1]
        return raw
