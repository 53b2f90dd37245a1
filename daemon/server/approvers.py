"""Approver credentials: the registry of paired person tools, and one-time pairing codes.

A person's tool (the TUI, the person's extension) decides approvals only with a credential
it got by pairing: ``webshepherd pair`` (a person's command, at a terminal) writes a short
one-time code; the tool sends it in ``pair`` and gets a credential back, which it presents
in every ``hello`` (``hello.approver``). The agent's token never carries this power.

Both files live in the daemon's config dir, owner-only (0600), and hold only SHA-256
digests: ``approvers.json`` (id, role, name, created_at, digest of each credential) and
``pairing-codes.json`` (digest, role, name and expiry of each code, and when the last wrong
codes came). The CLI and the daemon are separate processes: every read-modify-write holds an
``fcntl`` lock on ``approvers.lock``.

Guessing is slowed, never rewarded with a void code (a token holder who voided the person's
code would keep the person from pairing): every wrong code costs its connection a second (the
server), a connection closes after :data:`MAX_PER_CONNECTION` wrong codes
(:meth:`Approvers.wrong_code_on`), and past :data:`MAX_PER_WINDOW` wrong codes in
:data:`WINDOW_S` seconds, from any connection or process, no code is tried until the window
has room again; the pending code stays good. At most 10 a minute over a code's 10 minutes:
about one chance in a million of guessing an 8-digit code.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict, cast

from webshepherd.protocol.errors import UnauthorizedError
from webshepherd.protocol.private import private_dir, write_private

ApproverRole = Literal["extension", "monitor"]
APPROVERS_FILE = "approvers.json"
CODES_FILE = "pairing-codes.json"
LOCK_FILE = "approvers.lock"
CODE_TTL_S = 600.0
#: wrong codes one connection may send; the last of them closes it
MAX_PER_CONNECTION = 3
#: wrong codes, from any connection, in :data:`WINDOW_S` seconds after which no code is tried
MAX_PER_WINDOW = 10
WINDOW_S = 60.0
CODE_DIGITS = 8
_TRACKED_CONNECTIONS = 4096


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def normalize_code(code: str) -> str:
    """A code as typed (``1234-5678``, ``1234 5678``) reduced to its digits."""
    return "".join(ch for ch in code if ch.isascii() and ch.isdigit())


@dataclass(frozen=True)
class Approver:
    """One paired person tool, as the registry lists it (never the credential)."""

    id: str
    role: ApproverRole
    name: str
    created_at: float

    @property
    def label(self) -> str:
        """Who decided, as ``approval.resolved.by`` shows it: ``<role>:<paired name>``."""
        return f"{self.role}:{self.name}"


@dataclass(frozen=True)
class PendingCode:
    """What ``webshepherd pair`` created: the code shown once, and its role, name, expiry."""

    code: str
    role: ApproverRole
    name: str | None
    expires_at: float


class _Entry(TypedDict, total=False):
    """One paired tool in ``approvers.json`` (read back as found: any key may be missing)."""

    id: str
    role: ApproverRole
    name: str
    created_at: float
    sha256: str  # the credential's digest


class _Code(TypedDict, total=False):
    """One pending code in ``pairing-codes.json`` (its digest, never the code)."""

    sha256: str
    role: ApproverRole
    name: str | None
    expires_at: float


class _Codes(TypedDict):
    codes: list[_Code]
    wrong_at: list[float]  # when the wrong codes of the last window came (epoch seconds)


def _write_private(path: Path, data: object) -> None:
    """Write JSON to ``path`` owner-only (0600), atomically."""
    write_private(path, json.dumps(data, indent=1))


def _read(path: Path, default: object) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as exc:
        raise UnauthorizedError(
            f"{path}: unreadable ({exc}); `webshepherd pair --list` shows the paired tools, "
            "delete the file to pair every tool again"
        ) from None


class Approvers:
    """The registry and the pending codes in ``config_dir`` (see the module docstring)."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir
        self._wrong_by_connection: OrderedDict[int, int] = OrderedDict()

    def wrong_code_on(self, connection: int) -> bool:
        """Count a wrong code on ``connection``; True when it was the connection's last
        (:data:`MAX_PER_CONNECTION`): the server closes it. The daemon's memory, not a file."""
        count = self._wrong_by_connection.pop(connection, 0) + 1
        self._wrong_by_connection[connection] = count
        while len(self._wrong_by_connection) > _TRACKED_CONNECTIONS:
            self._wrong_by_connection.popitem(last=False)
        return count >= MAX_PER_CONNECTION

    @property
    def path(self) -> Path:
        return self.config_dir / APPROVERS_FILE

    @property
    def codes_path(self) -> Path:
        return self.config_dir / CODES_FILE

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        private_dir(self.config_dir)
        fd = os.open(self.config_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _entries(self) -> list[_Entry]:
        data = _read(self.path, {"approvers": []})
        entries = data.get("approvers") if isinstance(data, dict) else None
        # the file's objects as entries (the readers check the keys they need)
        return [cast(_Entry, e) for e in entries or [] if isinstance(e, dict)]

    # -- the registry --------------------------------------------------------
    def paired(self) -> list[Approver]:
        return [
            Approver(e["id"], e["role"], e["name"], float(e["created_at"]))
            for e in self._entries()
            if {"id", "role", "name", "created_at"} <= e.keys()
        ]

    def verify(self, credential: str) -> Approver | None:
        """The paired tool that holds ``credential``, or None (unknown or revoked). Every
        entry is compared, in constant time."""
        want = digest(credential)
        found: Approver | None = None
        for e in self._entries():
            if hmac.compare_digest(str(e.get("sha256", "")), want) and found is None:
                found = Approver(e["id"], e["role"], e["name"], float(e["created_at"]))
        return found

    def add(self, role: ApproverRole, name: str) -> tuple[Approver, str]:
        """A new paired tool: its entry and its credential (returned once, stored hashed)."""
        credential = secrets.token_urlsafe(32)
        approver = Approver(secrets.token_hex(4), role, name, round(time.time(), 3))
        with self._locked():
            entries = self._entries()
            entries.append(
                {
                    "id": approver.id,
                    "role": approver.role,
                    "name": approver.name,
                    "created_at": approver.created_at,
                    "sha256": digest(credential),
                }
            )
            _write_private(self.path, {"approvers": entries})
        return approver, credential

    def revoke(self, approver_id: str) -> Approver | None:
        """Remove a paired tool; its credential stops working at once (None: no such id)."""
        with self._locked():
            entries = self._entries()
            keep = [e for e in entries if e.get("id") != approver_id]
            if len(keep) == len(entries):
                return None
            gone = next(e for e in entries if e.get("id") == approver_id)
            _write_private(self.path, {"approvers": keep})
        return Approver(gone["id"], gone["role"], gone["name"], float(gone["created_at"]))

    # -- pairing codes ------------------------------------------------------
    def _codes(self) -> _Codes:
        data = _read(self.codes_path, {})
        if not isinstance(data, dict):
            data = {}
        codes = data.get("codes")
        wrong = data.get("wrong_at")
        now = time.time()
        return {
            "codes": [cast(_Code, c) for c in codes or [] if isinstance(c, dict)],
            "wrong_at": [
                float(t)
                for t in (wrong if isinstance(wrong, list) else [])
                if isinstance(t, int | float) and now - WINDOW_S < t <= now
            ],
        }

    def create_code(
        self, role: ApproverRole, name: str | None = None, *, ttl_s: float = CODE_TTL_S
    ) -> PendingCode:
        """A one-time code for ``role`` (shown once; only its digest is kept)."""
        digits = "".join(secrets.choice("0123456789") for _ in range(CODE_DIGITS))
        half = CODE_DIGITS // 2
        pending = PendingCode(f"{digits[:half]}-{digits[half:]}", role, name, time.time() + ttl_s)
        with self._locked():
            data = self._codes()
            now = time.time()
            data["codes"] = [c for c in data["codes"] if float(c.get("expires_at", 0)) > now]
            data["codes"].append(
                {
                    "sha256": digest(digits),
                    "role": role,
                    "name": name,
                    "expires_at": pending.expires_at,
                }
            )
            _write_private(self.codes_path, data)
        return pending

    def redeem(self, code: str, name: str) -> tuple[Approver, str]:
        """Pair with ``code``: a new credential for the code's role, the code consumed. The
        name is the one ``webshepherd pair --name`` gave, else ``name``. A wrong, expired or
        used code raises ``UnauthorizedError``, and so does every code while the last
        :data:`WINDOW_S` seconds hold :data:`MAX_PER_WINDOW` wrong ones (the pending codes
        stay good: the message says when to try again)."""
        want = digest(normalize_code(code))
        with self._locked():
            data = self._codes()
            now = time.time()
            live = [c for c in data["codes"] if float(c.get("expires_at", 0)) > now]
            wrong = data["wrong_at"]
            if len(wrong) >= MAX_PER_WINDOW:
                wait = max(1, int(wrong[-MAX_PER_WINDOW] + WINDOW_S - now + 0.999))
                raise UnauthorizedError(
                    f"pair: {len(wrong)} wrong pairing codes in the last {WINDOW_S:g} s "
                    "(someone may be guessing); no code is tried for now, and the pending code "
                    f"still works: try it again in {wait} s"
                )
            match: _Code | None = None
            for c in live:  # every live code compared, in constant time
                if hmac.compare_digest(str(c.get("sha256", "")), want) and match is None:
                    match = c
            if match is None:
                _write_private(self.codes_path, {"codes": live, "wrong_at": [*wrong, now]})
                raise UnauthorizedError(
                    "pair: wrong, expired or already used pairing code (a code works once, "
                    f"for {CODE_TTL_S / 60:g} minutes); run `webshepherd pair` again for a new "
                    f"one (a connection may send {MAX_PER_CONNECTION} wrong codes)"
                )
            live.remove(match)
            _write_private(self.codes_path, {"codes": live, "wrong_at": wrong})
        role: ApproverRole = match["role"]
        return self.add(role, match.get("name") or name)
