"""What a request the browser is about to send commits (sans-I/O; addition to v1).

The browser gates (the extension's, :mod:`webshepherd.integrations.commit_gate`) pause every
request and ask :func:`commit_kind` whether it commits: a method other than GET, HEAD or
OPTIONS (a write), a safe-method request the operator named (``serve --commits 'GET
https://shop.example/cart/remove*'``, :func:`parse_commit_pattern`; a write too), a top-level
navigation to another origin, or a download. Other GETs are not held. One that does
becomes a :class:`~webshepherd.protocol.common.HeldRequest` (:func:`held_request`, its fields
read from the body the browser would send) and a ``commit.check``; the daemon's answer names
the request's :func:`request_digest`, so a client lets only the request it asked about go.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from urllib.parse import parse_qsl

import ada_url
from webshepherd.protocol.common import CommitKind, HeldRequest, RequestField

__all__ = [
    "MAX_COMMIT_PATTERNS",
    "SAFE_METHODS",
    "commit_kind",
    "held_request",
    "matching_commit",
    "parse_commit_pattern",
    "request_digest",
    "request_fields",
    "url_origin",
]

#: Methods that send nothing to keep (RFC 9110's safe methods, less TRACE).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_MAX_FIELDS = 64
_MAX_VALUE = 512
_MAX_PATTERN = 2048
#: At most this many patterns (``session.started.commits`` carries them all).
MAX_COMMIT_PATTERNS = 256
_PATTERN_EXAMPLE = "e.g. 'GET https://shop.example/cart/remove*'"


def url_origin(url: str) -> str | None:
    """The origin a browser gives ``url`` (the WHATWG URL standard, by ``ada_url``): the one
    origin function of the project. ``scheme://host[:port]`` of an http(s), ws(s) or ftp URL
    (host lower-case and punycode, default port dropped, userinfo dropped, a backslash read as
    a browser reads it); ``file://`` for every file URL; None for the opaque rest (``data:``,
    ``blob:``, ``about:``, ``mailto:``) and for text that is no URL."""
    try:
        parsed = ada_url.URL(url)
    except ValueError:
        return None
    if parsed.protocol == "file:":
        return "file://"
    if parsed.protocol == "blob:":  # the page's own data: no request leaves for its origin
        return None
    origin = str(parsed.origin)
    return None if origin == "null" else origin


def parse_commit_pattern(text: str) -> str:
    """An operator's ``--commits`` pattern checked and made canonical: ``METHOD URL`` where
    METHOD is GET, HEAD or OPTIONS (other methods commit anyway) and URL an http(s) URL whose
    ``*`` stands for any run of characters, scheme and host lower-cased (the host as
    punycode), a default port dropped and an empty path made ``/``, as the browser sends a
    URL. Raises ValueError naming what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"commit pattern: a string, not {type(text).__name__}")
    parts = text.split()
    if len(parts) != 2:
        raise ValueError(f"commit pattern {text!r}: expected 'METHOD URL', {_PATTERN_EXAMPLE}")
    method, url = parts[0].upper(), parts[1]
    if method not in SAFE_METHODS:
        if method.isalpha():
            raise ValueError(
                f"commit pattern {text!r}: {method} requests commit already; name GET, HEAD "
                "or OPTIONS requests that commit"
            )
        raise ValueError(f"commit pattern {text!r}: {parts[0]!r} is not a method")
    if len(url) > _MAX_PATTERN:
        raise ValueError(f"commit pattern {text[:64]!r}…: longer than {_MAX_PATTERN} characters")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise ValueError(
            f"commit pattern {text!r}: the URL must start with http:// or https://, "
            f"{_PATTERN_EXAMPLE}"
        )
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        raise ValueError(
            f"commit pattern {text!r}: a user name in the URL (the browser sends none)"
        )
    if not authority or authority.startswith(":") or "\\" in authority:
        raise ValueError(f"commit pattern {text!r}: no host, {_PATTERN_EXAMPLE}")
    if "*" not in authority:
        origin = url_origin(f"{scheme}://{_punycode(authority, text)}/")
        if origin is None:
            raise ValueError(f"commit pattern {text!r}: {authority!r} is not a host[:port]")
        authority = origin.partition("://")[2]
    else:
        authority = authority.lower()
    if not tail and not authority.endswith("*"):
        tail = "/"
    return f"{method} {scheme}://{authority}{tail}"


def _punycode(authority: str, text: str) -> str:
    host, colon, port = authority.rpartition(":") if not authority.endswith("]") else ("", "", "")
    if not colon or not port.isdigit():
        host, colon, port = authority, "", ""
    if host.isascii():
        return authority
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ValueError(f"commit pattern {text!r}: {host!r} is not a host name") from None
    return f"{ascii_host}{colon}{port}"


