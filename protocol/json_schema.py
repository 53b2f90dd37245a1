"""The JSON Schema of protocol v1, generated from the pydantic models.

One root document whose ``$defs`` hold every model, plus ``ClientMessage`` and
``ServerMessage`` (the two discriminated unions). The committed copy lives at
``protocol/schema/webshepherd-v1.schema.json``; ``webshepherd schema --check``
(and a test) fail when it no longer matches the models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from webshepherd.protocol.union import CLIENT_ADAPTER, SERVER_ADAPTER
from webshepherd.protocol.version import PROTOCOL_VERSION

SCHEMA_FILENAME = f"webshepherd-v{PROTOCOL_VERSION}.schema.json"
SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / SCHEMA_FILENAME
SCHEMA_ID = f"https://webshepherd.dev/schema/{SCHEMA_FILENAME}"


def build_schema() -> dict[str, Any]:
    """The whole schema as a dict (validation mode: what a receiver accepts)."""
    keys, document = TypeAdapter.json_schemas(
        [
            ("ClientMessage", "validation", CLIENT_ADAPTER),
            ("ServerMessage", "validation", SERVER_ADAPTER),
        ],
        ref_template="#/$defs/{model}",
    )
    defs: dict[str, Any] = dict(document.get("$defs", {}))
    for name in ("ClientMessage", "ServerMessage"):
        defs[name] = keys[(name, "validation")]
        for target in defs[name]["discriminator"]["mapping"].values():
            _require_type(defs[target.rsplit("/", 1)[-1]])
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": f"webshepherd wire protocol v{PROTOCOL_VERSION}",
        "description": (
            "Generated from the pydantic models in webshepherd.protocol; do not edit. "
            "A frame from a client is a ClientMessage, a frame from the daemon a ServerMessage."
        ),
        "anyOf": [{"$ref": "#/$defs/ClientMessage"}, {"$ref": "#/$defs/ServerMessage"}],
        "$defs": defs,
    }


def _require_type(model_schema: dict[str, Any]) -> None:
    """``type`` has a default in Python but is required on the wire (the discriminator)."""
    required = model_schema.setdefault("required", [])
    if "type" not in required:
        required.insert(0, "type")


def render_schema() -> str:
    """Deterministic text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(build_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def side_schema(side: str) -> dict[str, Any]:
    """A schema document validating one side only (``"client"`` or ``"server"``)."""
    doc = build_schema()
    doc.pop("anyOf")
    doc["$ref"] = f"#/$defs/{side.capitalize()}Message"
    return doc


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_schema(), encoding="utf-8")
    return path


def schema_is_fresh(path: Path = SCHEMA_PATH) -> bool:
    try:
        return path.read_text(encoding="utf-8") == render_schema()
    except OSError:
        return False
