"""The demo shop "Volt & Wire": a few pages from ``site/`` served by ``http.server`` on loopback.

Home (search form) → results → product page → cart → checkout → order
confirmation, plus two distractor pages (deals, about). One shopper: the cart
and orders live in the server object.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from string import Template
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlsplit

from webshepherd.daemon.demo.variants import SITE, ShopVariant
from webshepherd.daemon.demo.variants import variant as shop_variant


def _template(name: str) -> Template:
    return Template((SITE / name).read_text(encoding="utf-8"))


@dataclass
class ShopState:
    products: list[dict[str, Any]]
    cart: list[str] = field(default_factory=list)
    orders: list[dict[str, Any]] = field(default_factory=list)

    def product(self, pid: str) -> dict[str, Any] | None:
        return next((p for p in self.products if p["id"] == pid), None)

    def search(self, query: str) -> list[dict[str, Any]]:
        words = query.lower().split()
        found = []
        for p in self.products:
            hay = (p["name"] + " " + " ".join(p["tags"])).lower()
            if words and all(w in hay for w in words):
                found.append(p)
        return found

    def total(self) -> float:
        return round(sum(self.product(i)["price"] for i in self.cart if self.product(i)), 2)  # type: ignore[index]


def _money(x: float) -> str:
    return f"{x:.2f}"


class _Handler(BaseHTTPRequestHandler):
    server: ShopServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _page(self, title: str, content: str, status: HTTPStatus = HTTPStatus.OK) -> None:
        body = (
            _template("base.html")
            .substitute(
                title=html.escape(title),
                content=content,
                cart_count=len(self.server.state.cart),
                shop=html.escape(self.server.variant.shop),
            )
            .encode("utf-8")
        )
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _not_found(self) -> None:
        self._page(
            "Not found", '<h1>Page not found</h1><p><a href="/">Home</a></p>', HTTPStatus.NOT_FOUND
        )

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        state = self.server.state
        path = url.path.rstrip("/") or "/"
        esc = html.escape
        shop = self.server.variant
        if path == "/":
            cats = "\n".join(
                f'  <li><a href="/search?q={quote_plus(q)}">{esc(label)}</a></li>'
                for label, q in shop.categories
            )
            self._page(
                f"{shop.shop} — home",
                _template("home.html").substitute(
                    heading=esc(shop.heading), categories=cats, example=esc(self.server.example)
                ),
            )
        elif path == "/search":
            q = query.get("q", "")
            found = state.search(q)
            items = "\n".join(
                f'  <li><a href="/product/{p["id"]}?q={quote_plus(q)}">{esc(p["name"])}</a> '
                f"— ${_money(p['price'])}</li>"
                for p in found
            )
            self._page(
                f"Search: {q}",
                _template("results.html").substitute(query=esc(q), count=len(found), items=items),
            )
        elif path.startswith("/product/"):
            p = state.product(path.rsplit("/", 1)[-1])
            if p is None:
                return self._not_found()
            page = "product_sold_out.html" if p.get("sold_out") else "product.html"
            self._page(
                p["name"],
                _template(page).substitute(
                    name=esc(p["name"]),
                    price=_money(p["price"]),
                    blurb=esc(p["blurb"]),
                    id=p["id"],
                    back_query=quote_plus(query.get("q", p["tags"][0])),
                ),
            )
        elif path == "/cart":
            self._page("Your cart", _template("cart.html").substitute(body=self._cart_body()))
        elif path == "/checkout":
            if not state.cart:
                return self._redirect("/cart")
            self._page(
                "Checkout", _template("checkout.html").substitute(total=_money(state.total()))
            )
        elif path.startswith("/order/"):
            num = path.rsplit("/", 1)[-1]
            order = next((o for o in state.orders if o["number"] == num), None)
            if order is None:
                return self._not_found()
            self._page(
                f"Order {num} confirmed",
                _template("confirmation.html").substitute(
                    name=esc(order["name"]),
                    order=num,
                    items=esc(", ".join(order["items"])),
                    total=_money(order["total"]),
                ),
            )
        elif path == "/about":
            what = "cables" if shop.number == 0 else shop.kind.plural
            self._page("About", _template("about.html").substitute(shop=esc(shop.shop), what=what))
        elif path == "/deals":
            deals = [(state.product(i), note) for i, note in self.server.deal_notes]
            items = "\n".join(
                f'  <li><a href="/product/{p["id"]}">{esc(p["name"])}</a> — {esc(note)}</li>'
                for p, note in deals
                if p
            )
            self._page("Deals", _template("deals.html").substitute(items=items))
        elif path == "/static/shop.css":
            body = (SITE / "shop.css").read_bytes()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/css")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._not_found()

    def _cart_body(self) -> str:
        state = self.server.state
        if not state.cart:
            return '<p>Your cart is empty.</p>\n<p><a href="/">Start shopping</a></p>'
        rows = "\n".join(
            f"  <tr><td>{html.escape(p['name'])}</td><td>${_money(p['price'])}</td></tr>"
            for p in (state.product(i) for i in state.cart)
            if p
        )
        return (
            f"<table>\n  <tr><th>Item</th><th>Price</th></tr>\n{rows}\n</table>\n"
            f"<p>Total: ${_money(state.total())}</p>\n"
            '<p><a href="/checkout">Proceed to checkout</a></p>\n'
            '<p><a href="/">Continue shopping</a></p>'
        )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode("utf-8")).items()}
        state = self.server.state
        path = urlsplit(self.path).path
        wanted = state.product(form.get("id", ""))
        if path == "/cart/add" and wanted and not wanted.get("sold_out"):
            state.cart.append(form["id"])
            return self._redirect("/cart")
        if path == "/order" and state.cart:
            if not form.get("name", "").strip():
                return self._redirect("/checkout")
            number = f"VW-{1001 + len(state.orders)}"
            state.orders.append(
                {
                    "number": number,
                    "name": form["name"].strip(),
                    "delivery": form.get("delivery"),
                    "items": [state.product(i)["name"] for i in state.cart],  # type: ignore[index]
                    "total": state.total(),
                }
            )
            state.cart.clear()
            return self._redirect(f"/order/{number}")
        self._not_found()


class ShopServer(ThreadingHTTPServer):
    """The shop on ``127.0.0.1`` and an ephemeral port; ``start()`` serves from a thread."""

    daemon_threads = True

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, variant: ShopVariant | None = None
    ) -> None:
        super().__init__((host, port), _Handler)
        self.use(variant if variant is not None else shop_variant(0))
        self._thread: threading.Thread | None = None

    def use(self, variant: ShopVariant) -> None:
        """Serve ``variant`` from now on, with an empty cart and no orders."""
        self.variant = variant
        self.state = ShopState([dict(p) for p in variant.products])
        notes = ("10% off at checkout", "free delivery")
        self.deal_notes = list(zip(variant.deals, notes, strict=False))
        self.example = "hdmi cable" if variant.number == 0 else variant.categories[0][1]

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> ShopServer:
        self._thread = threading.Thread(target=self.serve_forever, name="demo-shop", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ShopServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
