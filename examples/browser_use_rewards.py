"""Live rewards for a browser-use agent: ``python examples/browser_use_rewards.py [START_URL]``.

Needs a running daemon (``webshepherd serve``; ``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN``
override the local daemon and its stored token) and ``pip install '.[integrations]'`` in a clone.
Offline by default: the bundled shop (started here when no START_URL is given) and a scripted
chat model that searches it; ``--openai MODEL`` uses ``ChatOpenAI`` (``OPENAI_API_KEY``).
``CHROMIUM`` names the browser. Prints each step's action, reward, and whether the judge's
feedback replaced it. docs/frameworks.md shows the lines between the markers.
"""

# --- README ---
import asyncio
import os
import sys
from typing import Any

from browser_use import Agent, BrowserProfile, BrowserSession
from webshepherd.integrations.browser_use import attach
from webshepherd.protocol.client import AsyncClient

CHECKLIST = "Checklist 1: Search the shop for a USB-C cable"  # optional: else the model writes one


async def main(llm: Any, start_url: str) -> Any:
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    # no default extensions: browser-use would download three from the internet at start
    profile = BrowserProfile(executable_path=chromium, enable_default_extensions=False)
    agent = Agent(
        task="Search the shop for a USB-C cable",
        llm=llm,
        browser_session=BrowserSession(browser_profile=profile),
        initial_actions=[{"navigate": {"url": start_url}}],
    )
    client = AsyncClient()  # the daemon: $WEBSHEPHERD_URL, else the local one
    handle = await attach(agent, client=client, mode="refine", threshold=0.5, checklist=CHECKLIST)
    history = await agent.run(max_steps=10, on_step_end=handle.on_step_end)
    await client.close()
    for step in handle.rewards:
        print(step.step, step.action, step.reward, "replaced" if step.replaced else "")
    return history


# --- README ---

import argparse  # noqa: E402 (below: running it as a script)
import re  # noqa: E402


class ScriptedChat:
    """A stand-in for a chat model (offline): type 'usb-c' in the search box, press the search
    button, say done. It reads the element indices from the page text browser-use sends it."""

    model = name = model_name = provider = "scripted"
    _verified_api_keys = True

    def __init__(self) -> None:
        self.calls = 0

    async def ainvoke(self, messages: Any, output_format: Any = None, **kwargs: Any) -> Any:
        from browser_use.llm.views import ChatInvokeCompletion

        self.calls += 1
        page = "\n".join(str(getattr(m, "text", None) or m.content) for m in messages)
        # the page comes last (the prompt's own examples come before it)
        search = re.findall(r"\[(\d+)\]<input", page)  # the shop's search box
        button = re.findall(r"\[(\d+)\]<button", page)  # and its button
        if self.calls == 1 and search:
            action: dict[str, Any] = {"input": {"index": int(search[-1]), "text": "usb-c"}}
        elif self.calls == 2 and button:
            action = {"click": {"index": int(button[-1])}}
        else:
            action = {"done": {"text": "Found USB-C cables", "success": True}}
        answer = {
            "thinking": f"step {self.calls}",
            "evaluation_previous_goal": "ok",
            "memory": "",
            "next_goal": f"do {next(iter(action))}",
            "action": [action],
        }
        return ChatInvokeCompletion(completion=output_format.model_validate(answer), usage=None)


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("start_url", nargs="?", help="default: the bundled shop, started here")
    parser.add_argument("--openai", metavar="MODEL", help="a real chat model (OPENAI_API_KEY)")
    args = parser.parse_args(argv)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "false")  # no network unless asked
    if args.openai:
        if not os.environ.get("OPENAI_API_KEY"):
            sys.exit("--openai needs OPENAI_API_KEY in the environment")
        from browser_use import ChatOpenAI

        llm: Any = ChatOpenAI(model=args.openai)
    else:
        llm = ScriptedChat()
    if args.start_url:
        asyncio.run(main(llm, args.start_url))
        return
    from webshepherd.daemon.demo.shop import ShopServer

    with ShopServer() as shop:
        asyncio.run(main(llm, shop.url))


if __name__ == "__main__":
    run(sys.argv[1:])
