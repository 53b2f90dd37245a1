"""Big client frames gathered as they arrive, for one server connection at a time.

websockets buffers a frame's payload in one ``bytearray`` grown by each received chunk
(copied again and again: ~50 ms of the loop's read callbacks for 31 MiB here), slices it
out and unmasks it whole (20-90 ms in one C call holding the GIL). A
:class:`PayloadConnection` (passed to ``serve(create_connection=...)``) reads the byte
stream before websockets does instead: once :meth:`PayloadConnection.gather_big_payloads`
is called, a big one-frame text or binary message is unmasked chunk by chunk into an
anonymous mapping of its size (the kernel zeroes its pages lazily), and websockets is
handed, in its place, the same frame with a short stand-in payload, so the message keeps
its order among the others and websockets' own checks. :meth:`recv_payload` gives back
the gathered payload for the stand-in. Nothing in websockets is replaced: the connection
only rewrites the bytes it feeds to its own protocol (RFC 6455 framing, section 5.2).
"""

from __future__ import annotations

import mmap
import secrets
import struct
from collections import deque
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import apply_mask

GATHER_BYTES = 256 * 1024  # payloads from this size on are gathered
_END_OF_REQUEST = b"\r\n\r\n"  # a WebSocket handshake request has no body
_TEXT, _BINARY = 0x1, 0x2
_FIN, _RSV, _OPCODE = 0x80, 0x70, 0x0F
_MASKED, _LENGTH7 = 0x80, 0x7F


def _header_size(head: bytes | bytearray) -> int:
    """A frame header's size, from its first two bytes."""
    length7 = head[1] & _LENGTH7
    extended = 2 if length7 == 126 else 8 if length7 == 127 else 0
    return 2 + extended + (4 if head[1] & _MASKED else 0)


def _payload_length(head: bytes | bytearray) -> int:
    length7 = head[1] & _LENGTH7
    if length7 == 126:
        return int(struct.unpack_from("!H", head, 2)[0])
    if length7 == 127:
        return int(struct.unpack_from("!Q", head, 2)[0])
    return length7


class PayloadSplitter:
    """Sans-I/O: the bytes a server connection receives (the handshake request, then the
    client's frames) in, the bytes for websockets out, with each big one-frame data
    message's payload gathered (unmasked) into :attr:`payloads` and replaced by a frame
    carrying ``stand_in`` (fewer than 126 bytes)."""

    def __init__(self, stand_in: bytes) -> None:
        if not 0 < len(stand_in) < 126:
            raise ValueError("the stand-in must fit a frame's 7-bit length")
        self.stand_in = stand_in
        self.payloads: deque[memoryview] = deque()
        self.limit = 0  # bigger frames are left to websockets (its max_size refuses them)
        self.gathering = False
        self._in_request = True
        self._tail = b""  # the request's last bytes so far (its end may straddle chunks)
        self._head = bytearray()  # the frame header being read
        self._passing = 0  # payload bytes still to hand over as they are
        self._big: mmap.mmap | None = None
        self._big_at = 0
        self._big_first = 0  # the gathered frame's first header byte (FIN, opcode)
        self._mask = b""

    def gather(self, limit: int) -> None:
        """Gather big payloads from the next frame header on, up to ``limit`` bytes."""
        self.gathering, self.limit = True, limit

    def feed(self, data: bytes) -> list[memoryview]:
        """The pieces of ``data`` (rewritten where a big payload was gathered) to hand to
        websockets, in order."""
        out: list[memoryview] = []
        view = memoryview(data)
        if self._in_request:
            view = self._skip_request(view, out)
        while view:
            if self._passing:
                k = min(self._passing, len(view))
                out.append(view[:k])
                self._passing -= k
            elif self._big is not None:
                k = self._gather(view, out)
            else:
                k = self._read_header(view, out)
            view = view[k:]
        return out

    def _skip_request(self, view: memoryview, out: list[memoryview]) -> memoryview:
        seen = self._tail + bytes(view)
        at = seen.find(_END_OF_REQUEST)
        if at < 0:
            out.append(view)
            self._tail = seen[-3:]
            return view[len(view) :]
        end = at + len(_END_OF_REQUEST) - len(self._tail)
        out.append(view[:end])
        self._in_request = False
        return view[end:]

    def _read_header(self, view: memoryview, out: list[memoryview]) -> int:
        need = 2 if len(self._head) < 2 else _header_size(self._head)
        k = min(need - len(self._head), len(view))
        self._head += view[:k]
        if len(self._head) == 2:
            need = _header_size(self._head)
        if len(self._head) < need:
            return k
        head, self._head = bytes(self._head), bytearray()
        length = _payload_length(head)
        first, masked = head[0], head[1] & _MASKED
        if (
            self.gathering
            and masked
            and first & (_FIN | _RSV | _OPCODE) in (_FIN | _TEXT, _FIN | _BINARY)
            and length >= GATHER_BYTES
            and length <= self.limit
        ):
            self._big, self._big_at = mmap.mmap(-1, length), 0
            self._big_first, self._mask = first, head[-4:]
        else:
            out.append(memoryview(head))
            self._passing = length
        return k

    def _gather(self, view: memoryview, out: list[memoryview]) -> int:
        big = self._big
        assert big is not None
        at = self._big_at
        k = min(len(big) - at, len(view))
        key = self._mask[at % 4 :] + self._mask[: at % 4]  # the mask as it falls at ``at``
        big[at : at + k] = apply_mask(view[:k], key)
        self._big_at += k
        if self._big_at == len(big):  # the same frame, its payload the stand-in (mask 0)
            self.payloads.append(memoryview(big))
            self._big = None
            head = bytes((self._big_first, _MASKED | len(self.stand_in), 0, 0, 0, 0))
            out.append(memoryview(head + self.stand_in))
        return k


class PayloadConnection(ServerConnection):
    """A server connection that hands big one-frame messages over as gathered (a view of
    the mapping; websockets would copy them into new bytes on the loop), in order with the
    others, once :meth:`gather_big_payloads` is called."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # random: a client cannot send a message equal to it
        self.splitter = PayloadSplitter(secrets.token_bytes(32))

    def gather_big_payloads(self, limit: int) -> None:
        """From the next frame on, for frames up to ``limit`` bytes (the message limit
        websockets enforces: a bigger frame is left to it, and refused)."""
        self.splitter.gather(limit)

    def data_received(self, data: bytes) -> None:
        pieces = self.splitter.feed(data)
        if len(pieces) == 1 and pieces[0].obj is data and len(pieces[0]) == len(data):
            super().data_received(data)  # nothing gathered or rewritten: the chunk as it came
        elif pieces:
            super().data_received(b"".join(pieces))

    async def recv_payload(self) -> bytes | memoryview:
        """The next message's bytes (a text message's undecoded): a big payload as gathered."""
        raw = await self.recv(decode=False)
        if raw == self.splitter.stand_in and self.splitter.payloads:
            return self.splitter.payloads.popleft()
        return raw
