"""Record sessions through a real daemon with the tiny model, export them, load the export
with ``datasets``, and run the WebRewardBench harness on it (in process and via the daemon)."""

from __future__ import annotations

import asyncio
import base64
import io
import json

from PIL import Image as PILImage
from webshepherd.daemon.cli import main
from webshepherd.daemon.engine.prompts import format_trajectory, judge_messages
from webshepherd.daemon.offline.evaluation import rewardbench as rb
from webshepherd.protocol.common import Turn

from tests.fixtures.daemon import TEST_TOKEN

SECRET = "hunter2-secret"
EMAIL = "me@x.org"


def _png(size: tuple[int, int], color: str) -> bytes:
    buf = io.BytesIO()
    PILImage.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


LOGIN_PNG = _png((8, 6), "red")
LOGIN = {
    "url": "http://shop.local/login",
    "axtree": "[1] RootWebArea 'Login'\n\t[2] textbox 'Email'\n\t[3] textbox 'Password'\n"
    "\t[4] button 'Sign in'",
    "screenshot": {"mime": "image/png", "data": base64.b64encode(LOGIN_PNG).decode()},
}


def official_features():
    """The features of WebShepherd/WebPRMCollection_preference_pair, from its dataset card."""
    from datasets import Features, Image, List, Value

    s = Value("string")
    return Features(
        {
            "task_id": s,
            "step_id": s,
            "intent": s,
            "website_name": s,
            "start_url": s,
            "thought_history": List(s),
            "action_history": List(s),
            "current_url": s,
            "text_observation": s,
            "image_observation": Image(),
            "checklist": s,
            "checklist_target_list": s,
            "chosen": {"thought": s, "action": s},
            "rejected": List({"thought": s, "action": s}),
        }
    )


OFFICIAL_ROW = {  # one row as the official collection holds it (written for this test)
    "task_id": "webarena_42",
    "step_id": "3",
    "intent": "Show me all smartphones",
    "website_name": "shopping",
    "start_url": "http://shop.example/",
    "thought_history": ["Open products", "Open electronics", "Look"],
    "action_history": ["click('12')", "click('31')", "scroll(0, 300)"],
    "current_url": "http://shop.example/electronics",
    "text_observation": "RootWebArea 'Electronics'\n\t[44] link 'Smartphones'",
    "image_observation": {"bytes": _png((4, 4), "blue"), "path": None},
    "checklist": "Checklist 1: Open smartphones\n- Goal: Click the Smartphones filter.",
    "checklist_target_list": "Open smartphones",
    "chosen": {"thought": "The filter is there.", "action": "click('44')"},
    "rejected": [{"thought": "Go back.", "action": "go_back()"}],
}
HOME = {
    "url": "http://shop.local/account",
    "axtree": f"[1] RootWebArea 'Account'\n\t[5] StaticText 'Hello {EMAIL}'\n"
    "\t[6] link 'Orders'\n\t[7] link 'Logout'",
}
CHECKLIST = "Checklist 1: Sign in\nChecklist 2: Open the orders"


async def _start(c, intent: str, obs: dict) -> str:
    r = await c.request(
        {
            "type": "session.start",
            "intent": intent,
            "start_url": obs["url"],
            "observation": obs,
            "checklist": CHECKLIST,
        }
    )
    assert r["type"] == "session.started", r
    return r["session_id"]


async def _score(c, sid: str, actions: list[str], approval: str = "never", obs=None) -> None:
    msg = {
        "type": "score",
        "session_id": sid,
        "candidates": [{"thought": f"I will {a}", "action": a} for a in actions],
        "samples": 1,
        "approval": approval,
    }
    if obs is not None:
        msg["observation"] = obs
    await c.send({**msg, "id": c.next_id()})


