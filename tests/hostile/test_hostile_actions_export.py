"""One recorded action must not break an export (issue 14, item 7): actions the parser cannot
hold (a 200 KB attribute chain, a ``not`` chain) are exported as text and flagged in the
summary; every session is exported. Recorded through a real daemon, exported by the CLI."""

from __future__ import annotations

import asyncio
import json

import pytest
from webshepherd.daemon.cli import main
from webshepherd.protocol.actions import parse_action as parse_browser_action
from webshepherd.protocol.agents.environment import ActionError

from tests.fixtures.daemon import OBS, start_session

CHAIN = "fill('12', " + "a." * 100_000 + "b)"  # 200 KB
NOTS = "fill('12', " + "not " * 10_000 + "x)"  # 40 KB, too deep for the parser
DEEP_CALL = "click(" + "f(" * 3000 + ")" * 3000 + ")"
# recordable ones: under the protocol's action limit (16,384 characters), still too deep to parse
SHORT_CHAIN = "fill('12', " + "a." * 6_000 + "b)"
SHORT_NOTS = "fill('12', " + "not " * 3_000 + "x)"


@pytest.mark.parametrize("action", [CHAIN, NOTS, DEEP_CALL, SHORT_CHAIN, SHORT_NOTS])
def test_the_harness_parser_refuses_cleanly(action):
    with pytest.raises(ActionError):
        parse_browser_action(action)


async def _session(c, actions: list[str]) -> str:
    """A scored step (ordinary candidates), then ``actions`` executed by a person."""
    sid = await start_session(c)
    cands = [{"thought": "t", "action": a} for a in ("click('2')", "fill('2', 'usb')")]
    r = await c.request(
        {
            "type": "score",
            "session_id": sid,
            "candidates": cands,
            "samples": 1,
            "approval": "never",
        },
        timeout=120,
    )
    assert r["type"] == "scored", r
    for cand, items in zip(cands, (["yes", "no"], ["in_progress", "no"]), strict=True):
        # ground truth for the candidates, so the SFT export has rows (its targets need it)
        label = {"type": "label", "session_id": sid, "step": r["step"], "action": cand["action"]}
        done = await c.request({**label, "items": items, "source": "environment"})
        assert done["type"] == "label.recorded", done
    for a in actions:
        await c.request({"type": "action", "session_id": sid, "action": a, "source": "human"})
    await c.request({"type": "observe", "session_id": sid, **OBS})
    await c.request({"type": "session.end", "session_id": sid, "outcome": "success"})
    return sid


async def test_export_survives_unparseable_actions(daemon, tmp_path, capsys):
    c = await daemon.client()
    bad = await _session(c, [SHORT_NOTS, SHORT_CHAIN])
    good = await _session(c, ["click('2')"])
    for fmt in ("webprm", "sft"):
        out = tmp_path / fmt
        rc = await asyncio.to_thread(
            main,
            [
                "export",
                "--format",
                fmt,
                "--out",
                str(out),
                "--data-dir",
                str(daemon.config.data_dir),
            ],  # its summary on stdout (--quiet prints nothing but errors)
        )
        assert rc == 0
        summary = json.loads(capsys.readouterr().out)
        assert set(summary["per_session"]) == {bad, good}
        # webprm parses the history's actions (their targets); sft's targets are labels
        unparsed = {u["task_id"] for u in summary["unparsed_actions"]}
        assert unparsed == ({bad} if fmt == "webprm" else unparsed & {bad})
