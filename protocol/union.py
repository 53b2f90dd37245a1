"""The two discriminated unions (``ClientMessage`` beside its members in requests.py,
``ServerMessage`` in replies.py), their TypeAdapters, and parse/dump helpers."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import from_json
from webshepherd.protocol.errors import ProtocolError
from webshepherd.protocol.replies import ServerMessage
from webshepherd.protocol.requests import ClientMessage

__all__ = [
    "CLIENT_ADAPTER",
    "CLIENT_TYPES",
    "SERVER_ADAPTER",
    "SERVER_TYPES",
    "ClientMessage",
    "ServerMessage",
    "describe_validation_error",
    "dump",
    "parse_client_message",
    "parse_server_message",
    "request_id_of",
]

M = TypeVar("M")

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


def _explain(exc: ValidationError) -> str:
    """The readable text of a failed parse: malformed JSON, not an object, no or unknown type,
    else the fields that failed."""
    errors = exc.errors()
    if not errors:
        return "message: invalid"
    first = errors[0]
    kind, loc = first["type"], tuple(first["loc"])
    if kind == "json_invalid":
        return "malformed JSON: " + str(first.get("msg", "")).removeprefix("Invalid JSON: ")
    if not loc and kind in ("dict_type", "model_attributes_type", "model_type"):
        return "a message must be a JSON object"
    if kind == "union_tag_not_found":
        return "type: missing or not a string"
    return describe_validation_error(exc)


def _parse(adapter: TypeAdapter[M], raw: str | bytes) -> M:
    """Parse and validate a frame in one pass (pydantic's own JSON parser, from bytes or str).

    It refuses what ``json.loads`` would let through or crash on: nesting beyond its recursion
    limit, integers beyond 64 bits of float range, lone surrogates in ``\\u`` escapes.
    """
    try:
        return adapter.validate_json(raw)
    except ValidationError as exc:
        raise ProtocolError(_explain(exc)) from None


def request_id_of(raw: str | bytes) -> str | None:
    """Best-effort ``id`` of a raw frame, so an error can answer the request that caused it.

    Never raises: a frame cut short is read as far as it goes (its ``id`` counts if it came
    before the cut); one that is not valid JSON before that (too deep, a lone surrogate,
    ...) has none.
    """
    try:
        data = from_json(raw, allow_partial=True)
    except ValueError:
        return None
    rid = data.get("id") if isinstance(data, dict) else None
    return rid if isinstance(rid, str) else None


def parse_client_message(raw: str | bytes) -> ClientMessage:
    """Parse one frame from a client, raising :class:`ProtocolError` with a clear text."""
    return _parse(CLIENT_ADAPTER, raw)


def parse_server_message(raw: str | bytes) -> ServerMessage:
    """Parse one frame from the daemon (client side)."""
    return _parse(SERVER_ADAPTER, raw)


def dump(message: BaseModel) -> str:
    """Serialize a message to one JSON text frame."""
    return message.model_dump_json()
