"""The replay's frames: one per step (protocol/steps.py), index 0 included; its first bad
step line, proven by replays when blame recorded it."""

from __future__ import annotations

from pathlib import Path

from webshepherd.protocol.replies import Session
from webshepherd.protocol.steps import step_label
from webshepherd.tui.screens.replay import first_bad_text, frame_ends

from tests.fixtures.daemon import CANDS, DaemonHandle, make_config, start_session
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon


def _ev(kind: str, step: int | None = None) -> dict[str, object]:
    return {"type": kind} if step is None else {"type": kind, "step": step}


def test_one_frame_per_step_scored_or_acted_at():
    events = [
        _ev("session.started"),
        _ev("observed", 0),
        _ev("scored", 0),  # index 0 is a step like any other
        _ev("action", 0),
        _ev("observed", 1),  # only observed: shows with the step after it
        _ev("observed", 2),
        _ev("scored", 2),
        _ev("action", 2),
        _ev("observed", 3),  # the page the task ended on: with the last step
        _ev("session.ended"),
    ]
    assert frame_ends(events) == [4, 10]


def test_a_session_with_nothing_scored_is_one_frame():
    assert frame_ends([_ev("session.started"), _ev("observed", 0)]) == [2]


async def test_the_replay_names_the_step_replays_proved_beside_the_judges_guesses(
    tmp_path: Path,
) -> None:
    """A ``replay`` label calling an action lost (what ``webshepherd blame`` records for a
    proven first bad step) reaches the recorded events as a ``proven_bad_step`` signal, and
    the replay screen shows that step as proven above the judge's guesses."""
    judge = ScriptedJudge(default=(0.5, (0, 0), "scripted"))
    async with scripted_daemon(tmp_path, judge) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent = await d.client(name="miniwob")
        sid = await start_session(agent)
        scored = await agent.request({"type": "score", "session_id": sid, "candidates": CANDS})
        step, wrong, right = scored["step"], CANDS[0]["action"], CANDS[1]["action"]
        await agent.request({"type": "action", "session_id": sid, "action": wrong})
        await agent.request({"type": "session.end", "session_id": sid, "outcome": "failure"})
        proof = f"from step 1, {right} won; from the end, every try lost (1)"
        for action, level in ((wrong, "no"), (right, "yes")):
            got = await agent.request({
                "type": "label", "session_id": sid, "step": step, "action": action,
                "items": [level] * 2, "source": "replay", "note": proof,
            })  # fmt: skip
            assert got["type"] == "label.recorded", got
        reply = await agent.request({"type": "session.get", "session_id": sid})
        await d.close_clients()
    signals = [e for e in reply["events"] if e["type"] == "signal"]
    assert [(e["kind"], e["step"], e["action"], e["detail"]) for e in signals] == [
        ("proven_bad_step", step, wrong, proof)
    ]  # one: the won candidate's label proves nothing lost
    text = first_bad_text(Session.model_validate(reply)).plain.splitlines()
    assert text[0] == f"first bad step (proven by replays): {step_label(step)}: {proof}"
    assert [x.split(":")[0] for x in text[1:]] == [
        "first bad step (judge's guess, progress)",
        "first bad step (judge's guess, reward)",
    ]
