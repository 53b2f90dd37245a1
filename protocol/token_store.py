"""The pairing token: kept in the OS keyring, else in an owner-only file.

Both the daemon (creates, rotates) and the client SDK (reads) use this, so an
agent on the same machine connects without being handed the token.

Environment:
- ``WEBSHEPHERD_TOKEN``: use this token, store nothing.
- ``WEBSHEPHERD_CONFIG_DIR``: where the token file lives (default: the
  platformdirs user config dir). A non-default dir never touches the keyring,
  so tests and side-by-side daemons stay apart from the user's real token.
- ``WEBSHEPHERD_KEYRING=0``: never use the keyring.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from webshepherd.protocol.private import write_private

log = logging.getLogger(__name__)

APP_NAME = "webshepherd"
KEYRING_SERVICE = "webshepherd"
KEYRING_USER = "pairing-token"
TOKEN_FILE = "token"


def default_config_dir() -> Path:
    env = os.environ.get("WEBSHEPHERD_CONFIG_DIR")
    if env:
        return Path(env)
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP_NAME))


def new_token() -> str:
    return secrets.token_urlsafe(32)


def tokens_equal(a: str, b: str) -> bool:
    """Constant-time comparison."""
    return hmac.compare_digest(a.encode(), b.encode())


class TokenStore:
    """Reads, creates and rotates the pairing token."""

    def __init__(self, config_dir: Path | None = None, *, use_keyring: bool | None = None):
        explicit_dir = config_dir is not None or "WEBSHEPHERD_CONFIG_DIR" in os.environ
        self.config_dir = config_dir or default_config_dir()
        if use_keyring is None:
            use_keyring = not explicit_dir and os.environ.get("WEBSHEPHERD_KEYRING", "1") != "0"
        self._use_keyring = use_keyring
        self.where = "none"

    @property
    def path(self) -> Path:
        return self.config_dir / TOKEN_FILE

    def _keyring(self) -> Any:
        if not self._use_keyring:
            return None
        try:
            import keyring
            from keyring.backends import fail

            kr = keyring.get_keyring()
            if isinstance(kr, fail.Keyring) or getattr(kr, "priority", 1) <= 0:
                return None
            return kr
        except Exception:  # no keyring package or no usable backend
            return None

    def read(self) -> str | None:
        """The stored token, or None when there is none."""
        env = os.environ.get("WEBSHEPHERD_TOKEN")
        if env:
            self.where = "env"
            return env
        kr = self._keyring()
        if kr is not None:
            try:
                tok = kr.get_password(KEYRING_SERVICE, KEYRING_USER)
                if tok:
                    self.where = "keyring"
                    return str(tok)
            except Exception as exc:
                log.debug("keyring read failed: %s", exc)
        try:
            tok = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if tok:
            self.where = f"file {self.path}"
            return tok
        return None

    def write(self, token: str) -> str:
        """Store ``token``; returns where it went."""
        kr = self._keyring()
        if kr is not None:
            try:
                kr.set_password(KEYRING_SERVICE, KEYRING_USER, token)
                self.where = "keyring"
                return self.where
            except Exception as exc:
                log.warning("keyring unusable (%s); keeping the token in a file", exc)
        write_private(self.path, token + "\n")
        self.where = f"file {self.path}"
        return self.where

    def get_or_create(self) -> str:
        tok = self.read()
        if tok:
            return tok
        tok = new_token()
        self.write(tok)
        return tok

    def rotate(self) -> str:
        tok = new_token()
        self.write(tok)
        return tok
