"""Page-hook keys (no I/O): what lets a page's hook request start or follow a session.

An agent asks for a key over its authenticated connection (``hook.grant``) and hands it
to its own page script; the extension redeems it (``hook.redeem``) before it lets that
page start a session or follow one. A key for a session may be redeemed again while it
lives (another tab, a re-attach); a key without one starts one session and is spent.
Unredeemed keys expire; the book holds at most ``limit`` (the oldest go first).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from webshepherd.protocol.errors import UnauthorizedError

GRANT_TTL_S = 600.0
MAX_GRANTS = 1024


@dataclass(frozen=True)
class Grant:
    session_id: str | None  # None: the key may start one session
    expires: float


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


class HookGrants:
    """Outstanding page-hook keys, kept by their SHA-256 (the keys themselves are not kept)."""

    def __init__(
        self,
        ttl_s: float = GRANT_TTL_S,
        limit: int = MAX_GRANTS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.ttl_s = ttl_s
        self.limit = limit
        self.clock = clock
        self._grants: OrderedDict[bytes, Grant] = OrderedDict()
        self._secret = secrets.token_bytes(32)  # reply keys: derived, never sent to a page

    def reply_key(self, key: str) -> str:
        """The key of the MAC on the page-hook replies to ``key``'s requests: given to the
        agent with the key (``hook.granted``) and to the extension when it redeems it; not
        derivable from the key alone, so a page that overhears the key cannot forge a reply."""
        mac = hmac.new(self._secret, _digest(key), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def __len__(self) -> int:
        return len(self._grants)

    def grant(self, session_id: str | None) -> str:
        """A fresh key (43 URL-safe characters) for ``session_id`` (None: one session start)."""
        self._purge()
        key = secrets.token_urlsafe(32)
        self._grants[_digest(key)] = Grant(session_id, self.clock() + self.ttl_s)
        while len(self._grants) > self.limit:
            self._grants.popitem(last=False)
        return key

    def redeem(self, key: str) -> str | None:
        """The session ``key`` follows (None: it may start one, and is spent now); an unknown,
        spent or expired key raises ``UnauthorizedError``."""
        self._purge()
        d = _digest(key)
        grant = self._grants.get(d)
        if grant is None:
            raise UnauthorizedError(
                "key: not a page-hook key the daemon gave out, or spent or expired; the agent "
                "asks for one with hook.grant"
            )
        if grant.session_id is None:
            del self._grants[d]
        return grant.session_id

    def drop_session(self, session_id: str) -> None:
        """Forget the keys of a session that ended."""
        for d in [d for d, g in self._grants.items() if g.session_id == session_id]:
            del self._grants[d]

    def _purge(self) -> None:
        now = self.clock()
        for d in [d for d, g in self._grants.items() if g.expires <= now]:
            del self._grants[d]
