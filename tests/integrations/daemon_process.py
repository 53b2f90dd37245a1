"""A real daemon for the integration tests (which run in their own venv).

Run with the main venv's Python: ``python -m tests.integrations.daemon_process DATA_DIR
[SPEC]``. Prints one JSON line ``{"url": ..., "monitor_code": ...}`` when it listens (a
one-time pairing code for a monitor, made as ``webshepherd pair tui`` makes it); stops when its
stdin closes.

``SPEC`` (JSON, optional): ``{"judge": {"default": [reward, [levels], feedback], "actions":
{action: [...]}, "delay_s": seconds}, "config": {DaemonConfig field: value}}``. Without
``judge`` the engine is the tiny model; with it a scripted judge (tests/fixtures/scripted_judge.py)
gives each action its judgement (by action alone, any page), after ``delay_s`` (default 0: a
slow judge), and writes no checklist of its own: a session without a reference checklist gets
no judgement, as a judge whose checklist does not parse.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from webshepherd.daemon.build import running_daemon
from webshepherd.daemon.config import ModelSettings
from webshepherd.daemon.dev.tiny_model import ensure_tiny_model
from webshepherd.daemon.engine.types import StepInput, StepScore
from webshepherd.daemon.extension_id import EXTENSION_ID  # the built extension's

from tests.fixtures.daemon import make_settings, pairing_code
from tests.fixtures.scripted_judge import Judgement, ScriptedJudge


class ActionJudge(ScriptedJudge):
    """A scripted judge keyed by the action alone (the tests' pages have ephemeral ports)."""

    def __init__(
        self, actions: dict[str, Judgement], default: Judgement | None, delay_s: float = 0.0
    ) -> None:
        super().__init__({}, default)
        self.actions = actions
        self.delay_s = delay_s

    def score(self, step: StepInput, on_progress: Any = None, cancel: Any = None) -> StepScore:
        time.sleep(self.delay_s)
        self.table = {(step.current_url, a): j for a, j in self.actions.items()}
        return super().score(step, on_progress, cancel)


def _judgement(raw: list[Any]) -> Judgement:
    reward, levels, feedback = raw
    return float(reward), tuple(int(x) for x in levels), str(feedback)


async def main(base: Path, spec: dict[str, Any]) -> None:
    settings = make_settings(
        base,
        request_timeout_s=120.0,
        allowed_extension_ids=(EXTENSION_ID,),
        **spec.get("config", {}),
    )
    judge = spec.get("judge")
    if judge is None:
        model = ModelSettings(str(ensure_tiny_model(progress=False)), device="cpu")
        daemon = running_daemon(replace(settings, model=model))
    else:
        default = _judgement(judge["default"]) if judge.get("default") else None
        actions = {a: _judgement(j) for a, j in judge.get("actions", {}).items()}
        judging = ActionJudge(actions, default, float(judge.get("delay_s", 0.0)))
        daemon = running_daemon(settings, judging)
    async with daemon as server:
        code = pairing_code(server.config.config_dir, "monitor")
        print(json.dumps({"url": server.url, "monitor_code": code}), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the test closes our stdin


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}))
