"""The TUI's approver credential: what ``webshepherd pair tui`` got for it by pairing.

The file (``tui-approver`` in the config dir, owner-only) is the TUI's own: nothing on an
agent's path reads it (not the SDK, not ``WEBSHEPHERD_TOKEN``, not the integrations). Without
it the TUI monitors but decides nothing.
"""

from __future__ import annotations

from pathlib import Path

from webshepherd.protocol.private import write_private
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
    return write_private(path, credential + "\n")
