"""Process rewards and ground truth on MiniWoB++ through BrowserGym:
``.venv-integrations/bin/python examples/miniwob_rewards.py [TASK ...]``.

Needs a running daemon (``webshepherd serve``) and the integrations environment (``make
setup-integrations``: BrowserGym, ``browsergym-miniwob`` and ``miniwob``, whose package ships
the task pages, opened from disk); ``WEBSHEPHERD_URL`` / ``WEBSHEPHERD_TOKEN`` override the
local daemon and its stored token, ``CHROMIUM`` the browser (default: Chromium on PATH).
docs/frameworks.md shows the lines between the markers and the recipe around it.

Each task (default: click-button, enter-text, login-user) runs one episode, seed 1. The
episode's checklist is written from its goal when the env's reset makes it known
(``checklist(goal, task_info)``). A scripted agent reads the goal and the page and runs its
right action each step, weighing one wrong action (a click on another element) with it
(``step(action, candidates=[wrong])``); then it labels both as the environment's truth
(``env.session.label``): the right action completes the step's item, the wrong one does not.
Nothing here waits, even with a person paired (a paired ``webshepherd tui`` or extension
connected): with ``approval="never"`` (the default) no score is held, and MiniWoB's pages send
nothing that commits. Prints, roughly::

    click-button: Click on the "cancel" button
      step 0: click('18') 0.52 (ran), click('21') 0.31
      reward 1.0
    enter-text: Enter "Kanesha" into the text field | Press Submit
      step 0: fill('14', 'Kanesha') 0.40 (ran), click('15') 0.38
      step 1: click('15') 0.45 (ran), click('14') 0.12
      reward 1.0
    ...

``webshepherd export --format webprm`` then makes a pair of each labelled step, whatever the
judge scored (docs/export-formats.md).
"""

# --- README ---
import os
import re
import sys
from pathlib import Path
from typing import Any

import browsergym.miniwob  # noqa: F401  (registers browsergym/miniwob.*)
import gymnasium as gym
import miniwob
from webshepherd.integrations.browsergym import ProcessRewardWrapper, observation_text, use_chromium

# MiniWoB++'s task pages: the copy the miniwob package ships, opened from disk
PAGES = Path(miniwob.__file__).parent / "html" / "miniwob"
os.environ.setdefault("MINIWOB_URL", PAGES.as_uri() + "/")


def checklist(goal: str, task_info: dict[str, Any]) -> list[str]:
    """One item per instruction of a MiniWoB goal: 'Enter the username "a" and the password
    "b" into the text fields and press login.' -> 'Enter the username "a"', 'Enter the
    password "b" into the text fields', 'Press login'."""
    parts = goal.strip().rstrip(".").split(" and ")
    verb = parts[0].split()[0]
    items = [f"{verb} {p}" if p.startswith("the ") else p for p in parts]
    return [item[0].upper() + item[1:] for item in items]


def bid(page: str, role: str, name: str = "") -> str:
    """The first ``role`` element's bid on the page (named ``name``, any case)."""
    found = re.search(rf"\[(\w+)\] {role} '(?i:{re.escape(name)})", page)
    assert found, f"no {role} {name!r} on the page"
    return found.group(1)


def plan(task: str, goal: str, page: str) -> list[str]:
    """The scripted agent: its right action for each item of the checklist, in order."""
    values = re.findall(r'"([^"]*)"', goal)
    if task == "click-button":
        return [f"click('{bid(page, 'button', values[0])}')"]
    if task == "enter-text":
        return [f"fill('{bid(page, 'textbox')}', {values[0]!r})", f"click('{bid(page, 'button')}')"]
    if task == "login-user":
        boxes = re.findall(r"\[(\w+)\] textbox", page)
        fills = [f"fill('{b}', {v!r})" for b, v in zip(boxes, values, strict=True)]
        return [*fills, f"click('{bid(page, 'button')}')"]
    raise SystemExit(f"{task}: this scripted agent knows click-button, enter-text, login-user")


def wrong(page: str, action: str) -> str:
    """A wrong action the agent weighs: a click on another element of the page."""
    others = [b for b in re.findall(r"\[(\w+)\] (?:button|textbox)", page) if b not in action]
    return f"click('{others[-1]}')" if others else "scroll(0, 200)"


def rounded(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:.2f}"  # None: the judge gave no judgement


def main(tasks: list[str]) -> None:
    chromium = use_chromium()  # BrowserGym's chat window finds Chromium too
    for task in tasks:
        browser = {"executable_path": chromium}
        env = gym.make(f"browsergym/miniwob.{task}", pw_chromium_kwargs=browser)
        env = ProcessRewardWrapper(env, checklist=checklist)  # the daemon: $WEBSHEPHERD_URL
        try:
            obs, info = env.reset(seed=1)  # the checklist: written from this episode's goal
            items = info["webshepherd"]["checklist"]
            print(f"{task}: {' | '.join(items)}")
            for done, action in enumerate(plan(task, obs["goal"], observation_text(obs))):
                other = wrong(observation_text(obs), action)
                obs, reward, terminated, truncated, info = env.step(action, candidates=[other])
                ws = info["webshepherd"]  # the scored step, each candidate's reward
                left = len(items) - done - 1
                env.session.label(ws["step"], action, ["yes"] * (done + 1) + ["no"] * left)
                env.session.label(ws["step"], other, ["yes"] * done + ["no"] * (left + 1))
                said = {c["action"]: rounded(c["reward"]) for c in ws["candidates"]}
                print(f"  step {ws['step']}: {action} {said[action]} (ran), {other} {said[other]}")
                if terminated or truncated:
                    break
            print(f"  reward {reward}")
        finally:
            env.close()  # ends the session with the env's outcome


# --- README ---


if __name__ == "__main__":
    from webshepherd.protocol.client.script import one_line_errors

    one_line_errors()  # no daemon, a wrong token: the error's one line, no traceback (-v: with it)
    main(sys.argv[1:] or ["click-button", "enter-text", "login-user"])
