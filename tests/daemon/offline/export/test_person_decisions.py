"""A person's decisions become preference truth in the exports, and nothing else does: recorded
through a real daemon over sockets into real SQLite (tests/fixtures/decisions.py), read back
through History and the Timeline. docs/training.md, "A person's decisions"."""

from __future__ import annotations

from webshepherd.daemon.config import DB_NAME
from webshepherd.daemon.offline.export.llamafactory import sft_rows
from webshepherd.daemon.offline.export.sessions import Summary
from webshepherd.daemon.offline.export.trl import trl_preference_rows
from webshepherd.daemon.offline.export.webprm import webprm_rows
from webshepherd.daemon.recorder import History

from tests.fixtures.decisions import (
    EDITED,
    STEP0,
    STEP1,
    STEP2,
    STEP2_AGAIN,
    STEP3,
    THRESHOLD,
    record_decisions,
)


async def test_decisions_are_preference_truth(tmp_path):
    rec = await record_decisions(tmp_path)
    history = History.open(rec.data_dir / DB_NAME)
    try:
        tl = history.timeline(rec.session_id)
        assert tl is not None
        steps = {st.step: st for st in tl.steps}
        # the timeline: who decided, and which of them is a person's
        decided = [(a.decision, a.decided_by, a.by_person) for st in tl.steps for a in st.approvals]
        assert decided == [
            ("approve", "monitor:tui", True),
            ("edit", "monitor:tui", True),
            ("reject", "monitor:tui", True),
            ("approve", "monitor:tui", True),
            ("timeout", None, False),
        ]
        assert [len(steps[n].person_decisions) for n in range(4)] == [1, 1, 2, 0]
        assert {a.threshold for st in tl.steps for a in st.approvals} == {THRESHOLD}
        # a re-scored step: each decision's candidate is the one its own scoring held
        first, second = steps[2].person_decisions
        assert steps[2].decided(first).candidate.action == STEP2[0][0]  # type: ignore[union-attr]
        assert steps[2].decided(second).candidate.action == STEP2_AGAIN[0][0]  # type: ignore[union-attr]

        summary = Summary()
        rows = {r["step_id"]: r for r in webprm_rows(history, [tl.summary], summary=summary)}
        sessions = [tl.summary]
        pref = list(trl_preference_rows(history, sessions))
        judged = list(trl_preference_rows(history, sessions, include_judged=True))
        sft = list(sft_rows(history, sessions))
    finally:
        history.close()

    def actions(turns):
        return [t["action"] for t in turns]

    # approve: the held candidate is chosen, and nothing is known wrong there: no row
    assert "0" not in rows
    # edit: the edited action is chosen, the held candidate rejected (the other candidate
    # is unknown, however clear a negative)
    assert rows["1"]["chosen"] == {"thought": f"t {STEP1[0][0]}", "action": EDITED}
    assert actions(rows["1"]["rejected"]) == [STEP1[0][0]]
    assert (rows["1"]["chosen_source"], rows["1"]["rejected_source"]) == ("person", ["person"])
    # reject, then approve at the re-scored step: the rejected one is the person's pair
    assert rows["2"]["chosen"]["action"] == STEP2_AGAIN[0][0]
    assert actions(rows["2"]["rejected"])[0] == STEP2[0][0]
    # a timeout that applied "approve" is no person's choice: in a failed session, no row
    assert "3" not in rows
    assert summary.rows == 2 and summary.skipped["no_trustworthy_chosen"] == 1
    assert summary.skipped["no_rejected"] == 1
    assert STEP3[0][0] not in str(rows)

    why = {
        (r["step_id"], r["rejected"][-1]["content"].split("\nAction: ")[1]): r["rejected_source"]
        for r in pref
    }
    assert why == {(1, STEP1[0][0]): "person", (2, STEP2[0][0]): "person"}
    assert {r["chosen_source"] for r in pref} == {"person"}
    # asked for the judge's pairs: the clear negatives it scored below the approved action,
    # marked (click('2') after fill('2', ...) is a reordering, not a negative; the edited
    # action was never scored, so the judge says nothing at step 1)
    extra = [r for r in judged if r not in pref]
    assert [
        (r["step_id"], r["rejected"][0]["content"].split("\nAction: ")[1], r["rejected_source"])
        for r in extra
    ] == [(0, STEP0[2][0], "judge"), (2, STEP2_AGAIN[1][0], "judge")]

    # no judgement target comes from a decision (a decision labels no checklist item)
    assert [r["label"] for r in sft] == ["reference"]


async def test_a_guards_refusal_with_nobody_there_is_no_persons_decision(tmp_path):
    """No person is connected: the guard refuses a POST form's submit button at once (the
    daemon decides, not a person). The refusal is recorded, and it is not ground truth: no
    pair rejects the refused action as a person's choice, and agreement counts nothing."""
    from webshepherd.daemon.build import running_daemon
    from webshepherd.protocol.agreement import agreement

    from tests.fixtures.daemon import REFERENCE, DaemonHandle, make_settings
    from tests.fixtures.scripted_judge import ScriptedJudge

    page = {
        "url": "http://shop.local/cart",
        "axtree": "[1] RootWebArea 'Cart'\n\t[5] button 'Place order'",
        "elements": {"5": {"tag": "button", "submits": True, "form_method": "POST",
                           "form_action": "http://shop.local/checkout"}},
    }  # fmt: skip
    submit, other = "click('5')", "scroll(0, 300)"
    judge = ScriptedJudge({(page["url"], submit): (0.9, (2, 2), "it orders"),
                           (page["url"], other): (0.1, (0, 0), "it scrolls")})  # fmt: skip
    settings = make_settings(tmp_path)
    async with running_daemon(settings, judge) as server:
        d = DaemonHandle(server, settings.daemon)
        agent = await d.client(name="agent")
        r = await agent.request({"type": "session.start", "intent": "Order the cable",
                                 "start_url": page["url"], "observation": page,
                                 "checklist": REFERENCE})  # fmt: skip
        sid = r["session_id"]
        cands = [{"thought": "", "action": a} for a in (submit, other)]
        scored = await agent.request({"type": "score", "session_id": sid, "candidates": cands,
                                      "samples": 1, "approval": "never"})  # fmt: skip
        decision = scored["decision"]
        assert decision["status"] == "rejected" and decision["action"] is None, decision
        assert decision["by"] == "daemon" and decision["guard"], decision
        await agent.request({"type": "action", "session_id": sid, "action": other})
        await agent.request({"type": "session.end", "session_id": sid, "outcome": "success"})
        await d.close_clients()

    history = History.open(settings.daemon.data_dir / DB_NAME)
    try:
        tl = history.timeline(sid)
        assert tl is not None
        (st,) = [st for st in tl.steps if st.scorings]
        assert [(a.decision, a.by_person) for a in st.approvals] == [("reject", False)]
        assert st.person_decisions == [] and agreement(tl.decisions()).decisions == 0
        summary = Summary()
        rows = list(webprm_rows(history, [tl.summary], summary=summary))
        pref = list(trl_preference_rows(history, [tl.summary]))
    finally:
        history.close()
    # the successful session's executed scroll is chosen; the refused submit is no person's
    # rejection and has no other truth: no pair
    assert rows == [] and summary.skipped["no_rejected"] == 1
    assert pref == []
