"""``webshepherd rescore`` end to end: a JSONL run over the bundled shop with a planted bad
step, re-scored through a real daemon on loopback (real SQLite, the HTML report).

Setup: these tests are about the plumbing (the import, the session with source
``import``, the recording, the summary, the stalled signal, the report). The judgement is
scripted (:class:`ScriptedJudge`: a reward, checklist labels and feedback per action, set
by the test), so the step named is decided by construction, not by what a model writes.
Which step a trained judge names is not asserted here; the first-bad-step rules themselves
are unit-tested on given judgements in tests/protocol/test_progress.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from pathlib import Path
from typing import Any

from webshepherd.daemon.cli import main
from webshepherd.daemon.demo.browser import Browser
from webshepherd.daemon.demo.shop import ShopServer
from webshepherd.daemon.recorder import History

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, Table
from tests.fixtures.scripted_judge import scripted_daemon as judged_by

CHECKLIST = "Checklist 1: Search the shop for USB-C cables\nChecklist 2: Open a cable's page"
PLANTED = "Deals lists no cables: the agent left the search results"


def token_file(tmp: Path) -> str:
    """The tests' token in a file (no command takes a secret in argv)."""
    path = tmp / "token"
    path.write_text(TEST_TOKEN)
    return str(path)


def scripted_daemon(base: Path, table: Table) -> Any:
    return judged_by(base, ScriptedJudge(table))


def bid(axtree: str, role: str, name: str) -> str:
    found = re.search(rf"\[(\d+)\] {role} '{re.escape(name)}", axtree)
    assert found, f"no {role} {name!r}"
    return found.group(1)


def write_run(shop: ShopServer, path: Path) -> Table:
    """Walk the shop in the text browser (real pages, real AX-tree text), write the JSONL
    run, and return the scripted judgement of each step's action. Step 2 is the planted bad
    step: it opens Deals from the search results."""
    browser = Browser()
    browser.goto(shop.url)
    lines: list[dict[str, Any]] = [
        {"intent": "Find a USB-C cable", "start_url": shop.url, "checklist": CHECKLIST}
    ]
    table: Table = {}

    def step(thought: str, action: str, reward: float, levels: tuple[int, ...], fb: str) -> None:
        obs = browser.observe()
        lines.append({"url": obs.url, "axtree": obs.axtree, "thought": thought, "action": action})
        table[obs.url, action] = (reward, levels, fb)
        browser.act(action)

    tree = browser.observe().axtree
    step(
        "Type the query.",
        f"fill('{bid(tree, 'searchbox', 'Search')}', 'usb-c')",
        0.55,
        (1, 0),
        "typed",
    )
    step("Run the search.", f"click('{bid(tree, 'button', 'Search')}')", 0.8, (2, 0), "searched")
    tree = browser.observe().axtree
    step("Maybe the deals.", f"click('{bid(tree, 'link', 'Deals')}')", 0.1, (2, 0), PLANTED)
    step("Back to the results.", "go_back()", 0.5, (2, 0), "back")
    tree = browser.observe().axtree
    cable = re.search(r"\[(\d+)\] link '[^']*USB-C[^']*cable", tree)
    assert cable, tree
    step("Open a cable.", f"click('{cable.group(1)}')", 0.9, (2, 2), "opened a cable")
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return table


