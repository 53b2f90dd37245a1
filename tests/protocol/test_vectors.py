"""The shared vectors: valid ones parse and match the schema, invalid ones are refused."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from webshepherd.protocol import ErrorCode, ProtocolError, dump
from webshepherd.protocol.json_schema import side_schema
from webshepherd.protocol.union import (
    CLIENT_TYPES,
    SERVER_TYPES,
    parse_client_message,
    parse_server_message,
)

VECTORS = Path(__file__).resolve().parents[2] / "protocol" / "vectors"
VALID = sorted((VECTORS / "valid").glob("*.json"))
INVALID = sorted((VECTORS / "invalid").glob("*.json"))
PARSERS = {"client": parse_client_message, "server": parse_server_message}
VALIDATORS = {side: jsonschema.Draft202012Validator(side_schema(side)) for side in PARSERS}


def _side(path: Path) -> str:
    side = path.name.split(".", 1)[0]
    assert side in PARSERS, f"{path.name}: name must start with 'client.' or 'server.'"
    return side


def _why(path: Path) -> dict[str, str]:
    sidecar = path.with_suffix(".why")
    assert sidecar.exists(), f"{path.name} has no .why sidecar"
    lines = sidecar.read_text(encoding="utf-8").splitlines()
    fields = dict(line.split(": ", 1) for line in lines if line)
    assert set(fields) == {"reason", "error", "schema"}, sidecar.name
    return fields


def test_there_are_vectors() -> None:
    assert len(VALID) >= len(CLIENT_TYPES) + len(SERVER_TYPES)
    assert len(INVALID) >= len(CLIENT_TYPES) + len(SERVER_TYPES) - 2


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_vector_parses_and_matches_schema(path: Path) -> None:
    side = _side(path)
    raw = path.read_text(encoding="utf-8")
    message = PARSERS[side](raw)
    assert message.type == json.loads(raw)["type"]
    errors = sorted(VALIDATORS[side].iter_errors(json.loads(raw)), key=str)
    assert not errors, f"{path.name}: {errors[0].message}"
    # Round trip: what we would send parses back to the same model.
    assert PARSERS[side](dump(message)) == message


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_vector_is_refused(path: Path) -> None:
    side = _side(path)
    why = _why(path)
    raw = path.read_text(encoding="utf-8")
    with pytest.raises(ProtocolError) as info:
        PARSERS[side](raw)
    assert info.value.code is ErrorCode.INVALID_MESSAGE
    assert why["error"] in info.value.message, f"{path.name}: {info.value.message!r}"
    if why["schema"] == "n/a":
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)
    else:
        assert why["schema"] in {"rejects", "accepts"}
        assert VALIDATORS[side].is_valid(json.loads(raw)) == (why["schema"] == "accepts"), path.name


def test_every_message_type_has_valid_and_invalid_vectors() -> None:
    def types(paths: list[Path], side: str) -> set[str]:
        out = set()
        for p in paths:
            if _side(p) != side:
                continue
            try:
                t = json.loads(p.read_text(encoding="utf-8")).get("type")
            except (json.JSONDecodeError, AttributeError):
                continue
            out.add(t)
        return out

    assert types(VALID, "client") == set(CLIENT_TYPES)
    assert types(VALID, "server") == set(SERVER_TYPES)
    assert set(CLIENT_TYPES) <= types(INVALID, "client")
    assert set(SERVER_TYPES) <= types(INVALID, "server")


def test_every_sidecar_has_its_vector() -> None:
    for sidecar in (VECTORS / "invalid").glob("*.why"):
        assert sidecar.with_suffix(".json").exists(), sidecar.name