def matching_commit(method: str, url: str, patterns: Iterable[str]) -> str | None:
    """The first of ``patterns`` (``METHOD URL``, :func:`parse_commit_pattern`'s) that names
    this request (its method, and its URL as the browser sends it: ``*`` any run of
    characters), or None."""
    method = method.upper()
    for pattern in patterns:
        want, _, glob = pattern.partition(" ")
        if want.upper() == method and _glob(glob, url):
            return pattern
    return None


def _glob(pattern: str, text: str) -> bool:
    """Whether ``text`` is ``pattern`` with each ``*`` standing for any run of characters."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return text == pattern
    if not text.startswith(parts[0]) or not text.endswith(parts[-1]):
        return False
    at, end = len(parts[0]), len(text) - len(parts[-1])
    if at > end:
        return False
    for part in parts[1:-1]:
        found = text.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


def commit_kind(
    method: str,
    url: str,
    *,
    top_level_navigation: bool,
    session_origin: str | None,
    download: bool = False,
    commits: Iterable[str] = (),
) -> CommitKind | None:
    """What the request commits, or None when it sends nothing to keep.

    ``top_level_navigation``: the page itself navigates (not a frame, not a fetch);
    ``session_origin``: the origin the session works on (a navigation elsewhere commits);
    ``download``: the response would be saved as a file (read at the response, where the
    browser knows); ``commits``: the operator's patterns of safe-method requests that commit
    (``session.started.commits``; one that matches is a write)."""
    if download:
        return "download"
    if method.upper() not in SAFE_METHODS:
        return "write"
    if matching_commit(method, url, commits) is not None:
        return "write"
    if top_level_navigation and session_origin is not None:
        target = url_origin(url)
        if target is not None and target != session_origin:
            return "navigation"
    return None


def request_fields(body: bytes | None, content_type: str | None) -> tuple[list[RequestField], int]:
    """The fields a body would send (a urlencoded or multipart form's, a JSON object's top
    level; values truncated) and the body's size."""
    if not body:
        return [], 0
    size = len(body)
    ctype = (content_type or "").split(";")[0].strip().lower()
    pairs: list[tuple[str, str]] = []
    text = body.decode("utf-8", "replace")
    if ctype == "application/x-www-form-urlencoded" or (not ctype and "=" in text):
        pairs = parse_qsl(text, keep_blank_values=True)
    elif ctype == "multipart/form-data":
        pairs = _multipart(body, content_type or "")
    elif ctype.endswith("json") or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            pairs = [(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in data.items()]
    fields = [
        RequestField(name=_cut(k, 256), value=_cut(v, _MAX_VALUE)) for k, v in pairs[:_MAX_FIELDS]
    ]
    return fields, size


def _multipart(body: bytes, content_type: str) -> list[tuple[str, str]]:
    boundary = ""
    for part in content_type.split(";")[1:]:
        key, _, param = part.strip().partition("=")
        if key.lower() == "boundary":
            boundary = param.strip('"')
    if not boundary:
        return []
    out: list[tuple[str, str]] = []
    for chunk in body.split(b"--" + boundary.encode("latin-1"))[1:]:
        head, _, value = chunk.partition(b"\r\n\r\n")
        name: str | None = None
        filename: str | None = None
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if line.lower().startswith("content-disposition:"):
                for item in line.split(";")[1:]:
                    k, _, v = item.strip().partition("=")
                    if k == "name":
                        name = v.strip('"')
                    elif k == "filename":
                        filename = v.strip('"')
        if name is None:
            continue
        if filename is not None:
            shown = f"(file {filename})"
        else:
            shown = value.rstrip(b"\r\n-").decode("utf-8", "replace")
        out.append((name, shown))
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def held_request(
    method: str,
    url: str,
    kind: CommitKind,
    *,
    top_level: bool = False,
    body: bytes | None = None,
    content_type: str | None = None,
    page_url: str | None = None,
    trigger: str | None = None,
    element: str | None = None,
) -> HeldRequest:
    """The wire's :class:`HeldRequest` for a paused request."""
    fields, size = request_fields(body, content_type)
    return HeldRequest(
        method=method.upper()[:16],
        url=url[:8192],
        kind=kind,
        top_level=top_level,
        origin=url_origin(url),
        fields=fields,
        body_bytes=size,
        page_url=page_url[:8192] if page_url else None,
        trigger=trigger,
        element=element,
    )


def request_digest(request: HeldRequest) -> str:
    """SHA-256 (hex) of what would be sent: method, URL, kind, fields and body size. The
    daemon's ``commit.decided`` carries it; a gate lets a request go only when it matches."""
    canon = json.dumps(
        [
            request.method.upper(),
            request.url,
            request.kind,
            [[f.name, f.value] for f in request.fields],
            request.body_bytes,
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()
