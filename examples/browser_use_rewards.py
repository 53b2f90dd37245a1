"""Live rewards for a browser-use agent: ``python examples/browser_use_rewards.py [START_URL]``.

Needs a running daemon (``webshepherd serve``; ``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN``
override the local daemon and its stored token) and ``pip install '.[integrations]'`` in a clone.
Offline by default: the bundled shop (started here when no START_URL is given), its own task
(the cheapest USB-C cable, as Ada Lovelace) with its reference checklist, and a scripted chat
model that shops it step by step; ``--openai MODEL`` uses ``ChatOpenAI`` (``OPENAI_API_KEY``).
``CHROMIUM`` names the browser. Offline, serve the tiny judge, which knows the shop, and let the
shop's order (a POST on loopback) run flagged: ``webshepherd serve --model "$(webshepherd dev
tiny-model --quiet)" --sandbox-origin 'http://127.0.0.1:*'``. In ``refine`` mode an action whose
reward is below the threshold is replaced by the judge's feedback. Prints each step's action,
its reward and whether it was replaced, then the shop's orders; roughly::

    1 fill('16', 'usb-c cable') 0.13
    2 click('17') 0.25
    ... (open the cheapest cable, add it to the cart, check out as Ada Lovelace)
    8 send_msg_to_user('Order VW-1001 is placed.') 1.00
    orders: [['Basic USB-C cable, 1 m']]

The session ends however the run ends (done, max steps, an error, Ctrl-C).
docs/frameworks.md shows the lines between the markers.

With a person paired (a paired ``webshepherd tui`` or extension connected, the default mode
``ask``), no reward waits (``refine`` scores with ``approval="never"``), and only what commits
waits for that person: served as above (the shop's loopback a sandbox origin), nothing waits;
without ``--sandbox-origin``, the order waits until they decide or ``--approval-timeout`` (120
s) passes (nobody paired: it is refused at once).
"""

# --- README ---
import asyncio
import os
import sys
from typing import Any

from browser_use import Agent, BrowserProfile, BrowserSession
from webshepherd.daemon.demo.agent import CHECKLIST, TASK
from webshepherd.integrations.browser_use import attach
from webshepherd.protocol.client import AsyncClient


async def main(llm: Any, start_url: str) -> Any:
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    # no default extensions: browser-use would download three from the internet at start
    profile = BrowserProfile(executable_path=chromium, enable_default_extensions=False)
    agent = Agent(
        task=TASK,  # the shop's own: buy the cheapest USB-C cable as Ada Lovelace
        llm=llm,
        browser_session=BrowserSession(browser_profile=profile),
        initial_actions=[{"navigate": {"url": start_url}}],
        use_judge=False,  # webshepherd judges the steps (browser-use's judge asks the llm again)
        enable_signal_handler=False,  # Ctrl-C stops the run (the session ends), no pause
    )
    client = AsyncClient()  # the daemon: $WEBSHEPHERD_URL, else the local one
    # refine: an action below the threshold is replaced by the judge's feedback (the tiny judge
    # gives the shop's wrong steps about 0); the shop's reference checklist (else the model
    # writes one)
    handle = await attach(agent, client=client, mode="refine", threshold=0.1, checklist=CHECKLIST)
    try:  # the session ends however the run does (done, max steps, an error, Ctrl-C)
        history = await agent.run(max_steps=12, on_step_end=handle.on_step_end)
    finally:
        await client.close()
    for step in handle.rewards:
        reward = "none" if step.reward is None else f"{step.reward:.2f}"
        print(step.step, step.action, reward, "replaced" if step.replaced else "")
    return history


# --- README ---

import argparse  # noqa: E402 (below: running it as a script)
import logging  # noqa: E402
import re  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

from webshepherd.protocol.client.script import one_line_errors  # noqa: E402


def elements(page: str) -> list[tuple[int, str, str]]:
    """(index, tag, text) of the interactive elements browser-use lists in its last page state
    (``[index]<tag ... />`` and, on the next line, the element's text)."""
    listed = page.rsplit("Interactive elements:", 1)[-1].splitlines()
    found = []
    for i, line in enumerate(listed):
        m = re.search(r"\[(\d+)\]<(\w+)([^>]*)/>", line)
        if m:
            text = listed[i + 1].strip() if i + 1 < len(listed) else ""
            found.append((int(m.group(1)), m.group(2) + m.group(3), text))
    return found


