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


def test_a_screenshot_out_of_the_folder_or_not_an_image_is_left_out(tmp_path: Path) -> None:
    folder, outside = tmp_path / "exp", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "key").write_bytes(axtree_png("outside"))  # an image, but outside
    obs = {"goal": "Find a cable", "url": "http://a/", "axtree_txt": "[1] link 'x'"}
    for n in range(3):
        dump(folder / f"step_{n}.pkl.gz", StepInfo(n, obs, "click('1')", ""))
    dump(folder / "step_3.pkl.gz", StepInfo(3, obs, None, ""))
    (folder / "screenshot_step_0.png").symlink_to(outside / "key")
    (folder / "screenshot_step_1.jpg").write_text("not an image")
    (folder / "screenshot_step_2.jpg").write_bytes(axtree_png("ok"))  # a PNG named .jpg
    run = load_run(folder)
    assert [s.screenshot for s in run.steps] == [None, None, axtree_png("ok")]
    assert run.steps[2].screenshot_mime == "image/png"  # by its bytes
    first, second = run.warnings
    assert "screenshot_step_0.png (-> " in first and "outside the run's folder" in first
    assert "screenshot_step_1.jpg: not an image" in second
    wider = load_run(folder, allow=[outside])
    assert wider.steps[0].screenshot == axtree_png("outside")


def test_text_fields_are_strings_only(tmp_path: Path) -> None:
    """A pickle's non-string 'text' (a list that refers to itself) is never stringified."""
    loop: list[object] = []
    loop.append(loop)
    obs = {"goal": "Find", "url": loop, "axtree_txt": loop, "pruned_html": "<a>x</a>"}
    dump(tmp_path / "step_0.pkl.gz", StepInfo(0, obs, "click('1')", "ok"))
    [step] = load_run(tmp_path).steps
    assert (step.url, step.axtree, step.note) == ("", "<a>x</a>", "pruned HTML (no axtree_txt)")
