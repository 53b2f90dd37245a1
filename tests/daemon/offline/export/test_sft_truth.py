"""SFT targets come from ground truth in its order (a person's labels, the environment's),
what was done before a step comes from earlier truth, and a candidate without truth gives no
row: a person's rejection labels no item, so it gives none. The judge is scripted (its
judgements are the same for every candidate): these tests are about the export's rule, not
about judgements."""

from __future__ import annotations

import json
from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.export.llamafactory import sft_rows
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.training.targets import feedback, judge_target
from webshepherd.daemon.recorder import History

from tests.fixtures.daemon import OBS, REFERENCE, DaemonHandle, WsClient, make_config
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon

PAGE2 = {"url": "http://shop.local/search?q=cables", "axtree": "[1] RootWebArea 'Results'"}
STEP0 = ["fill('2', 'cables')", "click('2')"]
STEP1 = ["click('7')", "click('8')", "scroll(0, 100)"]


async def _record(tmp_path: Path) -> str:
    judge = ScriptedJudge(default=(0.4, (0, 0), "whatever the judge wrote"))
    async with scripted_daemon(tmp_path, judge) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        env = await d.client(name="env")
        person = await d.client(role="extension", name="ext")
        r = await env.request({"type": "session.start", "intent": "Buy cables",
                               "observation": OBS, "checklist": REFERENCE})  # fmt: skip
        sid = r["session_id"]

        async def score(actions: list[str], approval: str = "never") -> None:
            cands = [{"thought": f"t {a}", "action": a} for a in actions]
            await env.send({"type": "score", "id": env.next_id(), "session_id": sid,
                            "candidates": cands, "approval": approval})  # fmt: skip

        async def label(c: WsClient, step: int, action: str, items: list[str], source: str) -> None:
            msg = {"type": "label", "session_id": sid, "step": step, "action": action}
            got = await c.request({**msg, "items": items, "source": source})
            assert got["type"] == "label.recorded", got

        await score(STEP0)
        step0 = (await env.wait_for("scored"))["step"]
        await label(env, step0, STEP0[0], ["yes", "no"], "environment")  # STEP0[1]: no truth
        await env.request({"type": "action", "session_id": sid, "action": STEP0[0]})
        await env.request({"type": "observe", "session_id": sid, **PAGE2})
        await score(STEP1, "always")
        req = await person.wait_for("approval.request")
        assert req["candidate"]["action"] == STEP1[0]  # the best of equal rewards: the first
        decided = await person.request(
            {"type": "approval.decide", "request_id": req["request_id"], "decision": "reject"}
        )
        assert decided["type"] == "approval.resolved", decided
        step1 = (await env.wait_for("scored"))["step"]
        await label(person, step1, STEP1[1], ["yes", "yes"], "person")
        await label(env, step1, STEP1[1], ["yes", "no"], "environment")  # later, but no person
        await label(env, step1, STEP1[2], ["no", "no"], "environment")
        await label(env, step1, STEP1[2], ["yes", "in_progress"], "environment")  # later wins
        await env.request({"type": "session.end", "session_id": sid, "outcome": "failure"})
        await d.close_clients()
    return sid


def _answer(row: dict[str, object]) -> str:
    return row["conversations"][1]["value"]  # type: ignore[index, no-any-return]


async def test_targets_follow_the_truth_in_its_order(tmp_path: Path) -> None:
    sid = await _record(tmp_path)
    history = History.open(tmp_path / "data" / DB_NAME)
    summary = Summary()
    try:
        rows = list(sft_rows(history, history.sessions(), summary=summary))
    finally:
        history.close()
    got = {(r["step_id"], r["label"], r["conversations"][0]["value"].split("\n")[-1]): r
           for r in rows}  # fmt: skip
    by_label = {(step, label): r for (step, label, _), r in got.items()}
    assert set(by_label) == {
        (0, "reference"),
        (0, "environment"),
        (1, "person"),
        (1, "environment"),
    }
    # no truth: STEP0[1], and STEP1[0], which a person rejected without labelling it
    assert summary.rows == 4 and dict(summary.skipped) == {"no_ground_truth": 2}
    assert summary.per_session == {sid: 4}
    assert all("whatever the judge wrote" not in _answer(r) for r in rows)
    assert _answer(by_label[(0, "environment")]) == judge_target(
        ["yes", "no"], "The action completes Checklist 1."
    )
    # step 1: item 1 was done before it (the executed action's truth at step 0)
    done = [True, False]
    assert _answer(by_label[(1, "person")]) == judge_target(
        ["yes", "yes"], feedback(["yes", "yes"], done)
    )
    assert "completes Checklist 2." in _answer(by_label[(1, "person")])
    assert _answer(by_label[(1, "environment")]) == judge_target(
        ["yes", "in_progress"], "The action makes progress on Checklist 2."
    )
    prompts = json.dumps([r["conversations"][0]["value"] for r in rows])
    for action in (STEP0[0], *STEP1[1:]):  # each row is the judge prompt of its own candidate
        assert action in prompts