class ScriptedChat:
    """A stand-in for a chat model (offline) that shops the bundled shop: search for the
    cables, open the cheapest, add it to the cart, check out as Ada Lovelace, say the order
    number. It reads the page's address and elements from the text browser-use sends it."""

    model = name = model_name = provider = "scripted"
    _verified_api_keys = True

    def __init__(self) -> None:
        self.calls = 0

    def next_action(self, page: str) -> tuple[str, dict[str, Any]]:
        url = re.findall(r"^Tab \w+: (\S+)", page, flags=re.M)[-1]
        path = urlsplit(url).path
        els, shown = elements(page), page.rsplit("Interactive elements:", 1)[-1]

        def find(tag: str, text: str) -> int | None:
            return next((i for i, t, x in els if t.startswith(tag) and text in x + t), None)

        if path.startswith("/order/"):
            number = path.rsplit("/", 1)[-1]
            return "The order is confirmed.", {
                "done": {"text": f"Order {number} is placed.", "success": True}
            }
        if path == "/search":
            prices = re.findall(r"^\s*(\S.*USB-C.*cable.*)\n[^$\n]*\$(\d+\.\d\d)", page, flags=re.M)
            name = min(prices, key=lambda np: float(np[1]))[0].strip() if prices else ""
            link = find("a", name) if name else None
            if link is not None:
                return f"The cheapest USB-C cable listed is '{name}'.", {"click": {"index": link}}
        if path.startswith("/product/") and find("button", "Add to cart") is not None:
            add = find("button", "Add to cart")
            return "This is the cheapest USB-C cable; add it to the cart.", {
                "click": {"index": add}
            }
        if path == "/cart" and find("a", "Proceed to checkout") is not None:
            go = find("a", "Proceed to checkout")
            return "The cable is in the cart; proceed to checkout.", {"click": {"index": go}}
        if path == "/checkout":
            box = find("input", "name=name")
            if box is not None and "Ada Lovelace" not in shown:
                return "The order needs the buyer's name.", {
                    "input": {"index": box, "text": "Ada Lovelace"}
                }
            order = find("button", "Place order")
            if order is not None:
                return "Name filled and standard delivery chosen; place the order.", {
                    "click": {"index": order}
                }
        search, button = find("input", "type=search"), find("button", "Search")
        if search is not None and "usb-c cable" not in shown:
            return "The search box is on the home page; search for USB-C cables.", {
                "input": {"index": search, "text": "usb-c cable"}
            }
        if button is not None:
            return "The query is typed; run the search.", {"click": {"index": button}}
        return "Nothing left to do here.", {"done": {"text": "Stopped.", "success": False}}

    async def ainvoke(self, messages: Any, output_format: Any = None, **kwargs: Any) -> Any:
        from browser_use.llm.views import ChatInvokeCompletion

        self.calls += 1
        page = "\n".join(str(getattr(m, "text", None) or m.content) for m in messages)
        thought, action = self.next_action(page)
        answer = {
            "thinking": thought,
            "evaluation_previous_goal": "ok",
            "memory": "",
            "next_goal": thought,
            "action": [action],
        }
        return ChatInvokeCompletion(completion=output_format.model_validate(answer), usage=None)


def quiet_browser_use() -> None:
    """browser-use logs each of its steps at INFO (set up when it is imported, the root logger
    too): its warnings only, so the lines printed are this script's (``-v``: all of them)."""
    for name in ("browser_use", "bubus", ""):  # "": the root logger
        logging.getLogger(name).setLevel(logging.WARNING)


def run(argv: list[str], verbose: bool = False) -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("start_url", nargs="?", help="default: the bundled shop, started here")
    parser.add_argument("--openai", metavar="MODEL", help="a real chat model (OPENAI_API_KEY)")
    args = parser.parse_args(argv)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "false")  # no network unless asked
    if not verbose:
        quiet_browser_use()
    if args.openai:
        if not os.environ.get("OPENAI_API_KEY"):
            sys.exit("--openai needs OPENAI_API_KEY in the environment")
        from browser_use import ChatOpenAI

        llm: Any = ChatOpenAI(model=args.openai)
    else:
        llm = ScriptedChat()
    try:
        if args.start_url:
            asyncio.run(main(llm, args.start_url))
            return
        from webshepherd.daemon.demo.shop import ShopServer

        with ShopServer() as shop:
            asyncio.run(main(llm, shop.url))
            print("orders:", [o["items"] for o in shop.state.orders])
    except KeyboardInterrupt:
        print("stopped (Ctrl-C); the session is ended", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    verbose = one_line_errors()  # no daemon, a wrong token: its one line (-v: the traceback too)
    run(sys.argv[1:], verbose)
