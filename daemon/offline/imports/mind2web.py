"""A trajectory in the Online-Mind2Web layout (what ``webshepherd export --format mind2web``
writes, and what WebJudge-style judges read): ``result.json`` (``task``, ``website``,
``action_history``, ``thoughts``, ``final_result_response``) and
``trajectory/<n>_screenshot.<ext>``. It keeps no page text: the steps are scored from their
screenshots by a judge that reads images (``--vision``), else skipped. Action ``n`` is
matched with the screenshot numbered ``n`` (as the export names them for one action per
step). Files are read only under the folder (and ``--allow-dir`` folders); a screenshot that
is not an image or is too big is left out with a warning."""

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

_SHOT = re.compile(r"^(\d+)_screenshot\.(png|jpe?g|webp)$")


def is_mind2web_folder(path: Path) -> bool:
    return path.is_dir() and (path / "result.json").is_file()


def _screenshot(
    shot: Path | None, folders: Folders, warnings: list[str]
) -> tuple[bytes | None, ImageMime]:
    if shot is None:
        return None, "image/png"
    got = folders.try_screenshot(shot)
    if isinstance(got, str):
        warnings.append(f"screenshot left out: {got}")
        return None, "image/png"
    return got


def load_mind2web(folder: Path, folders: Folders | None = None) -> ImportedRun:
    """The trajectory in ``folder`` (files read only under ``folders``: default, itself)."""
    folders = folders or Folders.of(folder)
    warnings: list[str] = []
    try:
        data: Any = read_json(folders.check(folder / "result.json"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFormatError(f"{folder / 'result.json'}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("action_history"), list):
        raise ImportFormatError(f"{folder / 'result.json'}: no action_history list")
    intent = data.get("task") or data.get("confirmed_task")
    if not isinstance(intent, str) or not intent:
        raise ImportFormatError(f"{folder / 'result.json'}: no task: give it with --intent")
    shots: dict[int, Path] = {}
    traj = folder / "trajectory"
    for p in traj.iterdir() if traj.is_dir() else []:
        m = _SHOT.match(p.name)
        if m:
            shots[int(m.group(1))] = p
    said_thoughts = data.get("thoughts")
    thoughts: list[Any] = said_thoughts if isinstance(said_thoughts, list) else []
    website = data["website"] if isinstance(data.get("website"), str) else ""
    steps = []
    for n, action in enumerate(data["action_history"]):
        shot, mime = _screenshot(shots.get(n), folders, warnings)
        thought = thoughts[n] if n < len(thoughts) else None
        steps.append(
            ImportedStep(
                url=website,
                action=str(action),
                thought=thought if isinstance(thought, str) else "",
                screenshot=shot,
                screenshot_mime=mime,
            )
        )
    ours: dict[str, Any] = data["webshepherd"] if isinstance(data.get("webshepherd"), dict) else {}
    said = ours.get("outcome")
    outcome: Outcome = (
        "success" if said == "success" else "failure" if said == "failure" else "unknown"
    )
    return ImportedRun(
        kind="mind2web",
        intent=intent,
        start_url=website or None,
        steps=steps,
        agent=str(ours.get("agent") or "mind2web"),
        outcome=outcome,
        answer=str(data.get("final_result_response") or "") or None,
        warnings=warnings,
    )
