"""The TUI's approver credential: what ``webshepherd pair tui`` got for it by pairing.

The file (``tui-approver`` in the config dir, owner-only) is the TUI's own: nothing on an
agent's path reads it (not the SDK, not ``WEBSHEPHERD_TOKEN``, not the integrations). Without
it the TUI monitors but decides nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from webshepherd.protocol.token_store import default_config_dir

CREDENTIAL_FILE = "tui-approver"


def credential_path(config_dir: Path | None = None) -> Path:
    return (config_dir or default_config_dir()) / CREDENTIAL_FILE


def read_credential(config_dir: Path | None = None) -> str | None:
    """The TUI's approver credential, or None (not paired)."""
    try:
        text = credential_path(config_dir).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def write_credential(credential: str, config_dir: Path | None = None) -> Path:
    """Keep the credential for the TUI, owner-only (0600); returns the file."""
    path = credential_path(config_dir)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(credential + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path
