"""The discriminated unions of all messages, their TypeAdapters, and parse/dump helpers."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.replies import (
    ActionEvent,
    ActionRecorded,
    ApprovalRequest,
    ApprovalResolved,
    Checklist,
    Error,
    Observed,
    Pong,
    Scored,
    ScoreProgress,
    Session,
    SessionEnded,
    Sessions,
    SessionStarted,
    Signal,
    Stats,
    Subscribed,
    Welcome,
)
from webshepherd.protocol.requests import (
    Action,
    ApprovalDecide,
    Hello,
    Observe,
    Ping,
    Score,
    SessionEnd,
    SessionGet,
    SessionsList,
    SessionStart,
    Subscribe,
)

ClientMessage = Annotated[
    Hello
    | SessionStart
    | Observe
    | Score
    | ApprovalDecide
    | Action
    | SessionEnd
    | Subscribe
    | SessionsList
    | SessionGet
    | Ping,
    Field(discriminator="type"),
]

ServerMessage = Annotated[
    Welcome
    | Error
    | SessionStarted
    | Checklist
    | Observed
    | ScoreProgress
    | Scored
    | ApprovalRequest
    | ApprovalResolved
    | ActionRecorded
    | ActionEvent
    | SessionEnded
    | Signal
    | Subscribed
    | Sessions
    | Session
    | Stats
    | Pong,
    Field(discriminator="type"),
]

CLIENT_ADAPTER: TypeAdapter[ClientMessage] = TypeAdapter(ClientMessage)
SERVER_ADAPTER: TypeAdapter[ServerMessage] = TypeAdapter(ServerMessage)

CLIENT_TYPES: frozenset[str] = frozenset(
    m.model_fields["type"].default
    for m in ClientMessage.__origin__.__args__  # type: ignore[attr-defined]
)
SERVER_TYPES: frozenset[str] = frozenset(
    m.model_fields["type"].default
    for m in ServerMessage.__origin__.__args__  # type: ignore[attr-defined]
)


def describe_validation_error(exc: ValidationError, *, tagged: bool = True) -> str:
    """One readable line per problem: ``field.path: what is wrong`` (at most 5)."""
    lines = []
    for err in exc.errors()[:5]:
        loc = list(err.get("loc", ()))
        if (
            tagged
            and loc
            and isinstance(loc[0], str)
            and ("." in loc[0] or loc[0] in CLIENT_TYPES | SERVER_TYPES)
        ):
            loc = loc[1:]  # drop the discriminator tag pydantic puts first
        path = ".".join(str(p) for p in loc) or "message"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "value_error" and ": " in msg and path == "message":
            path, msg = msg.split(": ", 1)
        if err.get("type") == "union_tag_invalid":
            path, msg = (
                "type",
                f"unknown message type {err.get('input', {}).get('type')!r}"
                if isinstance(err.get("input"), dict)
                else "unknown message type",
            )
        lines.append(f"{path}: {msg}")
    return "; ".join(lines)


def _load_object(raw: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"malformed JSON: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("a message must be a JSON object")
    if not isinstance(data.get("type"), str):
        raise ProtocolError("type: missing or not a string")
    return data


def request_id_of(raw: str | bytes) -> str | None:
    """Best-effort ``id`` of a raw frame, so an error can answer the request that caused it."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    rid = data.get("id") if isinstance(data, dict) else None
    return rid if isinstance(rid, str) else None


def parse_client_message(raw: str | bytes) -> ClientMessage:
    """Parse one frame from a client, raising :class:`ProtocolError` with a clear text."""
    data = _load_object(raw)
    if data["type"] not in CLIENT_TYPES:
        raise ProtocolError(f"type: unknown message type {data['type']!r}")
    try:
        return CLIENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ProtocolError(describe_validation_error(exc)) from None


def parse_server_message(raw: str | bytes) -> ServerMessage:
    """Parse one frame from the daemon (client side)."""
    data = _load_object(raw)
    if data["type"] not in SERVER_TYPES:
        raise ProtocolError(f"type: unknown message type {data['type']!r}")
    try:
        return SERVER_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ProtocolError(describe_validation_error(exc)) from None


def dump(message: BaseModel) -> str:
    """Serialize a message to one JSON text frame."""
    return message.model_dump_json()
