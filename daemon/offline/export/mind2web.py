"""Recorded sessions in the Online-Mind2Web trajectory layout, for WebJudge-style outcome
judges: ``<dir>/<task_id>/result.json`` and ``<dir>/<task_id>/trajectory/<n>_screenshot.<ext>``
(the judges read the screenshots sorted by the first number in their names)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.export.sessions import ExportInfo, redacted_sessions
from webshepherd.daemon.recorder import History
from webshepherd.daemon.recorder.timeline import Timeline
from webshepherd.daemon.redact import Redactor
from webshepherd.protocol.common import SessionSummary

_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp"}


def result_json(tl: Timeline, red: Redactor, screenshots: list[str]) -> dict[str, Any]:
    """``result.json`` of one session: the keys the Online-Mind2Web judges read (``task``,
    ``action_history``, ``thoughts``, ``final_result_response``, ``input_image_paths``), plus
    ours under ``webshepherd``."""
    s = tl.summary
    actions, thoughts, rewards = [], [], []
    for st in tl.steps:
        for x in st.executed:
            actions.append(red.action(x.action, st.axtree))
            thoughts.append(red.text(x.thought or ""))
            sc = st.scoring
            reward = next(
                (
                    c.result.reward
                    for c in (sc.candidates if sc else [])
                    if c.candidate.action == x.action
                ),
                None,
            )
            rewards.append(reward)
    return {
        "task_id": s.session_id,
        "task": red.text(s.intent),
        "website": red.text(s.start_url or ""),
        "final_result_response": red.text(tl.answer or ""),
        "action_history": actions,
        "thoughts": thoughts,
        "input_image_paths": [],
        "webshepherd": {
            "outcome": s.outcome,
            "agent": red.text(s.agent.name),
            "action_rewards": rewards,
            "screenshots": screenshots,
            "model": tl.model,
        },
    }


def write_mind2web(
    history: History,
    sessions: Sequence[SessionSummary],
    out: Path,
    redact: Sequence[str] = (),
    progress: Callable[[int], None] | None = None,
) -> ExportInfo:
    """Write every session's folder under ``out``; returns counts for the summary."""
    rows = images = 0
    per_session: dict[str, int] = {}
    for s, tl, red in redacted_sessions(history, sessions, redact):
        sid = s.session_id
        folder = out / sid
        traj = folder / "trajectory"
        traj.mkdir(parents=True, exist_ok=True)
        shots = []
        for st in tl.steps:
            if progress and (st.scorings or st.executed):  # a step (protocol/steps.py)
                progress(1)
            if not st.screenshot:
                continue
            name = f"{st.step}_screenshot.{_EXT.get(st.screenshot_mime or '', 'png')}"
            (traj / name).write_bytes(st.screenshot)
            shots.append(f"trajectory/{name}")
        (folder / "result.json").write_text(
            json.dumps(result_json(tl, red, shots), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        rows += 1
        images += len(shots)
        per_session[sid] = len(shots)
    return {"rows": rows, "images": images, "per_session": per_session}
