"""``webshepherd demo`` end to end: tiny model, in-process daemon, shop, agent, plot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fixtures.demo_cli import DEMO, demo_env, run_demo

pytestmark = pytest.mark.model


def test_demo_runs_end_to_end(tiny_model_path: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    args = [*DEMO, "--out", str(out_dir)]
    result = run_demo(args, demo_env(tmp_path, tiny_model_path), timeout=400)
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
    assert len(re.findall(r"^    chose ", out, re.MULTILINE)) == len(steps)
    assert "checklist" in out and "1. Search for USB-C cables" in out
    assert re.search(rf"order VW-\d+ placed in {len(steps)} steps", out)
    assert "knows only this shop" in out
    assert "the shop is a sandbox origin in this demo" in out  # one line; the order goes through
    assert "reward per step" in out  # the terminal plot
    # its step axis labels whole steps, each once
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    axis = re.search(r"└[─┬]+┘ *\n(.*)\n", plain)
    assert axis and axis.group(1).split() == [str(n) for n in range(1, len(steps) + 1)], plain
    # no library's warning (transformers' deprecated cache name was one)
    assert not re.search(r"\w+Warning\b|deprecated", result.stderr + out), result.stderr[-3000:]
    # Real signal from the tiny judge that ships with the package (built by `train`).
    summary = json.loads((out_dir / "summary.json").read_text("utf-8"))
    t = summary["totals"]
    assert (t["steps"], t["candidates"]) == (7, 21)
    assert t["parsed"] >= 19, t
    # the good action first in every step (bench/README.md, *The tiny judge*: margins >= 0.09)
    assert t["agreed"] == 7, t
    assert summary["outcome"]["status"] == "success" and "data_dir" not in summary
    # The executed (good) action's checklist verdicts move No -> In Progress -> Yes.
    rank = {"no": 0, "in_progress": 1, "yes": 2}
    trail = [[rank[s["checklist"][str(i)]] for s in summary["steps"]] for i in (1, 2, 3, 4)]
    assert all(t == sorted(t) for t in trail)  # no item ever regresses
    assert all(t[-1] == 2 for t in trail)  # the order placed: every item done
    assert [t[0] for t in trail] == [1, 0, 0, 0]  # typing the query: the search under way
    assert 1 in trail[3]  # checkout: under way (on its page, the name filled) before done
    assert f"ranked the scripted good action first in {t['agreed']} of 7" in out
    # Nothing of the user's was touched: the daemon used a temporary data dir, deleted at exit.
    assert not (tmp_path / "user-data").exists() and not (tmp_path / "user-config").exists()
    temp = re.search(r"temporary data dir\s+(\S+?)\)", out)
    assert temp and not Path(temp.group(1)).exists()


@pytest.mark.parametrize("variant", [1, 2, 3])
def test_demo_on_a_shop_variant_the_judge_never_saw(
    variant: int, tiny_model_path: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "out"
    args = [*DEMO, "--variant", str(variant), "--out", str(out_dir), "--keep", "--no-plot"]
    result = run_demo(args, demo_env(tmp_path, tiny_model_path), timeout=400)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    assert "the judge never saw" in result.stdout
    summary = json.loads((out_dir / "summary.json").read_text("utf-8"))
    t = summary["totals"]
    assert summary["variant"] == variant and summary["outcome"]["status"] == "success"
    assert t["agreed"] == 7, t  # good action first on every page of a shop it never saw
    data_dir = Path(summary["data_dir"])  # --keep: the recording stays
    assert (data_dir / "webshepherd.sqlite3").is_file()


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


def test_demo_with_guards_refuses_the_first_step_that_commits(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    """With ``--guards`` and nobody paired, the daemon refuses the first step that commits at
    once: the product page's "Add to cart" submits a POST form (the checkout's "Place order",
    a POST form named with "order", would be refused the same way), and the demo stops there
    without running it."""
    out_dir = tmp_path / "out"
    args = [*DEMO, "--guards", "--no-plot", "--out", str(out_dir)]
    result = run_demo(args, demo_env(tmp_path, tiny_model_path), timeout=400)
    out = result.stdout
    assert result.returncode == 0, result.stderr[-3000:] + out[-3000:]
    assert "guards: whatever its reward, a person must decide a step that" in out
    refused = re.search(r"refused by the guards: (.*)", out)
    assert refused, out[-3000:]
    assert refused.group(1).startswith("guarded (form_submit): element")
    flat = " ".join(out.split())  # the console wraps long lines
    assert re.search(r"submits a POST form to http://127\.0\.0\.1:\d+/cart/add", flat), flat
    assert "no person is connected to decide" in flat
    assert "placed" not in out and "task not finished" in out
    summary = json.loads((out_dir / "summary.json").read_text("utf-8"))
    assert summary["outcome"]["status"] != "success"
    assert "/product/" in summary["steps"][-1]["url"]  # the refused step: on the product page


def test_the_printed_step_shows_untrusted_text_escaped():
    """An action, thought or title with markup, a bidi override, a zero-width space or a tag
    prints as escapes (the terminal gets no control, Rich no markup)."""
    import io

    from rich.console import Console
    from webshepherd.daemon.demo.agent import Proposal
    from webshepherd.daemon.demo.run import StepRecord, _print_step, console_safe

    console = Console(file=io.StringIO(), width=160, record=True, color_system=None)
    held = Proposal("[b]go\u202e", "click('1\u200b3')", good=False)
    ok = Proposal("fine\U000e0041", "goto('https://pаypal.com/')", good=True)
    rec = StepRecord(1, "http://shop.local/", [held, ok], [0.9, 0.1], chosen=1, best=0)
    _print_step(console, rec, {1: "Pay\u00ad\x1b[2J"}, 1.0)
    console.print("  1. " + console_safe("Pay[/b]\u00ad"))
    text = console.export_text()
    assert "click('1\\u200b3')" in text and "[b]go\\u202e" in text and "fine\\U000e0041" in text
    assert "goto('https://xn--pypal-4ve.com/')" in text
    assert "Pay[/b]\\xad" in text
    assert not {"\u200b", "\u202e", "\U000e0041", "\u00ad", "\x1b"} & set(text)
