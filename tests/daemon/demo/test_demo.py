"""``webshepherd demo`` end to end: tiny model, in-process daemon, shop, agent, plot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixtures.demo_cli import DEMO, demo_env, run_demo

pytestmark = pytest.mark.model


def test_demo_runs_end_to_end(tiny_model_path: Path, tmp_path: Path) -> None:
    result = run_demo(DEMO, demo_env(tmp_path, tiny_model_path), timeout=400)
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:] + out[-3000:]
    steps = re.findall(r"^step (\d+)  (\S+)", out, re.MULTILINE)
    assert steps and steps[0] == ("1", "/")
    assert [int(n) for n, _ in steps] == list(range(1, len(steps) + 1))
    # Three candidates per step, each with a reward bar and value or a dash, one chosen.
    rows = re.findall(r"^  (→| )(★| )(\S.{27}) (good|bad )  (█*░* \d\.\d{3}|—)", out, re.MULTILINE)
    assert len(rows) == 3 * len(steps)
    assert sum(mark == "→" for mark, *_ in rows) == len(steps)
    # The default policy runs the script's good action; Web-Shepherd's pick is starred.
    assert all(good == "good" for mark, _, _, good, _ in rows if mark == "→")
    assert sum(star == "★" for _, star, *_ in rows) <= len(steps)
    assert len(re.findall(r"^    chose ", out, re.MULTILINE)) == len(steps)
    assert "checklist" in out and "1. Search for USB-C cables" in out
    # The scripted policy always reaches the confirmation page, whatever the rewards.
    assert re.search(rf"order VW-\d+ placed in {len(steps)} steps", out)
    assert (
        "rewards are noise" in out and "webshepherd serve --model WebShepherd/WebShepherd_3B" in out
    )
    if re.search(r"█*░* \d\.\d{3}", out):
        assert "reward per step" in out  # the terminal plot, when any reward parsed
    # Nothing of the user's was touched: the daemon used a temporary data dir, deleted at exit.
    assert not (tmp_path / "user-data").exists() and not (tmp_path / "user-config").exists()
    temp = re.search(r"temporary data dir\s+(\S+?)\)", out)
    assert temp and not Path(temp.group(1)).exists()


def test_demo_vision_judges_each_page_with_its_screenshot(
    tiny_model_path: Path, tiny_vision_model_path: Path, tmp_path: Path
) -> None:
    env = demo_env(
        tmp_path, tiny_model_path, WEBSHEPHERD_TINY_VISION_MODEL=str(tiny_vision_model_path)
    )
    result = run_demo([*DEMO, "--vision", "--no-plot", "--samples", "1"], env, timeout=400)
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:] + out[-3000:]
    assert "judge inputs: text+image" in out and tiny_vision_model_path.name in out
    steps = re.findall(r"^step (\d+)  (\S+)  \(model [\d.]+ s, judged on (\S+)\)", out, re.M)
    assert steps and all(inputs == "text+image" for _, _, inputs in steps)
    assert re.search(rf"order VW-\d+ placed in {len(steps)} steps", out)
    assert not (tmp_path / "user-data").exists()


def test_demo_vision_is_the_terminal_demo(tiny_model_path: Path, tmp_path: Path) -> None:
    result = run_demo(
        [*DEMO, "--vision", "--browser"], demo_env(tmp_path, tiny_model_path), timeout=60
    )
    assert result.returncode == 2 and "--vision runs the terminal demo" in result.stdout
