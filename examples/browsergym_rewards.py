"""Live rewards for a BrowserGym agent: ``python examples/browsergym_rewards.py [START_URL]``.

Needs a running daemon (``webshepherd serve``) and ``pip install '.[integrations]'`` in a clone;
``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the local daemon and its stored token,
``CHROMIUM`` the browser (default: Chromium on PATH). docs/frameworks.md shows the lines between
the markers. Without START_URL it starts the bundled shop and does the shop's own task (the
cheapest USB-C cable, as Ada Lovelace) with its reference checklist: each step the demo's
scripted shopper proposes the action that makes progress and two distractors, the judge picks
one (``choose``) and the env runs it (``step``). START_URL: a copy of the bundled shop served
elsewhere (``webshepherd demo``'s); the scripted shopper knows only the shop's pages, so on any
other page it stops, saying so, and exits 1. The browser holds what commits: offline, serve
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
launches playwright's own Chromium, without an executable path: ``use_chromium()`` links the
machine's where playwright looks when playwright has none (docs/frameworks.md).

With a person paired (a paired ``webshepherd tui`` or extension connected, the default mode
``ask``), no reward waits (the wrapper scores with ``approval="never"``), and only what commits
waits for that person: served as above (the shop's loopback a sandbox origin), nothing waits;
without ``--sandbox-origin``, the order waits until they decide or ``--approval-timeout`` (120
s) passes (nobody paired: it is refused at once).
"""

# --- README ---
import sys

import browsergym.core  # noqa: F401  (registers browsergym/openended)
import gymnasium as gym
from webshepherd.daemon.demo.agent import CHECKLIST, TASK, ShopAgent
from webshepherd.integrations.browsergym import ProcessRewardWrapper, observation_text, use_chromium


def rounded(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:.2f}"  # None: the judge gave no judgement


def main(start_url: str) -> None:
    task = {"start_url": start_url, "goal": TASK}  # the shop's task: the cheapest USB-C cable
    chromium = {"executable_path": use_chromium()}  # BrowserGym's chat window finds it too
    env = gym.make("browsergym/openended", task_kwargs=task, pw_chromium_kwargs=chromium)
    env = ProcessRewardWrapper(env, checklist=CHECKLIST)  # the daemon: $WEBSHEPHERD_URL, else local
    shopper = ShopAgent(seed=0)  # a stand-in for an LLM: the good action and two distractors
    try:
        obs, info = env.reset()
        for step in range(1, 11):
            if not shopper.knows(observation_text(obs)):  # it knows only the bundled shop
                sys.exit(f"stopped at {obs['url']}: not a page of the bundled shop")
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


if __name__ == "__main__":
    from webshepherd.protocol.client.script import one_line_errors

    one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        from webshepherd.daemon.demo.shop import ShopServer

        with ShopServer() as shop:
            main(shop.url)
            print("orders:", [o["items"] for o in shop.state.orders])
