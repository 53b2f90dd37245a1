"""The manifest's public key pins the extension id the daemon's Origin allowlist names."""

from __future__ import annotations

import json
from pathlib import Path

from webshepherd.daemon.extension_id import EXTENSION_ID, extension_id_from_key

REPO = Path(__file__).resolve().parents[2]


def test_manifest_key_gives_the_pinned_id():
    manifest = json.loads((REPO / "extension" / "static" / "manifest.json").read_text())
    assert extension_id_from_key(manifest["key"]) == EXTENSION_ID
    assert len(EXTENSION_ID) == 32 and set(EXTENSION_ID) <= set("abcdefghijklmnop")
