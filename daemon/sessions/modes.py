"""Session modes, sandbox origins and the plain words of a hold (sans-I/O; issue 41).

A session's mode (``ask``, ``watch``, ``stop``: protocol.common.CommitMode) decides what
happens to a request the browser paused (``commit.check``) and to a step the rules or the
reward would hold; operator-named sandbox origins are flagged, never held. This module holds
the pieces the machine reads: sandbox patterns, the headline a person reads first, and the way
out a refusal names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import get_args
from urllib.parse import urlsplit

from webshepherd.protocol.commits import SAFE_METHODS, url_origin
from webshepherd.protocol.common import (
    ApprovalReason,
    CommitMode,
    ElementFacts,
    GuardHit,
    HeldRequest,
)
from webshepherd.protocol.terminal_text import punycode_hosts

__all__ = [
    "MODES",
    "STOP_WAY_OUT",
    "commit_headline",
    "in_sandbox",
    "parse_sandbox",
    "place",
    "step_headline",
]

MODES: tuple[CommitMode, ...] = get_args(CommitMode)
#: What lets a step the session's 'stop' mode refused run.
STOP_WAY_OUT = "a paired person switches this session to 'ask' or 'watch' (TUI or side panel)"
PAIR = "`webshepherd pair tui` (or `pair extension`) so a person can decide"


def parse_sandbox(text: str) -> str:
    """A ``--sandbox-origin`` checked and made canonical: ``scheme://host[:port]``, or
    ``scheme://host:*`` for any port of that host. ``ValueError`` says what is wrong."""
    raw = text.strip().rstrip("/")
    any_port = raw.endswith(":*")
    base = raw[:-2] if any_port else raw
    parts = urlsplit(base)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"sandbox origin {text!r}: expected scheme://host[:port], e.g. "
            "http://127.0.0.1:8000 or http://127.0.0.1:* for any port of that host"
        )
    if parts.path or parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"sandbox origin {text!r}: an origin has no path, query or user")
    if any_port and parts.port is not None:
        raise ValueError(f"sandbox origin {text!r}: a port and '*' at once")
    origin = url_origin(base)
    if origin is None:
        raise ValueError(f"sandbox origin {text!r}: not an http(s) origin")
    return f"{origin}:*" if any_port else origin


def in_sandbox(origin: str | None, patterns: Iterable[str]) -> bool:
    """Whether ``origin`` (canonical, as :func:`~webshepherd.protocol.commits.url_origin`
    gives it) is one of ``patterns`` (from :func:`parse_sandbox`)."""
    if origin is None:
        return False
    for p in patterns:
        if p == origin:
            return True
        if p.endswith(":*"):
            host = p[:-2]
            if origin == host or (
                origin.startswith(host + ":") and origin[len(host) + 1 :].isdigit()
            ):
                return True
    return False


def place(url: str | None, limit: int = 120) -> str:
    """``host/path`` of a URL for a sentence (the host as punycode, no scheme or query)."""
    if not url:
        return "(unknown)"
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        host, port = None, None
    if not host:
        text = url
    else:
        text = host + (f":{port}" if port else "") + (parts.path if parts.path != "/" else "")
        text = punycode_hosts(f"http://{text}").removeprefix("http://")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def commit_headline(request: HeldRequest) -> str:
    """The sentence a person reads first on a paused request's card."""
    if request.kind == "download":
        return f"Waiting for you: this downloads {place(request.url)}"
    if request.kind == "navigation":
        return f"Waiting for you: this opens another site: {place(request.url)}"
    if request.method.upper() in SAFE_METHODS:
        return (
            f"Waiting for you: this {request.method.upper()} to {place(request.url)} is "
            "predicted to commit (named by serve --commits or the gate's caller)"
        )
    return f"Waiting for you: this sends a {request.method.upper()} to {place(request.url)}"


def step_headline(
    reason: ApprovalReason,
    hits: Sequence[GuardHit],
    *,
    reward: float | None,
    threshold: float | None,
    previous: float | None,
    facts: ElementFacts | None = None,
    destination: str | None = None,
) -> str:
    """The sentence a person reads first on a held step's card: the first rule it met, else
    why the reward holds it."""
    for hit in hits:
        if hit.rule == "form_submit":
            method = (facts.form_method if facts else None) or "POST"
            to = f" to {place(destination)}" if destination else ""
            return f"Waiting for you: this submits a {method.upper()} form{to}"
        if hit.rule == "leaves_origin":
            where = f": {place(destination)}" if destination else ""
            return f"Waiting for you: this opens another site{where}"
        if hit.rule == "download":
            what = place(destination) if destination else "a file"
            return f"Waiting for you: this downloads {what}"
        if hit.rule in ("name_match", "commit_get"):
            return f"Waiting for you: {hit.detail}"
    shown = "none parsed" if reward is None else f"{reward:.2f}"
    if reason == "below_threshold" and threshold is not None:
        return f"Waiting for you: the judge's reward {shown} is below {threshold:g}"
    if reason == "reward_drop" and previous is not None:
        return f"Waiting for you: the judge's reward fell from {previous:.2f} to {shown}"
    return f"Waiting for you: the agent asked for your approval (reward {shown})"
