"""The Python client SDK for the webshepherd daemon (protocol v1).

:class:`AsyncClient` (``async with AsyncClient() as client: ...``) is a thin websockets layer
over the sans-I/O :class:`~.core.ClientCore`; :class:`~.sync.Client` is its blocking form.
"""

from webshepherd.protocol.client.async_client import AsyncClient
from webshepherd.protocol.client.connection import ProgressCallback, client_version
from webshepherd.protocol.client.core import ClientCore
from webshepherd.protocol.client.session import SessionHandle
from webshepherd.protocol.client.subscription import Subscription

__all__ = [
    "AsyncClient",
    "ClientCore",
    "ProgressCallback",
    "SessionHandle",
    "Subscription",
    "client_version",
]
