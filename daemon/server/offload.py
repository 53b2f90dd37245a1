"""Big frames parsed and big events serialised in a worker process, so the event loop never
waits on the GIL for them.

Parsing and validating a 31 MiB frame (pydantic, from bytes) or serialising a 31 MiB event
holds the GIL for 100-200 ms in one C call: on a worker thread that still stalls the loop
for as long. A process of its own does it instead, behind two pipes: the frame's bytes are
written and the result read into a lazily mapped buffer with the GIL released, then
unpickled (the one copy left on the loop: the AX tree's ``str``). The worker is started by
the first big frame; one that dies is replaced by the next, and its work done on a thread
meanwhile, so nothing is lost. (``ProcessPoolExecutor`` pickles the frame and reads the
result through ``BytesIO`` with the GIL held: 80-150 ms a 31 MiB frame here.) A frame that
fails to parse is answered with the request id found in it, wherever it was parsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mmap
import os
import pickle
import struct
import subprocess
import sys
import threading

from pydantic import BaseModel
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.union import (
    ClientMessage,
    dump,
    parse_client_message,
    request_id_of,
)

log = logging.getLogger(__name__)

PARSE_OFF_LOOP_BYTES = 256 * 1024  # frames above this are parsed off the loop (a thread)
OFF_PROCESS_BYTES = 2 * 1024 * 1024  # frames and events above this: in the worker process
_HEAD = struct.Struct("!cQ")  # an operation (or a result's status) and the payload's length


class InvalidFrame(ProtocolError):
    """A client frame that failed to parse, with the request id found in it, if any."""

    def __init__(self, message: str, request_id: str | None) -> None:
        super().__init__(message)
        self.request_id = request_id


def parse_frame(raw: bytes | str) -> ClientMessage:
    """:func:`parse_client_message`, its error carrying the frame's request id."""
    try:
        return parse_client_message(raw)
    except ProtocolError as exc:
        raise InvalidFrame(exc.message, request_id_of(raw)) from None


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


def _pickled(obj: object) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def worker_main(read_fd: int, write_fd: int) -> None:
    """The worker: ``P`` parses a client frame (``O`` and the pickled message, or ``E`` and
    the pickled error text and request id); ``D`` serialises a pickled model (``O`` and
    the frame's UTF-8)."""
    while True:
        try:
            op, payload = _message(read_fd)
        except EOFError:
            return
        if op == b"P":
            try:
                msg = parse_frame(bytes(payload))
            except InvalidFrame as exc:
                _send(write_fd, b"E", [_pickled((exc.message, exc.request_id))])
                continue
            _send(write_fd, b"O", [_pickled(msg)])
        else:
            _send(write_fd, b"O", [dump(pickle.loads(payload)).encode()])


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
            return parse_frame(bytes(data))
        status, payload = answer
        if status == b"E":
            message, request_id = pickle.loads(payload)
            raise InvalidFrame(message, request_id)
        msg: ClientMessage = pickle.loads(payload)
        return msg

    def _dump_in_worker(self, message: BaseModel) -> str:
        answer = self._call(b"D", [_pickled(message)])
        if answer is None:
            return dump(message)
        return str(answer[1], "utf-8")

    async def parse(self, raw: bytes | memoryview | str) -> ClientMessage:
        """Parse and validate a client frame: inline when small, on a thread above
        :data:`PARSE_OFF_LOOP_BYTES`, in the worker above :data:`OFF_PROCESS_BYTES`.
        Raises :class:`InvalidFrame` (with the frame's request id)."""
        if len(raw) <= PARSE_OFF_LOOP_BYTES:
            return parse_frame(bytes(raw) if isinstance(raw, memoryview) else raw)
        if len(raw) <= OFF_PROCESS_BYTES:
            small = bytes(raw) if isinstance(raw, memoryview) else raw  # pydantic: no views
            return await asyncio.to_thread(parse_frame, small)
        return await asyncio.to_thread(self._parse_in_worker, raw)

    async def dump(self, message: BaseModel, size_hint: int) -> str:
        """Serialise a message: in the worker when ``size_hint`` (its big fields' length)
        is above :data:`OFF_PROCESS_BYTES`."""
        if size_hint <= OFF_PROCESS_BYTES:
            return dump(message)
        return await asyncio.to_thread(self._dump_in_worker, message)
