"""The webshepherd extension's id, pinned by the public key in its manifest.

Chrome derives an extension's id from its public key: the first 128 bits of
SHA-256 over the DER key, each hex digit 0-f written as a letter a-p.
"""

from __future__ import annotations

import base64
import hashlib

EXTENSION_ID = "aaaaeaoapajmeghfhaeejleagkjmhfhl"


def extension_id_from_key(key_b64: str) -> str:
    """The id Chrome gives an extension whose manifest ``key`` is ``key_b64``."""
    digest = hashlib.sha256(base64.b64decode(key_b64)).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)
