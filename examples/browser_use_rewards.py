"""Live rewards for a browser-use agent: ``python examples/browser_use_rewards.py START_URL``.

Needs a running daemon (``webshepherd serve``), ``pip install 'webshepherd[integrations]'``
and a chat model: ``main`` takes any browser-use chat model (the tests pass a scripted one);
run as a script it uses ``ChatOpenAI`` (``OPENAI_API_KEY``). ``WEBSHEPHERD_URL`` /
``WEBSHEPHERD_TOKEN`` override the local daemon and its stored token, ``CHROMIUM`` the browser.
The README shows the lines between the markers.
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
    profile = BrowserProfile(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    agent = Agent(
        task="Search the shop for a USB-C cable",
        llm=llm,
        browser_session=BrowserSession(browser_profile=profile),
        initial_actions=[{"navigate": {"url": start_url}}],
    )
    client = AsyncClient(os.environ.get("WEBSHEPHERD_URL", "ws://127.0.0.1:8765"))
    handle = await attach(agent, client=client, mode="refine", threshold=0.5, checklist=CHECKLIST)
    history = await agent.run(max_steps=10, on_step_end=handle.on_step_end)
    await client.close()
    for step in handle.rewards:
        print(step.step, step.action, step.reward, "replaced" if step.replaced else "")
    return history


# --- README ---


if __name__ == "__main__":
    from browser_use import ChatOpenAI

    asyncio.run(main(ChatOpenAI(model="gpt-4.1-mini"), sys.argv[1]))
