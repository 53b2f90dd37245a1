"""Protocol version and transport defaults (protocol.md, "Transport")."""

import os

PROTOCOL_VERSION = 1
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_PATH = "/v1"
DEFAULT_URL = f"ws://{DEFAULT_HOST}:{DEFAULT_PORT}{DEFAULT_PATH}"
#: The environment variable that moves the SDK's default daemon address.
URL_ENV = "WEBSHEPHERD_URL"


def daemon_url(url: str | None = None) -> str:
    """``url`` when given, else ``$WEBSHEPHERD_URL`` when set, else :data:`DEFAULT_URL`."""
    return url or os.environ.get(URL_ENV) or DEFAULT_URL


MAX_FRAME_BYTES = 32 * 1024 * 1024
HELLO_TIMEOUT_S = 5.0
