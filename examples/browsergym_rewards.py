"""Live rewards for a BrowserGym agent: ``python examples/browsergym_rewards.py [START_URL]``.

Needs a running daemon (``webshepherd serve``) and ``pip install '.[integrations]'`` in a clone;
``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the local daemon and its stored token,
``CHROMIUM`` the browser (default /usr/bin/chromium). docs/frameworks.md shows the lines between
the markers. Without START_URL it starts the bundled shop and does the shop's own task (the
cheapest USB-C cable, as Ada Lovelace) with its reference checklist: each step the demo's
scripted shopper proposes the action that makes progress and two distractors, the judge picks
one (``choose``) and the env runs it (``step``). The browser holds what commits: offline, serve
the tiny judge, which knows the shop, and let the shop's POSTs on loopback run flagged:
``webshepherd serve --model "$(webshepherd dev tiny-model --quiet)" --sandbox-origin
'http://127.0.0.1:*'``. Prints, roughly::

    step 1: fill('16', 'usb-c cable') 0.13, click('13') 0.00, fill('16', 'hdmi cable') 0.00
      ran fill('16', 'usb-c cable') (reward 0.13)
    ... (search, open the cheapest cable, add it to the cart, check out as Ada Lovelace)
    step 8: send_msg_to_user('Order VW-1001 is placed.') 1.00
      ran send_msg_to_user('Order VW-1001 is placed.') (reward 1.00)
    orders: [['Basic USB-C cable, 1 m']]

``close()`` ends the session (webshepherd tui lists it as ended). BrowserGym's chat window
launches playwright's own Chromium, without an executable path: when playwright has none,
``CHROMIUM`` is linked where it looks, in a temporary folder removed at the end.
"""

# --- README ---
import os

import browsergym.core  # noqa: F401  (registers browsergym/openended)
import gymnasium as gym
from webshepherd.daemon.demo.agent import CHECKLIST, TASK, ShopAgent
from webshepherd.integrations.browsergym import ProcessRewardWrapper, observation_text


def rounded(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:.2f}"  # None: the judge gave no judgement


def main(start_url: str) -> None:
    task = {"start_url": start_url, "goal": TASK}  # the shop's task: the cheapest USB-C cable
    chromium = {"executable_path": os.environ.get("CHROMIUM", "/usr/bin/chromium")}
    env = gym.make("browsergym/openended", task_kwargs=task, pw_chromium_kwargs=chromium)
    env = ProcessRewardWrapper(env, checklist=CHECKLIST)  # the daemon: $WEBSHEPHERD_URL, else local
    shopper = ShopAgent(seed=0)  # a stand-in for an LLM: the good action and two distractors
    try:
        obs, info = env.reset()
        for step in range(1, 11):
            done = ShopAgent.done(obs["url"])  # the order is placed: tell the user, then stop
            proposals = shopper.propose(obs["url"], observation_text(obs))
            proposals = [p for p in proposals if not done or p.action.startswith("send_msg")]
            index, scored = env.choose([(p.thought, p.action) for p in proposals])  # best-of-n
            rewards = {c.action: r for c, r in zip(scored.candidates, scored.rewards, strict=True)}
            print(f"step {step}:", ", ".join(f"{a} {rounded(r)}" for a, r in rewards.items()))
            pick = proposals[index]
            env.set_thought(pick.thought)
            obs, _, terminated, truncated, info = env.step(pick.action)
            print(f"  ran {pick.action} (reward {rounded(info['webshepherd']['reward'])})")
            if done or terminated or truncated:
                break
    finally:
        env.close()  # ends the session


# --- README ---


import sys  # noqa: E402 (below: running it as a script)
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402


def playwright_chromium(folder: Path) -> None:
    """Lets playwright 1.44 (BrowserGym's pin) find a Chromium for the chat window: its own,
    else ``CHROMIUM``, linked in ``folder``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        if Path(pw.chromium.executable_path).exists():
            return
        build = Path(pw.chromium.executable_path).parents[1].name  # e.g. chromium-1117
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        sys.exit(f"no Chromium: run `playwright install chromium` or set CHROMIUM ({chromium})")
    chrome = folder / "ms-playwright" / build / "chrome-linux" / "chrome"
    chrome.parent.mkdir(parents=True)
    chrome.symlink_to(os.path.realpath(chromium))
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(folder / "ms-playwright")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="browsergym-rewards-") as scratch:
        playwright_chromium(Path(scratch))
        if len(sys.argv) > 1:
            main(sys.argv[1])
        else:
            from webshepherd.daemon.demo.shop import ShopServer

            with ShopServer() as shop:
                main(shop.url)
                print("orders:", [o["items"] for o in shop.state.orders])
