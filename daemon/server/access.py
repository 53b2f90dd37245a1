"""Who a connection is: the approver check (a person's paired credential, still paired) of
every message that declares one (``person_verb``), pairing with a one-time code, and page-hook
keys. Whether a session may be addressed is the session machine's (``SessionCore.handle``,
``check_*``); this module tells it when a connection pairs or loses its pairing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from webshepherd.daemon.server.approvers import Approvers
from webshepherd.daemon.server.fanout import Conn
from webshepherd.daemon.server.handshake import CLOSE_POLICY
from webshepherd.daemon.sessions import SessionCore
from webshepherd.daemon.sessions.hook_grants import HookGrants
from webshepherd.protocol import requests as rq
from webshepherd.protocol.errors import (
    SessionClosedError,
    UnauthorizedError,
    UnknownSessionError,
    WebShepherdError,
)
from webshepherd.protocol.replies import HookGranted, HookRedeemed, Paired
from webshepherd.protocol.union import ClientMessage, dump

log = logging.getLogger(__name__)

#: How long a connection waits after a wrong pairing code before its next request is read.
PAIR_FAILURE_DELAY_S = 1.0
#: What to do about a missing or refused approver credential.
HOW_TO_PAIR = (
    "a person pairs the tool first: run `webshepherd pair extension` (then enter the code in "
    "the extension's options page) or `webshepherd pair tui` at a terminal"
)


class Access:
    """A connection's rights; ``load(session_id)`` loads a recorded session into the
    machine when it is not (the socket layer's), ``report_error`` answers a request."""

    def __init__(
        self,
        core: SessionCore,
        approvers: Approvers,
        hook_grants: HookGrants,
        load: Callable[[str], Awaitable[None]],
        report_error: Callable[[int, str | None, BaseException], None],
    ) -> None:
        self.core, self.approvers, self.hook_grants = core, approvers, hook_grants
        self.load, self.report_error = load, report_error

    async def check_person(self, conn: Conn, msg: ClientMessage) -> None:
        """Raise unless ``conn`` may send ``msg``: a message that declares a person's verb
        (``person_verb``) needs an approver credential that is still paired."""
        verb = msg.person_verb()
        if verb is not None:
            await self.check_approver(conn, msg.type, verb)

    async def check_approver(self, conn: Conn, request: str, verb: str) -> None:
        """Raise unless ``conn`` holds an approver credential that is still paired (one
        revoked since its hello no longer decides)."""
        approver = conn.approver
        if approver is None:
            raise UnauthorizedError(
                f"{request}: a connection with role {conn.role!r} may not {verb}: it presented "
                f"no approver credential (a role declared in hello grants nothing); {HOW_TO_PAIR}"
            )
        paired = await asyncio.to_thread(self.approvers.paired)
        if all(a.id != approver.id for a in paired):
            conn.approver = None
            self.core.connections.changed(conn.id, person=False)
            raise UnauthorizedError(
                f"{request}: may not {verb}: this tool's pairing ({approver.label}) was "
                f"revoked; {HOW_TO_PAIR}"
            )

    async def commit_asker(self, conn: Conn, session_id: str) -> str | None:
        """The approver label of a paired person's tool asking about another connection's
        session's request (still paired), else None (the machine checks the owner)."""
        if conn.approver is None or self.core.owns(conn.id, session_id):
            return None
        await self.check_approver(conn, "commit.check", "ask about another session's request")
        return conn.label

    async def check_live(self, session_id: str) -> None:
        """Raise unless ``session_id`` is a session that has not ended (loaded if evicted)."""
        await self.load(session_id)
        self.core.check_live(session_id)

    async def pair(self, conn: Conn, msg: rq.Pair) -> None:
        """A one-time code from ``webshepherd pair``: a new approver credential, and this
        connection is that approver from now on. A wrong code costs the connection
        :data:`PAIR_FAILURE_DELAY_S` before its next request is read; its last wrong code
        (approvers.MAX_PER_CONNECTION) closes it."""
        try:
            approver, credential = await asyncio.to_thread(
                self.approvers.redeem, msg.code, msg.name
            )
        except WebShepherdError as exc:
            log.warning("connection %d (%s): wrong pairing code", conn.id, conn.label)
            await asyncio.sleep(PAIR_FAILURE_DELAY_S)
            if self.approvers.wrong_code_on(conn.id):
                self.report_error(conn.id, msg.id, exc)
                await conn.drain()
                why = "too many wrong pairing codes on this connection"
                await conn.ws.close(CLOSE_POLICY, why)
                conn.close(CLOSE_POLICY, why)
                return
            raise
        conn.approver = approver
        self.core.connections.changed(conn.id, person=True, tool=(approver.role, approver.label))
        log.info("paired %s (id %s) on connection %d", approver.label, approver.id, conn.id)
        reply = Paired(id=msg.id, credential=credential, role=approver.role, name=approver.name)
        conn.send(dump(reply), reply=True)

    # -- page-hook keys (hook_grants.py) --------------------------------------
    async def hook_grant(self, conn: Conn, msg: rq.HookGrant) -> None:
        """A key for an agent: for its own session (no other live connection holds it), or
        for one session start through the page hook."""
        if not conn.is_agent:
            raise UnauthorizedError(
                f"hook.grant: only an agent's connection gets page-hook keys, not {conn.who!r}"
            )
        if msg.session_id is not None:
            await self.check_live(msg.session_id)
            self.core.check_agent_holds(conn.caller(), msg.session_id, "hook.grant")
        key = self.hook_grants.grant(msg.session_id)
        reply = HookGranted(
            id=msg.id,
            key=key,
            session_id=msg.session_id,
            expires_in_s=self.hook_grants.ttl_s,
            reply_key=self.hook_grants.reply_key(key),
        )
        conn.send(dump(reply), reply=True)

    async def hook_redeem(self, conn: Conn, msg: rq.HookRedeem) -> None:
        """The extension (paired or not: a browser an agent framework launched redeems too)
        checks a key a page presented; the reply names its session."""
        if conn.declared != "extension" and conn.role != "extension":
            raise UnauthorizedError(
                f"hook.redeem: only the extension redeems page-hook keys, not {conn.declared!r}"
            )
        sid = self.hook_grants.redeem(msg.key)
        if sid is not None:
            try:
                await self.check_live(sid)
            except (UnknownSessionError, SessionClosedError):
                self.hook_grants.drop_session(sid)
                raise
        reply = HookRedeemed(
            id=msg.id, session_id=sid, reply_key=self.hook_grants.reply_key(msg.key)
        )
        conn.send(dump(reply), reply=True)
