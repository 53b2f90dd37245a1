"""Files someone sends you, through the real ``webshepherd`` command: ``rescore`` of each
import format, ``prompt`` and ``eval`` on hostile files. Each hostile file is made here (no
fixture in the repo): JSON nested 200,000 deep, an AgentLab step file of 1.5 MB that inflates
to 1.5 GB, screenshot paths that lead out of the run's folder (``../``, absolute, a symlink),
a screenshot that is not an image. Each is refused with one line naming the file and the
limit (exit 1, no traceback), or left out with a warning, the rest of the run rescored; what
lies outside the folder never reaches the recording or the report.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import pickle
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from webshepherd.daemon.cli import main
from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.dev.screenshots import axtree_png
from webshepherd.daemon.recorder import History

from tests.fixtures.daemon import TEST_TOKEN
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA"
DEEP = 200_000


def deep(n: int = DEEP) -> str:
    return "[" * n + "]" * n


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess (so a traceback would show on its stderr)."""
    env = dict(os.environ, WEBSHEPHERD_KEYRING="0", WEBSHEPHERD_URL="ws://127.0.0.1:9")
    return subprocess.run(
        [sys.executable, "-m", "webshepherd.daemon.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def refused(done: subprocess.CompletedProcess[str], *said: str) -> None:
    """Exit 1, one line on stderr that says each of ``said``, no traceback."""
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("webshepherd: ")
    for part in said:
        assert part in line, line


class StepInfo:  # pickled under this module's name, which the reader never imports
    def __init__(self, obs: dict[str, Any], action: str | None) -> None:
        self.obs, self.action, self.agent_info = obs, action, {"think": ""}


def step_file(path: Path, obj: Any) -> None:
    with gzip.open(path, "wb") as f:
        pickle.dump(obj, f)


def history(*shots: str, page: str = "[3]<button>Go</button>") -> dict[str, Any]:
    """A browser-use history: one step per screenshot path, each with page text."""
    return {
        "history": [
            {
                "model_output": {"thinking": "go", "action": [{"click": {"index": 3}}]},
                "state": {"url": f"http://shop.local/{n}", "screenshot_path": shot},
                "state_message": "<user_request>Buy a cable</user_request>"
                f"<browser_state>{page}</browser_state>",
                "result": [],
            }
            for n, shot in enumerate(shots)
        ]
    }


# ---- refused with one line -------------------------------------------------------------


def test_deep_json_and_jsonl_are_refused(tmp_path: Path) -> None:
    (tmp_path / "history.json").write_text('{"history": ' + deep() + "}")
    refused(run_cli("rescore", "history.json", cwd=tmp_path), "history.json", "deeper than 256")
    (tmp_path / "run.jsonl").write_text('{"intent": "x"}\n' + deep() + "\n")
    refused(run_cli("rescore", "run.jsonl", cwd=tmp_path), "run.jsonl:2", "deeper than 256")
    m2w = tmp_path / "m2w"
    m2w.mkdir()
    (m2w / "result.json").write_text('{"task": "x", "action_history": ' + deep() + "}")
    refused(run_cli("rescore", "m2w", cwd=tmp_path), "result.json", "deeper than 256")


def test_an_agentlab_gzip_bomb_is_refused(tmp_path: Path) -> None:
    """1.5 MB on disk, 1.5 GB inflated (a pickle of one 1.5 GB bytes object): the step file
    is inflated as a stream and refused at 256 MiB, never read whole."""
    folder = tmp_path / "exp"
    folder.mkdir()
    size = 1500 << 20
    member = gzip.compress(b"\0" * (1 << 20))
    with (folder / "step_0.pkl.gz").open("wb") as f:
        f.write(gzip.compress(b"\x80\x04\x8e" + struct.pack("<Q", size)))  # BINBYTES8
        for _ in range(size >> 20):
            f.write(member)
    assert (folder / "step_0.pkl.gz").stat().st_size < 2 << 20
    refused(run_cli("rescore", "exp", cwd=tmp_path), "step_0.pkl.gz", "more than 256 MiB")
    # a pickle that claims more memory than there is
    (folder / "step_0.pkl.gz").write_bytes(
        gzip.compress(b"\x80\x04\x8e" + struct.pack("<Q", 1 << 50))
    )
    refused(run_cli("rescore", "exp", cwd=tmp_path), "step_0.pkl.gz", "not a readable pickle")


def test_agentlab_files_outside_the_folder_are_refused(tmp_path: Path) -> None:
    outside, folder = tmp_path / "outside", tmp_path / "exp"
    outside.mkdir()
    folder.mkdir()
    obs = {"goal": "Buy", "url": "http://a/", "axtree_txt": "[1] link 'x'"}
    step_file(outside / "step.pkl.gz", StepInfo(obs, "click('1')"))
    (folder / "step_0.pkl.gz").symlink_to(outside / "step.pkl.gz")
    refused(run_cli("rescore", "exp", cwd=tmp_path), "step_0.pkl.gz", "outside the run's folder")
    (folder / "step_0.pkl.gz").unlink()
    step_file(folder / "step_0.pkl.gz", StepInfo(obs, "click('1')"))
    (folder / "summary_info.json").write_text('{"cum_reward": ' + deep() + "}")
    refused(run_cli("rescore", "exp", cwd=tmp_path), "summary_info.json", "deeper than 256")


def test_prompt_and_eval_refuse_deep_rows(tmp_path: Path) -> None:
    (tmp_path / "row.json").write_text('{"intent": ' + deep() + "}")
    refused(run_cli("prompt", "judge", "--row", "row.json", cwd=tmp_path), "row.json", "256")
    (tmp_path / "gold.jsonl").write_text(deep() + "\n")
    (tmp_path / "agent.jsonl").write_text("")
    done = run_cli(
        *("eval", "trajectories", "--gold", "gold.jsonl", "--agent", "agent.jsonl"),
        *("--json", "out.json"),
        cwd=tmp_path,
    )
    refused(done, "gold.jsonl row 1", "deeper than 256")


def test_rescore_takes_no_token_in_argv(tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_text('{"intent": "x"}\n')
    done = run_cli("rescore", "run.jsonl", "--token", SECRET, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "would put a secret in the process arguments" in done.stderr
    assert "WEBSHEPHERD_TOKEN or pass --token-file" in done.stderr
    assert SECRET not in done.stderr + done.stdout


# ---- left out with a warning, the rest rescored -----------------------------------------


async def rescore_cli(tmp_path: Path, path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    """``webshepherd rescore`` against a real daemon on loopback (judge scripted); the JSON
    summary and the report's text."""
    token = tmp_path / "token"
    token.write_text(TEST_TOKEN)
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}"
    argv = ["rescore", str(path), "--token-file", str(token), "--quiet", *extra]
    argv += ["--checklist", "Checklist 1: Buy a cable", "--data-dir", str(tmp_path / "data")]
    argv += ["--json", str(out / "summary.json"), "--out", str(out / "report.html")]
    judge = ScriptedJudge(default=(0.5, (1,), "ok"))
    async with scripted_daemon(tmp_path, judge) as daemon:
        assert await asyncio.to_thread(main, [*argv, "--url", daemon.url]) == 0
    return json.loads((out / "summary.json").read_text()), (out / "report.html").read_text()


def recorded_screenshots(tmp_path: Path, session_id: str) -> list[bytes | None]:
    history = History.open(tmp_path / "data" / DB_NAME)
    try:
        timeline = history.timeline(session_id)
    finally:
        history.close()
    assert timeline is not None
    return [s.screenshot for s in timeline.steps]


async def test_browser_use_screenshots_outside_or_not_images_never_land(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run, outside = tmp_path / "run", tmp_path / "outside"
    run.mkdir()
    outside.mkdir()
    (outside / "secret.png").write_text(SECRET)
    (outside / "id_ed25519").write_text(SECRET)
    good, elsewhere = axtree_png("[3] button 'Go'"), axtree_png("[4] link 'Elsewhere'")
    (outside / "real.png").write_bytes(elsewhere)
    (run / "link.png").symlink_to(outside / "secret.png")
    (run / "fake.png").write_text(SECRET)  # inside, but not an image
    (run / "good.png").write_bytes(good)
    shots = [
        "../outside/secret.png",
        str(outside / "id_ed25519"),  # an absolute path to a private key
        "link.png",
        "fake.png",
        "good.png",
        str(outside / "real.png"),  # an image, outside: read only with --allow-dir
    ]
    (run / "history.json").write_text(json.dumps(history(*shots)))
    summary, report = await rescore_cli(tmp_path, run / "history.json")
    printed = capsys.readouterr().out
    assert summary["steps_scored"] == 6  # every step still scored from its page text
    warned = summary["warnings"]
    assert len(warned) == 5, warned
    assert "../outside/secret.png (-> " in warned[0] and "outside the run's folder" in warned[0]
    assert "id_ed25519: outside the run's folder" in warned[1]
    assert "link.png (-> " in warned[2] and "outside the run's folder" in warned[2]
    assert "fake.png: not an image" in warned[3]
    assert "real.png: outside the run's folder" in warned[4] and "--allow-dir" in warned[4]
    assert printed.count("  warning: screenshot left out: ") == 5
    stored = recorded_screenshots(tmp_path, summary["session_id"])
    assert stored == [None, None, None, None, good, None]
    db = (tmp_path / "data" / DB_NAME).read_bytes()
    assert SECRET.encode() not in db
    encoded = base64.b64encode(SECRET.encode()).decode()
    assert SECRET not in report and encoded[:40] not in report
    assert base64.b64encode(good).decode() in report  # the allowed one is shown

    again, _ = await rescore_cli(tmp_path, run / "history.json", "--allow-dir", str(outside))
    assert len(again["warnings"]) == 4  # allowed now, but the key and the rest are no images
    assert all("not an image" in w for w in again["warnings"])
    stored = recorded_screenshots(tmp_path, again["session_id"])
    assert stored[4:] == [good, elsewhere]
    assert stored[:4] == [None] * 4


async def test_a_recording_that_does_not_read_back_is_one_line(tmp_path: Path) -> None:
    """A recording (sent as a data dir) whose checklist row holds JSON nested 200,000 deep."""
    rows = [
        {"intent": "Buy a cable"},
        {"url": "http://a/", "axtree": "[1] link 'Next'", "action": "click('1')"},
    ]
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    summary, _ = await rescore_cli(tmp_path, tmp_path / "run.jsonl")
    db = sqlite3.connect(tmp_path / "data" / DB_NAME)
    with db:
        assert db.execute("UPDATE checklists SET items = ?", (deep(),)).rowcount == 1
    db.close()
    done = run_cli("rescore", "data", "--session", summary["session_id"], cwd=tmp_path)
    refused(done, DB_NAME, "a recording that does not read back")


async def test_a_jsonl_screenshot_that_is_not_an_image_is_left_out(tmp_path: Path) -> None:
    png = axtree_png("[1] link 'Next'")
    rows = [
        {"intent": "Buy a cable"},
        {"url": "http://a/", "axtree": "[1] link 'Next'", "action": "click('1')"},
        {"url": "http://a/2", "axtree": "[1] link 'Next'", "action": "click('1')"},
    ]
    rows[1]["screenshot"] = base64.b64encode(SECRET.encode()).decode()
    rows[2]["screenshot"] = base64.b64encode(png).decode()
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    summary, _ = await rescore_cli(tmp_path, tmp_path / "run.jsonl")
    assert summary["steps_scored"] == 2
    [warning] = summary["warnings"]
    assert "run.jsonl:2: not an image" in warning
    assert recorded_screenshots(tmp_path, summary["session_id"]) == [None, png]
    assert SECRET.encode() not in (tmp_path / "data" / DB_NAME).read_bytes()
