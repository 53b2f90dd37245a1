"""AgentLab folders are read without AgentLab, and nothing a pickle names is run. (Real
folders written by AgentLab's own loop: tests/integrations/test_rescore_imports.py.)"""

from __future__ import annotations

import gzip
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.offline.imports import ImportFormatError, load_run
from webshepherd.daemon.offline.imports.agentlab import safe_load


class StepInfo:  # pickled under this test module's name, which the reader never imports
    def __init__(self, step: int, obs: dict | None, action: str | None, think: str) -> None:
        self.step, self.obs, self.action = step, obs, action
        self.agent_info = {"think": think}


class Boom:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def dump(path: Path, obj: object) -> None:
    with gzip.open(path, "wb") as f:
        pickle.dump(obj, f)


def test_steps_come_from_the_pickles_and_screenshots(tmp_path: Path) -> None:
    obs = {"goal": "Find a cable", "url": "http://a/", "axtree_txt": "[1] link 'x'"}
    obs["elapsed_time"] = np.array([1.5])
    dump(tmp_path / "step_0.pkl.gz", StepInfo(0, obs, "click('1')", "Open it."))
    dump(tmp_path / "step_1.pkl.gz", StepInfo(1, {**obs, "url": "http://a/x"}, None, ""))
    (tmp_path / "screenshot_step_0.png").write_bytes(axtree_png("[1] link 'x'"))
    run = load_run(tmp_path)
    assert (run.kind, run.intent, run.start_url) == ("agentlab", "Find a cable", "http://a/")
    [step] = run.steps  # the final observation has no action
    assert (step.action, step.thought, step.axtree) == ("click('1')", "Open it.", "[1] link 'x'")
    assert step.screenshot == axtree_png("[1] link 'x'")


def test_a_pickle_that_calls_something_runs_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    dump(tmp_path / "step_0.pkl.gz", Boom())
    loaded = safe_load(tmp_path / "step_0.pkl.gz")
    assert not (tmp_path / "pwned").exists()
    assert type(loaded).__name__ == "system"  # a stand-in holding the arguments
    with pytest.raises(ImportFormatError, match="no goal in the observations"):
        load_run(tmp_path)
    (tmp_path / "step_0.pkl.gz").write_bytes(b"not gzip")
    with pytest.raises(ImportFormatError, match="not a readable pickle"):
        load_run(tmp_path)
