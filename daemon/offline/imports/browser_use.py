"""browser-use's saved history (``AgentHistoryList.save_to_file``): a JSON object whose
``history`` lists the agent's steps.

What a step keeps: the model's output (``thinking``, ``next_goal``, the actions), the browser
state's ``url`` and ``screenshot_path``, and ``state_message``, the text the model was shown.
No AX tree is saved; the page as the agent saw it is the ``<browser_state>`` part of
``state_message`` (browser-use's element list, ``[index]<tag />`` lines): that is the
observation text given to the judge, and the actions' element indices refer to it. The
first action of a step is scored, mapped as the live integration maps it
(:func:`webshepherd.integrations.browser_use_actions.to_browsergym`, the index as the bid).
The task is the ``<user_request>`` of the first state message (or ``--intent``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.imports.run import (
    ImportedRun,
    ImportedStep,
    ImportFormatError,
    Outcome,
)
from webshepherd.integrations.browser_use_actions import to_browsergym

NOTE = "browser-use's page text (its <browser_state>), not a BrowserGym AX tree"
_BLOCK = r"<{0}>\s*(.*?)\s*</{0}>"


def _block(tag: str, text: str | None) -> str | None:
    found = re.search(_BLOCK.format(tag), text or "", re.S)
    return found.group(1) if found else None


def looks_like_browser_use(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("history"), list)
        and all(isinstance(h, dict) and "model_output" in h for h in data["history"][:3])
    )


def _action(output: dict[str, Any]) -> tuple[str, str]:
    """The step's first action as a BrowserGym action, and the thought."""
    thought = " ".join(str(x) for x in (output.get("thinking"), output.get("next_goal")) if x)
    actions = output.get("action") or []
    first = actions[0] if actions and isinstance(actions[0], dict) else {}
    (name, params), *_ = list(first.items()) or [("noop", {})]
    params = params if isinstance(params, dict) else {}
    index = params.get("index")
    bids = {index: str(index)} if isinstance(index, int) else {}
    action = to_browsergym(name, params, bids)
    if action is None:
        return "noop()", f"{thought} (browser-use action {first} has no BrowserGym form)".strip()
    return action, thought


def _screenshot(state: dict[str, Any], base: Path) -> bytes | None:
    path = state.get("screenshot_path")
    if not isinstance(path, str) or not path:
        return None
    for candidate in (Path(path), base / path, base / Path(path).name):
        if candidate.is_file():
            return candidate.read_bytes()
    return None


def read_browser_use(path: Path, data: dict[str, Any]) -> ImportedRun:
    history = data["history"]
    intent = next(
        (t for h in history if (t := _block("user_request", h.get("state_message")))), None
    )
    steps: list[ImportedStep] = []
    skipped: list[tuple[int, str]] = []
    start_url: str | None = None
    outcome: Outcome = "unknown"
    answer: str | None = None
    for n, h in enumerate(history):
        output = h.get("model_output")
        state = h.get("state") or {}
        if not isinstance(output, dict):
            skipped.append((n, "no model output (the step failed before the model answered)"))
            continue
        action, thought = _action(output)
        first = (output.get("action") or [{}])[0]
        if start_url is None and isinstance(first, dict) and "navigate" in first:
            start_url = (first["navigate"] or {}).get("url")
        page = _block("browser_state", h.get("state_message"))
        steps.append(
            ImportedStep(
                url=str(state.get("url") or ""),
                action=action,
                thought=thought,
                axtree=page,
                screenshot=_screenshot(state, path.parent),
                note=NOTE if page else None,
            )
        )
        for r in h.get("result") or []:
            if isinstance(r, dict) and r.get("is_done"):
                outcome = "success" if r.get("success") else "failure"
                answer = r.get("extracted_content")
    if intent is None:
        raise ImportFormatError(
            f"{path}: no task in the history (no <user_request> in any state_message): "
            "give it with --intent"
        )
    return ImportedRun(
        kind="browser-use",
        intent=intent,
        start_url=start_url or next((s.url for s in steps if s.url), None),
        steps=steps,
        agent="browser-use",
        outcome=outcome,
        answer=answer,
        skipped=skipped,
    )


def load_browser_use(path: Path) -> ImportedRun:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"{path}: not a JSON file ({exc})") from None
    if not looks_like_browser_use(data):
        raise ImportFormatError(f"{path}: not a browser-use history (no 'history' list)")
    return read_browser_use(path, data)
