"""Live rewards for a BrowserGym agent: ``python examples/browsergym_rewards.py START_URL``.

Needs a running daemon (``webshepherd serve``) and ``pip install '.[integrations]'`` in a clone;
``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the local daemon and its stored token,
``CHROMIUM`` the browser. docs/frameworks.md shows the lines between the markers.
"""

# --- README ---
import os
import re
import sys

import browsergym.core  # noqa: F401  (registers browsergym/openended)
import gymnasium as gym
from webshepherd.integrations.browsergym import ProcessRewardWrapper, observation_text

task = {"start_url": sys.argv[1], "goal": "Search the shop for a USB-C cable"}
chromium = {"executable_path": os.environ.get("CHROMIUM", "/usr/bin/chromium")}
env = gym.make("browsergym/openended", task_kwargs=task, pw_chromium_kwargs=chromium)
checklist = "Checklist 1: Search the shop for a USB-C cable"  # optional: else the model writes one
env = ProcessRewardWrapper(env, checklist=checklist)  # the daemon: $WEBSHEPHERD_URL, else local
obs, info = env.reset()
box = re.search(r"\[(\w+)\] searchbox", observation_text(obs)).group(1)  # type: ignore[union-attr]
env.set_thought(f"The search box is [{box}]: type the product there.")
obs, reward, terminated, truncated, info = env.step(f"fill('{box}', 'usb-c cable')")
print(info["webshepherd"]["session_id"], info["webshepherd"]["reward"])
env.close()
# --- README ---
