"""browser-use's saved history (``AgentHistoryList.save_to_file``): a JSON object whose
``history`` lists the agent's steps.

What a step keeps: the model's output (``thinking``, ``next_goal``, the actions), the browser
state's ``url`` and ``screenshot_path``, and ``state_message``, the text the model was shown.
No AX tree is saved; the page as the agent saw it is the ``<browser_state>`` part of
``state_message`` (browser-use's element list, ``[index]<tag />`` lines): that is the
observation text given to the judge, and the actions' element indices refer to it. The
first action of a step is scored, mapped as the live integration maps it
(:func:`webshepherd.protocol.actions.from_browser_use`, the index as the bid).
The task is the ``<user_request>`` of the first state message (or ``--intent``).

A ``screenshot_path`` is read only when, symlinks resolved, it lies under the history's folder
or a folder named with ``--allow-dir``, and is an image (PNG, JPEG, WebP) within the size
limit; otherwise the step keeps no screenshot and the run a warning that says why. A path that
is not there is looked for by its name beside the history.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.files import Folders, read_json
from webshepherd.daemon.offline.imports.run import (
    ImageMime,
    ImportedRun,
    ImportedStep,
    ImportFormatError,
    Outcome,
)
from webshepherd.protocol.actions import from_browser_use

NOTE = "browser-use's page text (its <browser_state>), not a BrowserGym AX tree"
_BLOCK = r"<{0}>\s*(.*?)\s*</{0}>"


def _block(tag: str, text: object) -> str | None:
    found = re.search(_BLOCK.format(tag), text if isinstance(text, str) else "", re.S)
    return found.group(1) if found else None


def looks_like_browser_use(data: object) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("history"), list)
        and all(isinstance(h, dict) and "model_output" in h for h in data["history"][:3])
    )


def _first(output: dict[str, Any]) -> dict[str, Any]:
    """The step's first action (``{name: params}``; empty when there is none)."""
    actions = output.get("action")
    first = actions[0] if isinstance(actions, list) and actions else None
    return first if isinstance(first, dict) else {}


def _action(output: dict[str, Any]) -> tuple[str, str]:
    """The step's first action as a BrowserGym action, and the thought."""
    thought = " ".join(str(x) for x in (output.get("thinking"), output.get("next_goal")) if x)
    first = _first(output)
    (name, params), *_ = list(first.items()) or [("noop", {})]
    params = params if isinstance(params, dict) else {}
    index = params.get("index")
    bids = {index: str(index)} if isinstance(index, int) else {}
    try:
        action = from_browser_use(name, params, bids)
    except (KeyError, TypeError, ValueError, OverflowError):  # parameters of the wrong shape
        action = None
    if action is None:
        return "noop()", f"{thought} (browser-use action {first} has no BrowserGym form)".strip()
    return action, thought


def _screenshot(
    state: dict[str, Any], base: Path, folders: Folders, warnings: list[str]
) -> tuple[bytes | None, ImageMime]:
    """The step's screenshot when an allowed image file (else None, and a warning)."""
    given = state.get("screenshot_path")
    if not isinstance(given, str) or not given or "\0" in given:
        return None, "image/png"
    path = Path(given)
    found = [p for p in dict.fromkeys((base / path, base / path.name)) if p.is_file()]
    refused = ""
    for candidate in found:
        got = folders.try_screenshot(candidate)
        if not isinstance(got, str):
            return got
        refused = refused or got
    warnings.append(f"screenshot left out: {refused or f'{given}: not found'}")
    return None, "image/png"


def read_browser_use(
    path: Path, data: dict[str, Any], folders: Folders | None = None
) -> ImportedRun:
    """The run of a parsed history (``folders``: where screenshots may be read; default, the
    history's folder)."""
    folders = folders or Folders.of(path)
    warnings: list[str] = []
    history = data["history"]
    intent = next(
        (
            t
            for h in history
            if isinstance(h, dict) and (t := _block("user_request", h.get("state_message")))
        ),
        None,
    )
    steps: list[ImportedStep] = []
    skipped: list[tuple[int, str]] = []
    start_url: str | None = None
    outcome: Outcome = "unknown"
    answer: str | None = None
    for n, h in enumerate(history):
        output = h.get("model_output") if isinstance(h, dict) else None
        state = h.get("state") if isinstance(h, dict) else None
        state = state if isinstance(state, dict) else {}
        if not isinstance(output, dict):
            skipped.append((n, "no model output (the step failed before the model answered)"))
            continue
        action, thought = _action(output)
        first = _first(output)
        if start_url is None and isinstance(first.get("navigate"), dict):
            to = first["navigate"].get("url")
            start_url = to if isinstance(to, str) else None
        page = _block("browser_state", h.get("state_message"))
        shot, mime = _screenshot(state, path.parent, folders, warnings)
        steps.append(
            ImportedStep(
                url=state["url"] if isinstance(state.get("url"), str) else "",
                action=action,
                thought=thought,
                axtree=page,
                screenshot=shot,
                screenshot_mime=mime,
                note=NOTE if page else None,
            )
        )
        results = h.get("result") if isinstance(h, dict) else None
        for r in results if isinstance(results, list) else []:
            if isinstance(r, dict) and r.get("is_done"):
                outcome = "success" if r.get("success") else "failure"
                said = r.get("extracted_content")
                answer = said if isinstance(said, str) else None
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
        warnings=warnings,
    )


def load_browser_use(path: Path, folders: Folders | None = None) -> ImportedRun:
    try:
        data = read_json(path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"{path}: not a JSON file ({exc})") from None
    if not looks_like_browser_use(data):
        raise ImportFormatError(f"{path}: not a browser-use history (no 'history' list)")
    return read_browser_use(path, data, folders)
