"""What a request the browser is about to send commits (sans-I/O; addition to v1).

The browser gates (the extension's, :mod:`webshepherd.integrations.commit_gate`) pause every
request and ask :func:`commit_kind` whether it commits: a method other than GET, HEAD or
OPTIONS (a write), a top-level navigation to another origin, or a download. One that does
becomes a :class:`~webshepherd.protocol.common.HeldRequest` (:func:`held_request`, its fields
read from the body the browser would send) and a ``commit.check``; the daemon's answer names
the request's :func:`request_digest`, so a client lets only the request it asked about go.
"""

from __future__ import annotations

import hashlib
import json
from urllib.parse import parse_qsl, urlsplit

from webshepherd.protocol.common import CommitKind, HeldRequest, RequestField

__all__ = [
    "SAFE_METHODS",
    "commit_kind",
    "held_request",
    "request_digest",
    "request_fields",
    "url_origin",
]

#: Methods that send nothing to keep (RFC 9110's safe methods, less TRACE).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_MAX_FIELDS = 64
_MAX_VALUE = 512


def url_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of a URL as the browser sends it (already canonical: lower-case
    host, punycode, default port dropped); ``file://`` for every file URL; None for others
    (``data:``, ``blob:``, ``about:``)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme == "file":
        return "file://"
    if scheme not in ("http", "https", "ws", "wss") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or (scheme, port) in (("http", 80), ("https", 443), ("ws", 80), ("wss", 443)):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def commit_kind(
    method: str,
    url: str,
    *,
    top_level_navigation: bool,
    session_origin: str | None,
    download: bool = False,
) -> CommitKind | None:
    """What the request commits, or None when it sends nothing to keep.

    ``top_level_navigation``: the page itself navigates (not a frame, not a fetch);
    ``session_origin``: the origin the session works on (a navigation elsewhere commits);
    ``download``: the response would be saved as a file (read at the response, where the
    browser knows)."""
    if download:
        return "download"
    if method.upper() not in SAFE_METHODS:
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