async def record(daemon) -> dict[str, str]:
    agent = await daemon.client()
    approver = await daemon.client(role="extension", name="ext")
    # Session 1 (ends in failure): a person edits step 0 and demonstrates step 1.
    s1 = await _start(agent, "Sign in and open my orders", LOGIN)
    await _score(agent, s1, ["click('4')", f"fill('2', '{EMAIL}')", "click('7')"], "always")
    req = await approver.wait_for("approval.request", timeout=60)
    edited = f"fill('3', '{SECRET}')"
    r = await approver.request(
        {
            "type": "approval.decide",
            "request_id": req["request_id"],
            "decision": "edit",
            "action": edited,
        }
    )
    assert r["type"] == "approval.resolved"
    assert (await agent.wait_for("scored", timeout=60))["decision"]["status"] == "edited"
    await agent.request(
        {
            "type": "action",
            "session_id": s1,
            "action": edited,
            "thought": f"The password is {SECRET}",
        }
    )
    await agent.request({"type": "observe", "session_id": s1, **HOME})
    await _score(agent, s1, ["scroll(0, 300)", "click('7')", "goto('http://shop.local/')"])
    step1 = (await agent.wait_for("scored", timeout=60))["step"]
    # ground truth for its candidates (the SFT export learns only from truth): the
    # environment knows click('7') leaves the sign-in done and going home undoes it, a person
    # says the scroll leaves it done
    truth = [
        (agent, "click('7')", ["yes", "no"], "environment"),
        (approver, "scroll(0, 300)", ["yes", "in_progress"], "person"),
        (agent, "goto('http://shop.local/')", ["no", "no"], "environment"),
    ]
    for c, action, items, source in truth:
        label = {"type": "label", "session_id": s1, "step": step1, "action": action}
        labelled = await c.request({**label, "items": items, "source": source})
        assert labelled["type"] == "label.recorded", labelled
    await agent.request(
        {
            "type": "action",
            "session_id": s1,
            "action": "click('6')",
            "thought": "Orders",
            "source": "human",
        }
    )
    await agent.request({"type": "session.end", "session_id": s1, "outcome": "failure"})
    # Session 2 (ends in success): the executed actions are the chosen ones.
    s2 = await _start(agent, "Open my orders", HOME)
    await _score(agent, s2, ["click('6')", "click('7')", "fill('6', 'orders')", "scroll(0, 1)"])
    await agent.wait_for("scored", timeout=60)
    await agent.request({"type": "action", "session_id": s2, "action": "click('6')"})
    await agent.request({"type": "session.end", "session_id": s2, "outcome": "success"})
    # Session 3 (failure, no person involved): nothing trustworthy, skipped.
    s3 = await _start(agent, "Log out", HOME)
    await _score(agent, s3, ["click('7')", "click('6')"])
    await agent.wait_for("scored", timeout=60)
    await agent.request({"type": "action", "session_id": s3, "action": "click('6')"})
    await agent.request({"type": "session.end", "session_id": s3, "outcome": "failure"})
    return {"edited": s1, "success": s2, "failed": s3, "edited_away": req["candidate"]["action"]}


def _cli(*argv: str) -> int:
    return main(list(argv))