async def test_rescore_names_the_planted_bad_step(tmp_path, capsys):
    with ShopServer() as shop:
        table = write_run(shop, tmp_path / "run.jsonl")
    data_dir = tmp_path / "data"
    argv = [
        "rescore",
        str(tmp_path / "run.jsonl"),
        *(
            "--token-file",
            token_file(tmp_path),
            "--quiet",
            "--data-dir",
            str(data_dir),
            "--stalled-after",
            "2",
        ),
        *("--json", str(tmp_path / "summary.json"), "--out", str(tmp_path / "report.html")),
    ]
    async with scripted_daemon(tmp_path, table) as daemon:
        assert await asyncio.to_thread(main, [*argv, "--url", daemon.url]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["format"], summary["steps"], summary["steps_scored"]) == ("jsonl", 5, 5)
    assert summary["rewards"] == [0.55, 0.8, 0.1, 0.5, 0.9]
    progress, reward = summary["first_bad_steps"]["progress"], summary["first_bad_steps"]["reward"]
    assert (progress["step"], progress["kind"], progress["feedback"]) == (
        2,
        "progress_stopped",
        PLANTED,
    )
    assert (reward["step"], reward["kind"], reward["feedback"]) == (2, "reward_drop", PLANTED)
    # no progress at indices 2 and 3: stalled (k = 2) at index 3 (printed: steps 3, 4)
    stalled = [s for s in summary["signals"] if s["kind"] == "stalled"]
    assert [(s["step"], s["stalled_steps"]) for s in stalled] == [(3, 2)]
    assert "first bad step (progress): step 3: no checklist item advanced" in printed
    assert "first bad step (reward): step 3: reward 0.10 under the running level 0.68" in printed
    assert f"judge's feedback: {PLANTED}" in printed
    assert "stalled: from step 4" in printed
    # the JSON keeps the wire's index and says so: the terminal's step 3 is "step": 2
    assert summary["steps_counted_from"] == 0
    assert progress["step"] + 1 - summary["steps_counted_from"] == 3
    # recorded as an imported session, with a report that names the step too
    history = History.open(data_dir / "webshepherd.sqlite3")
    try:
        [session] = history.list_sessions(5)
    finally:
        history.close()
    assert (session.session_id, session.source) == (summary["session_id"], "import")
    assert summary["report"] == str(tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "First bad step" in page and PLANTED in page


async def test_steps_without_a_page_are_skipped_with_a_reason(tmp_path):
    table = {
        ("http://shop.local/", "click('2')"): (0.7, (1,), "ok"),
        ("http://shop.local/3", "click('3')"): (0.6, (1,), "ok"),
    }
    run = tmp_path / "run.jsonl"
    rows = [
        {"intent": "Open the next page", "checklist": "Checklist 1: Open the next page"},
        {"url": "http://shop.local/", "axtree": "[2] link 'Next'", "action": "click('2')"},
        {"url": "http://shop.local/2", "action": "click('9')"},  # no AX tree, no screenshot
        {"url": "http://shop.local/3", "axtree": "[3] link 'Next'", "action": "click('3')"},
    ]
    run.write_text("\n".join(json.dumps(r) for r in rows))
    argv = ["rescore", str(run), "--token-file", token_file(tmp_path), "--quiet"]
    argv += ["--data-dir", str(tmp_path / "elsewhere"), "--json", str(tmp_path / "s.json")]
    async with scripted_daemon(tmp_path, table) as daemon:
        assert await asyncio.to_thread(main, [*argv, "--url", daemon.url]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["steps_scored"] == 2 and summary["rewards"] == [0.7, None, 0.6]
    [skip] = summary["skipped"]
    assert skip["step"] == 1 and "no AX tree or screenshot" in skip["why"]
    assert summary["report"] is None  # the daemon records elsewhere than --data-dir


async def test_a_webshepherd_recording_is_rescored(tmp_path):
    """A session recorded by the daemon is read back from its recording and re-judged (the
    judge scripted: what is checked is the replay of the recorded steps)."""
    with ShopServer() as shop:
        table = write_run(shop, tmp_path / "run.jsonl")
    first = [
        "rescore",
        str(tmp_path / "run.jsonl"),
        "--token-file",
        token_file(tmp_path),
        "--quiet",
    ]
    first += ["--data-dir", str(tmp_path / "a" / "data"), "--json", str(tmp_path / "first.json")]
    async with scripted_daemon(tmp_path / "a", table) as daemon:
        assert await asyncio.to_thread(main, [*first, "--url", daemon.url]) == 0
    recorded = json.loads((tmp_path / "first.json").read_text())["session_id"]
    recording = tmp_path / "a" / "data"  # the daemon's data dir (tests' config)
    again = ["rescore", str(recording), "--session", recorded, "--token-file", token_file(tmp_path)]
    again += [
        "--quiet",
        "--data-dir",
        str(tmp_path / "b" / "data"),
        "--json",
        str(tmp_path / "b.json"),
    ]
    async with scripted_daemon(tmp_path / "b", table) as daemon:
        assert await asyncio.to_thread(main, [*again, "--url", daemon.url]) == 0
    summary = json.loads((tmp_path / "b.json").read_text())
    assert summary["format"] == "webshepherd" and summary["session_id"] != recorded
    assert summary["rewards"] == [0.55, 0.8, 0.1, 0.5, 0.9]  # the same steps, judged again
    assert summary["first_bad_steps"]["progress"]["step"] == 2
    assert summary["report"] is not None  # recorded under b/data, where --data-dir points


async def test_a_mind2web_export_is_rescored_from_its_screenshots(tmp_path):
    """webshepherd's mind2web export keeps screenshots, not page text: with --vision each step
    is judged on its screenshot; without, each is skipped with the reason (judge scripted)."""
    from webshepherd.daemon.dev.screenshots import axtree_png
    from webshepherd.daemon.offline.export.mind2web import write_mind2web

    pages = ["[1] link 'Next'", "[2] link 'Next'"]
    shots = [axtree_png(p) for p in pages]
    rows: list[dict[str, Any]] = [{"intent": "Go on", "checklist": "Checklist 1: Go on"}]
    for n, page in enumerate(pages):
        png = base64.b64encode(shots[n]).decode()
        rows.append(
            {"url": "http://a/", "axtree": page, "screenshot": png, "action": f"click('{n + 1}')"}
        )
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    table = {("http://a/", f"click('{n + 1}')"): (0.6, (1,), "ok") for n in range(2)}
    argv = ["rescore", str(tmp_path / "run.jsonl"), "--token-file", token_file(tmp_path), "--quiet"]
    argv += ["--json", str(tmp_path / "a.json")]
    async with scripted_daemon(tmp_path / "a", table) as daemon:
        assert await asyncio.to_thread(main, [*argv, "--url", daemon.url]) == 0
    sid = json.loads((tmp_path / "a.json").read_text())["session_id"]
    history = History.open(tmp_path / "a" / "data" / "webshepherd.sqlite3")
    try:
        write_mind2web(history, history.sessions([sid]), tmp_path / "export")
    finally:
        history.close()
    folder = tmp_path / "export" / sid
    judge = ScriptedJudge(table)
    argv = ["rescore", str(folder), "--checklist", "Checklist 1: Go on"]  # mind2web keeps none
    argv += ["--token-file", token_file(tmp_path), "--quiet", "--json"]
    async with judged_by(tmp_path / "b", judge) as daemon:
        base = [*argv[:-1], "--url", daemon.url, "--json"]
        assert await asyncio.to_thread(main, [*base, str(tmp_path / "text.json")]) == 0
        assert (
            await asyncio.to_thread(main, [*base, str(tmp_path / "vision.json"), "--vision"]) == 0
        )
    text = json.loads((tmp_path / "text.json").read_text())
    assert text["format"] == "mind2web" and text["steps_scored"] == 0
    assert all("--vision scores the screenshot" in s["why"] for s in text["skipped"])
    vision = json.loads((tmp_path / "vision.json").read_text())
    assert vision["steps_scored"] == 2 and vision["rewards"] == [0.6, 0.6]
    assert judge.screenshots == shots  # each step judged with its own screenshot


def write_demo_run(shop: ShopServer, path: Path, planted: int) -> list[str]:
    """The demo's task walked by its scripted agent (its good action each step, except a
    distractor it proposes at step ``planted``), written as a JSONL run; the actions."""
    from webshepherd.daemon.demo.agent import CHECKLIST as DEMO_CHECKLIST
    from webshepherd.daemon.demo.agent import TASK, ShopAgent

    browser, agent = Browser(), ShopAgent(seed=0)
    browser.goto(shop.url)
    rows: list[dict[str, Any]] = [
        {"intent": TASK, "start_url": shop.url, "checklist": DEMO_CHECKLIST}
    ]
    while not agent.done(browser.url) and len(rows) < 15:
        obs = browser.observe()
        bad = len(rows) - 1 == planted
        pick = next(p for p in agent.propose(obs.url, obs.axtree) if p.good != bad)
        rows.append(
            {"url": obs.url, "axtree": obs.axtree, "thought": pick.thought, "action": pick.action}
        )
        browser.act(pick.action)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return [r["action"] for r in rows[1:]]
