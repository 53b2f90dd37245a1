"""Ground-truth labels over real sockets: an agent's environment labels the candidates of its
own scored steps, a person labels from the extension or a monitor (also after the session
ended); the labels are in the recording (History's timeline). Bad labels get clear errors.
The judge is scripted: these tests are about the plumbing, not about judgements."""

from __future__ import annotations

from pathlib import Path

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.recorder import History

from tests.fixtures.daemon import (
    CANDS,
    OBS,
    REFERENCE,
    DaemonHandle,
    WsClient,
    make_config,
    start_session,
)
from tests.fixtures.scripted_judge import ScriptedJudge, scripted_daemon


async def _scored(d: DaemonHandle) -> tuple[WsClient, str, int]:
    agent = await d.client(name="shop-env")
    sid = await start_session(agent)
    scored = await agent.request({"type": "score", "session_id": sid, "candidates": CANDS})
    assert scored["type"] == "scored", scored
    return agent, sid, scored["step"]


def _label(
    sid: str, step: int, items: list[str], source: str, **extra: object
) -> dict[str, object]:
    return {"type": "label", "session_id": sid, "step": step, "action": CANDS[0]["action"],
            "items": items, "source": source, **extra}  # fmt: skip


async def test_environment_and_person_labels_are_recorded(tmp_path: Path) -> None:
    judge = ScriptedJudge(default=(0.5, (0, 0), "scripted"))
    async with scripted_daemon(tmp_path, judge) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent, sid, step = await _scored(d)
        got = await agent.request(_label(sid, step, ["in_progress", "no"], "environment"))
        assert got == {"type": "label.recorded", "id": got["id"], "session_id": sid, "step": step}
        await agent.request({"type": "session.end", "session_id": sid, "outcome": "failure"})
        for source, items in (("rollout", ["in_progress"] * 2), ("replay", ["no", "no"])):
            got = await agent.request(_label(sid, step, items, source, note=source))
            assert got["type"] == "label.recorded", got  # replays label after the run ended
        person = await d.client(role="monitor", name="tui")
        got = await person.request(_label(sid, step, ["no", "no"], "person", note="wrong box"))
        assert got["type"] == "label.recorded", got
        await d.close_clients()
    history = History.open(tmp_path / "data" / DB_NAME)
    tl = history.timeline(sid)
    assert tl is not None
    labels = next(s for s in tl.steps if s.step == step).labels
    assert [(x.items, x.source, x.by, x.note) for x in labels] == [
        (["in_progress", "no"], "environment", "agent:shop-env", None),
        (["in_progress", "in_progress"], "rollout", "agent:shop-env", "rollout"),
        (["no", "no"], "replay", "agent:shop-env", "replay"),
        (["no", "no"], "person", "monitor:tui", "wrong box"),
    ]
    assert all(x.action == CANDS[0]["action"] for x in labels)


async def test_who_may_label_as_what(tmp_path: Path) -> None:
    judge = ScriptedJudge(default=(0.5, (0, 0), "scripted"))
    async with scripted_daemon(tmp_path, judge) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent, sid, step = await _scored(d)
        other = await d.client(name="another-agent")
        monitor = await d.client(role="monitor", name="tui")
        for c, source in (
            (agent, "person"),
            (monitor, "environment"),
            (monitor, "replay"),
            (monitor, "rollout"),
            (other, "environment"),
            (other, "rollout"),
        ):
            refused = await c.request(_label(sid, step, ["yes", "no"], source))
            assert (refused["type"], refused["code"]) == ("error", "unauthorized"), refused
        await d.close_clients()


async def test_bad_labels_get_clear_errors(tmp_path: Path) -> None:
    judge = ScriptedJudge(default=(0.5, (0, 0), "scripted"))
    async with scripted_daemon(tmp_path, judge) as server:
        d = DaemonHandle(server, make_config(tmp_path))
        agent, sid, step = await _scored(d)
        cases = [
            (_label(sid, step, ["yes"], "environment"), "1 labels for a checklist of 2"),
            (
                _label(sid, step, ["yes", "no"], "environment", action="click('9')"),
                "not a candidate scored at step",
            ),
            (_label(sid, step + 5, ["yes", "no"], "environment"), "not a candidate scored"),
            (_label(sid, step, ["done", "no"], "environment"), "items.0"),
            (_label(sid, step, ["no"] * 65, "environment"), "items"),
            (_label(sid, step, ["yes", "no"], "oracle"), "source"),
            (_label(sid, step, ["yes", "no"], "environment", action=""), "action"),
            (_label("no-such", step, ["yes", "no"], "environment"), "no session"),
        ]
        for msg, why in cases:
            got = await agent.request(msg)
            assert got["type"] == "error" and why in got["message"], (why, got)
        ok = await agent.request(_label(sid, step, ["yes", "no"], "environment"))
        assert ok["type"] == "label.recorded"  # the daemon still answers
        await d.close_clients()


async def test_the_sdk_labels_through_the_session(tmp_path: Path) -> None:
    from webshepherd.protocol.client import AsyncClient

    from tests.fixtures.daemon import TEST_TOKEN

    judge = ScriptedJudge(default=(0.5, (0, 0), "scripted"))
    async with (
        scripted_daemon(tmp_path, judge) as server,
        AsyncClient(server.url, token=TEST_TOKEN, name="env") as client,
    ):
        s = await client.start_session("Buy a cable", checklist=REFERENCE, observation=OBS)
        scored = await s.score([(c["thought"], c["action"]) for c in CANDS])
        got = await s.label(scored.step, CANDS[1]["action"], ["yes", "in_progress"])
        assert (got.session_id, got.step) == (s.session_id, scored.step)