async def test_export_load_and_rewardbench(daemon, tmp_path, capsys, tiny_model_path):
    sids = await record(daemon)
    data_dir = str(daemon.config.data_dir)
    out = tmp_path / "export"
    rc = await asyncio.to_thread(
        _cli,
        "export",
        "--format",
        "webprm",
        "--out",
        str(out),
        "--data-dir",
        data_dir,
        "--redact",
        r"me@x\.org",
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    s1, s2, s3 = sids["edited"], sids["success"], sids["failed"]
    # session 1: its two steps; session 2: nothing known wrong (no_rejected); session 3:
    # nothing known right (no_trustworthy_chosen)
    assert summary["per_session"] == {s1: 2, s2: 0, s3: 0} and summary["rows"] == 2
    assert summary["skipped_by_reason"] == {"no_trustworthy_chosen": 1, "no_rejected": 1}
    parquet, jsonl = out / "webprm.parquet", out / "webprm.jsonl"
    raw = jsonl.read_text()
    assert SECRET not in raw and EMAIL not in raw and "[REDACTED]" in raw

    import datasets

    # the official schema, types included, and where each row's truth and checklist came
    # from: without those columns the export loads next to the official collection
    ds = datasets.Dataset.from_parquet(str(parquet), cache_dir=str(tmp_path / "hf"))
    ours = ["chosen_source", "rejected_source", "checklist_source"]
    assert ds.features == datasets.Features(
        {
            **official_features(),
            "chosen_source": datasets.Value("string"),
            "rejected_source": datasets.List(datasets.Value("string")),
            "checklist_source": datasets.Value("string"),
        }
    )
    official = datasets.Dataset.from_list([OFFICIAL_ROW], features=official_features())
    both = datasets.concatenate_datasets([ds.remove_columns(ours), official])
    assert len(both) == len(ds) + 1 and both.features == official_features()
    assert both[len(ds)]["image_observation"].size == (4, 4)
    assert not (out / "images").exists()  # screenshots live in the rows; a folder on request
    raw_images = ds.cast_column("image_observation", datasets.Image(decode=False))
    images = {(r["task_id"], r["step_id"]): r["image_observation"] for r in raw_images}
    rows = {(r["task_id"], r["step_id"]): r for r in ds}
    assert len(rows) == summary["rows"]
    for r in ds:
        text = json.dumps(r, default=str)
        assert SECRET not in text and EMAIL not in text
    step0, step1 = rows[(s1, "0")], rows[(s1, "1")]
    # step 0: the edited action is chosen (its password masked), the edited-away one
    # rejected; the other candidates have no truth (however clear negatives they are)
    assert step0["chosen"]["action"] == "fill('3', '[REDACTED]')"
    edited_away = sids["edited_away"].replace(EMAIL, "[REDACTED]")
    assert [x["action"] for x in step0["rejected"]] == [edited_away]
    assert (step0["chosen_source"], step0["rejected_source"]) == ("person", ["person"])
    assert step0["checklist_source"] == "reference"
    assert images[(s1, "0")] == {"bytes": LOGIN_PNG, "path": None}
    assert step0["image_observation"].size == (8, 6)  # decoded by datasets as an image
    assert step0["website_name"] == "shop.local"
    assert json.loads(step0["checklist_target_list"]) == ["Sign in", "Open the orders"]
    assert step0["checklist"] == CHECKLIST  # the checklist as given, verbatim
    # step 1: the human's action is chosen; the history holds the masked password fill
    assert step1["chosen"]["action"] == "click('6')"
    assert step1["action_history"] == ["fill('3', '[REDACTED]')"]
    assert step1["thought_history"] == ["The password is [REDACTED]"]
    # rejected: the candidate labelled all "no" (the others' labels say no wrong)
    assert [x["action"] for x in step1["rejected"]] == ["goto('http://shop.local/')"]
    assert (step1["chosen_source"], step1["rejected_source"]) == ("person", ["label"])
    assert step1["image_observation"] is None
    assert (s2, "0") not in rows  # its executed action is right; nothing is known wrong

    # --sessions and --since select what is exported
    one = tmp_path / "one.jsonl"
    args = ["export", "--format", "webprm", "--data-dir", data_dir]
    assert await asyncio.to_thread(_cli, *args, "--out", str(one), "--sessions", s1) == 0
    assert json.loads(capsys.readouterr().out)["per_session"] == {s1: 2}
    assert {json.loads(x)["task_id"] for x in one.read_text().splitlines()} == {s1}
    # JSONL rows carry the screenshot as base64; --screenshots also writes the files
    shots = tmp_path / "shots"
    assert await asyncio.to_thread(_cli, *args, "--out", str(shots), "--screenshots") == 0
    capsys.readouterr()
    first = next(
        r
        for r in map(json.loads, (shots / "webprm.jsonl").read_text().splitlines())
        if (r["task_id"], r["step_id"]) == (s1, "0")
    )
    image = first["image_observation"]
    assert base64.b64decode(image["bytes"]) == LOGIN_PNG
    assert (shots / image["path"]).read_bytes() == LOGIN_PNG
    assert await asyncio.to_thread(_cli, *args, "--out", str(one), "--since", "2999-01-01") == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 0 and one.read_text() == ""
    assert await asyncio.to_thread(_cli, *args, "--out", str(one), "--sessions", "nope") == 1
    assert "no recorded session nope" in capsys.readouterr().err

    # WebRewardBench harness on the export, in process with the tiny model
    report_path = tmp_path / "bench.json"
    rc = await asyncio.to_thread(
        _cli,
        "eval",
        "rewardbench",
        "--data",
        str(parquet),
        "--model",
        str(tiny_model_path),
        "--device",
        "cpu",
        "--max-new-tokens",
        "48",
        "--json",
        str(report_path),
        "--quiet",
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "MRR" in printed and "shop.local" in printed
    report = json.loads(report_path.read_text())
    assert report["complete"] and len(report["rows"]) == summary["rows"]
    # the paper's best setting and the authors' rule, by default
    assert report["samples"] == 5 and report["settings"]["temperature"] == 1.0
    assert report["settings"]["unparsed"] == "zero"
    assert all(r is not None for v in report["rows"].values() for r in v["rewards"])
    for key, res in report["rows"].items():
        task, step = res["task_id"], str(res["step_id"])
        assert len(res["rewards"]) == 1 + len(rows[(task, step)]["rejected"])
        assert res["candidates"][0] == rows[(task, step)]["chosen"]["action"]
        assert key == f"shop.local/{task}/{step}"
    recomputed = rb.metrics(report["rows"].values())
    assert report["metrics"] == json.loads(json.dumps(recomputed))
    assert set(report["metrics"]) == {"shop.local", "mean_of_subsets", "pooled"}

    # the same rows through the running daemon (--url)
    via = tmp_path / "bench-url.json"
    token_file = tmp_path / "token"
    token_file.write_text(TEST_TOKEN + "\n")
    rc = await asyncio.to_thread(
        _cli,
        "eval",
        "rewardbench",
        "--data",
        str(jsonl),
        "--url",
        daemon.url,
        "--token-file",
        str(token_file),
        "--json",
        str(via),
        "--quiet",
    )
    assert rc == 0
    report2 = json.loads(via.read_text())
    assert set(report2["rows"]) == set(report["rows"])
    assert all(
        len(v["rewards"]) == len(report["rows"][k]["rewards"]) for k, v in report2["rows"].items()
    )

    # sft rows: targets from ground truth only, never from the judge's recorded output: each
    # session's reference checklist and the candidates labelled at session 1's step 1; the
    # candidate a person edited away at its step 0 gives a preference pair, not a judgement
    # (a decision labels no checklist item: docs/training.md)
    sft = tmp_path / "sft.jsonl"
    capsys.readouterr()  # what the harness printed
    args = ["export", "--format", "sft", "--out", str(sft), "--data-dir", data_dir]
    rc = await asyncio.to_thread(_cli, *args, "--sessions", s1, s2, s3)  # not the eval's
    assert rc == 0
    info = json.loads(capsys.readouterr().out)
    sft_rows = [json.loads(line) for line in sft.read_text().splitlines()]
    assert SECRET not in sft.read_text()
    keys = [(r["task_id"], r["step_id"], r["label"], r["source"]) for r in sft_rows]
    assert sorted(keys) == sorted(
        [
            (s1, 0, "reference", "reference"),
            (s2, 0, "reference", "reference"),
            (s3, 0, "reference", "reference"),
            (s1, 1, "environment", "label"),
            (s1, 1, "environment", "label"),
            (s1, 1, "person", "label"),
        ]
    )
    got = {
        (r["task_id"], r["step_id"], r["label"]): r
        for r in sft_rows
        if "goto(" not in r["conversations"][0]["value"]
    }
    # the edited-away candidate at session 1's step 0 is among those without truth
    assert info["rows"] == 6 and info["skipped_by_reason"] == {"no_ground_truth": 3 + 4 + 2}
    checklist = got[(s2, 0, "reference")]["conversations"]
    assert checklist[1]["value"].endswith("[CHECKLISTS]\n" + CHECKLIST)
    assert "Open my orders" in checklist[0]["value"]

    def answer(row):
        return row["conversations"][1]["value"]

    assert answer(got[(s1, 1, "environment")]) == (
        "The action completes Checklist 1.\n\n<answer>\nChecklist 1: Yes\n"
        "Checklist 2: No\n</answer>"
    )
    assert answer(got[(s1, 1, "person")]).startswith(
        "The action completes Checklist 1 and makes progress on Checklist 2."
    )
    # the judge prompt is the engine's, for the labelled candidate
    expected = judge_messages(
        intent="Sign in and open my orders",
        trajectory=format_trajectory(
            [Turn("The password is [REDACTED]", "fill('3', '[REDACTED]')")]
        ),
        current_url=HOME["url"],
        text_observation=HOME["axtree"],
        checklist=step1["checklist"],
        thought="I will click('7')",
        action="click('7')",
    )
    env = got[(s1, 1, "environment")]
    assert env["conversations"][0]["value"] == expected[1]["content"]
    assert env["system"] == expected[0]["content"]


async def test_export_errors(tmp_path, capsys):
    assert (
        await asyncio.to_thread(
            _cli,
            "export",
            "--format",
            "webprm",
            "--out",
            str(tmp_path / "x.parquet"),
            "--data-dir",
            str(tmp_path / "none"),
        )
        == 1
    )
    assert "no recording at" in capsys.readouterr().err
