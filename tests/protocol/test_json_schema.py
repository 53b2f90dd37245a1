"""The committed JSON Schema matches the models, and is a valid 2020-12 schema."""

from __future__ import annotations

import json

import jsonschema
from webshepherd.protocol.json_schema import SCHEMA_PATH, build_schema, render_schema, side_schema
from webshepherd.protocol.union import CLIENT_TYPES, SERVER_TYPES


def test_committed_schema_is_fresh() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render_schema(), (
        "protocol/schema/webshepherd-v1.schema.json is stale: "
        "run `webshepherd schema` and commit it"
    )


def test_rendering_is_deterministic_and_ends_with_newline() -> None:
    a, b = render_schema(), render_schema()
    assert a == b
    assert a.endswith("}\n") and not a.endswith("\n\n")
    assert list(json.loads(a)) == sorted(json.loads(a))


def test_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(build_schema())


def test_every_message_type_is_in_its_union() -> None:
    defs = build_schema()["$defs"]
    client = set(defs["ClientMessage"]["discriminator"]["mapping"])
    server = set(defs["ServerMessage"]["discriminator"]["mapping"])
    assert client == set(CLIENT_TYPES)
    assert server == set(SERVER_TYPES)
    for name in defs["ClientMessage"]["discriminator"]["mapping"].values():
        assert defs[name.rsplit("/", 1)[-1]]["required"][0] == "type"


def test_side_schema_refuses_the_other_side() -> None:
    client = jsonschema.Draft202012Validator(side_schema("client"))
    server = jsonschema.Draft202012Validator(side_schema("server"))
    pong = {"type": "pong", "id": "p1"}
    assert server.is_valid(pong)
    assert not client.is_valid(pong)
