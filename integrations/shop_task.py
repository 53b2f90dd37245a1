"""The bundled shop (``webshepherd demo``'s "Volt & Wire") as a BrowserGym task, so a run on it
is recorded with what resets it and can be replayed (:mod:`webshepherd.integrations.replay`).

Importing this module registers two gym ids: ``browsergym/webshepherd.shop`` (the original
shop) and ``browsergym/webshepherd.shop-trap`` (the trap shop: a sold-out USB-C cable listed
as the cheapest, ``webshepherd demo --trap``'s). The gym id is what resets the run, as a
MiniWoB++ task's is: each ``reset`` serves a fresh shop (an empty cart, no orders) of that
variant from this process, at the address ``$WEBSHEPHERD_SHOP_URL`` names (default
:data:`DEFAULT_SHOP_URL`; the environment's own setting, as ``MINIWOB_URL`` is MiniWoB++'s).
The shop's links carry that address, so a replay must serve the shop where the recording did:
elsewhere, its pages drift from the recording (and the replay says so).

The goal is the shop's task (:attr:`~webshepherd.daemon.demo.variants.ShopVariant.intent`).
The episode ends when an order is placed (reward 1 when it holds exactly the target, placed
by the shopper, as the demo's outcome is judged; else 0), or when the agent sends the user a
message (``send_msg_to_user``: it gives up or reports; reward as for the orders so far).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from browsergym.core.registration import register_task
from browsergym.core.task import AbstractBrowserTask
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.demo.variants import ShopVariant, trap_variant
from webshepherd.daemon.demo.variants import variant as shop_variant

#: Where the shop is served unless ``$WEBSHEPHERD_SHOP_URL`` says otherwise.
DEFAULT_SHOP_URL = "http://127.0.0.1:8070/"  # not 8765, the daemon's
SHOP_URL_VAR = "WEBSHEPHERD_SHOP_URL"
#: The gym ids this module registers.
SHOP = "browsergym/webshepherd.shop"
SHOP_TRAP = "browsergym/webshepherd.shop-trap"


def shop_url() -> str:
    """The shop's address: ``$WEBSHEPHERD_SHOP_URL``, else :data:`DEFAULT_SHOP_URL`."""
    return os.environ.get(SHOP_URL_VAR) or DEFAULT_SHOP_URL


class _Served(ShopServer):
    """The shop, counting the requests it is serving and when it last answered one."""

    def __init__(self, host: str, port: int, variant: ShopVariant) -> None:
        super().__init__(host, port, variant)
        self.counting = threading.Lock()
        self.busy = 0
        self.last = time.monotonic()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.counting:
            self.busy += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        with self.counting:
            self.busy -= 1
            self.last = time.monotonic()

    def settle(self, page: Any, quiet_s: float = 0.25, limit_s: float = 5.0) -> None:
        """Wait until no request is being served and none came for ``quiet_s`` (at most
        ``limit_s``), then for ``page`` to load: on a busy machine BrowserGym's 500 ms click
        gives up before a form's POST and its redirect have landed, and the observation
        would be the page before them."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            with self.counting:
                idle = self.busy == 0 and time.monotonic() - self.last >= quiet_s
            if idle:
                break
            time.sleep(0.05)
        page.wait_for_load_state("load")


def _variant(name: str) -> ShopVariant:
    return trap_variant() if name == "trap" else shop_variant(int(name))


class ShopTask(AbstractBrowserTask):
    """One episode on a fresh shop (module docstring)."""

    def __init__(self, seed: int, variant: str = "0") -> None:
        super().__init__(seed)
        self.variant = _variant(variant)
        self.slow_mo = 0  # ms: more, and BrowserGym's 500 ms fill times out on a busy machine
        self.timeout = 5000  # ms
        self.server: _Served | None = None

    @classmethod
    def get_task_id(cls) -> str:
        return "webshepherd.shop"

    def setup(self, page: Any) -> tuple[str, dict[str, Any]]:
        url = urlsplit(shop_url())
        if url.scheme != "http" or not url.hostname or url.port is None:
            raise ValueError(
                f"${SHOP_URL_VAR}={shop_url()!r}: expected http://HOST:PORT/ (a loopback "
                "address and a port to serve the shop on)"
            )
        self.server = _Served(url.hostname, url.port, self.variant)
        self.server.start()
        page.goto(self.server.url)
        return self.variant.intent, {}

    def ordered(self) -> bool:
        """Whether the shop holds an order of exactly the target, placed by the shopper."""
        assert self.server is not None
        target, shopper = self.variant.target()["name"], self.variant.shopper
        return any(
            o["items"] == [target] and o["name"] == shopper for o in self.server.state.orders
        )

    def validate(self, page: Any, chat_messages: list[Any]) -> tuple[float, bool, str, dict]:
        assert self.server is not None
        self.server.settle(page)
        orders = self.server.state.orders
        roles = [m.get("role") for m in chat_messages]
        # BrowserGym's chat greets the user before the goal: the agent spoke when an
        # assistant's message follows the user's last one
        spoke = "user" in roles and "assistant" in roles[len(roles) - roles[::-1].index("user") :]
        if not orders and not spoke:
            return 0.0, False, "", {}
        won = self.ordered()
        return (1.0 if won else 0.0), True, "", {"orders": len(orders), "won": won}

    def teardown(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()


register_task(SHOP.split("/", 1)[1], ShopTask, task_kwargs={"variant": "0"})
register_task(SHOP_TRAP.split("/", 1)[1], ShopTask, task_kwargs={"variant": "trap"})
