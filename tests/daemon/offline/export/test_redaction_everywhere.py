"""``--redact`` reaches every text column and every file name of every export format
(issue 14, item 8): a secret placed in every recorded field, the start URL's host included,
appears in no output, Parquet read back column by column, and in no path under the output."""

from __future__ import annotations

import asyncio
import base64
import json

import pyarrow.parquet as pq
import pytest
from webshepherd.daemon.cli import main

SECRET = "sk-live-9f8e7d6c"
PATTERN = r"sk-live-[0-9a-f]+"
START = f"http://{SECRET}.example.com/login?key={SECRET}"
OBS = {
    "url": START,
    "axtree": f"[1] RootWebArea 'Login {SECRET}'\n\t[2] textbox 'Key {SECRET}'\n"
    "\t[3] button 'Sign in'",
    "screenshot": {"mime": "image/png", "data": base64.b64encode(b"\x89PNG x").decode()},
}


async def _record(daemon) -> str:
    """A session with a secret everywhere. It carries ground truth (a reference checklist,
    the environment's labels for a candidate, a person's edit), so the SFT export has rows
    whatever the tiny judge writes: this test is about redaction, not judgements."""
    agent = await daemon.client()
    approver = await daemon.client(role="extension", name="ext")
    r = await agent.request(
        {
            "type": "session.start",
            "intent": f"Sign in with {SECRET}",
            "start_url": START,
            "observation": OBS,
            "checklist": f"Checklist 1: Type {SECRET}\nChecklist 2: Sign in",
            "agent": {"name": f"agent-{SECRET}", "model": SECRET},
        }
    )
    sid = r["session_id"]
    await agent.request(
        {
            "type": "action",
            "session_id": sid,
            "action": f"fill('2', '{SECRET}')",
            "thought": f"typing {SECRET}",
        }
    )
    cands = [
        {"thought": f"click {SECRET}", "action": "click('3')"},
        {"thought": f"go {SECRET}", "action": f"goto('http://{SECRET}.example.com/')"},
    ]
    await agent.send(
        {
            "type": "score",
            "id": "s1",
            "session_id": sid,
            "candidates": cands,
            "samples": 1,
            "approval": "always",
        }
    )
    req = await approver.wait_for("approval.request", timeout=60)
    await approver.request(
        {
            "type": "approval.decide",
            "request_id": req["request_id"],
            "decision": "edit",
            "action": f"fill('2', '{SECRET}-again')",
            "note": f"note {SECRET}",
        }
    )
    scored = await agent.wait_for("scored", timeout=60)
    labelled = await agent.request(
        {
            "type": "label",
            "session_id": sid,
            "step": scored["step"],
            "action": cands[1]["action"],
            "items": ["no", "no"],
            "source": "environment",
        }
    )
    assert labelled["type"] == "label.recorded", labelled
    await agent.request(
        {"type": "session.end", "session_id": sid, "outcome": "success", "answer": f"done {SECRET}"}
    )
    return sid


def _texts_of(path) -> str:
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize(
    ("fmt", "extra"),
    [
        ("webprm", []),
        ("sft", ["--sft-layout", "sharegpt"]),
        ("sft", ["--sft-layout", "alpaca"]),
        ("trl-prm", []),
        ("trl-preference", []),
        ("mind2web", []),
    ],
)
async def test_redact_covers_every_column_and_file_name(daemon, tmp_path, capsys, fmt, extra):
    await _record(daemon)
    out = tmp_path / f"out-{fmt}-{len(extra)}"
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
            "--redact",
            PATTERN,
            *extra,
        ],
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] >= (2 if fmt == "sft" else 1)  # sft: the checklist and a label
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for p in out.rglob("*"):
        assert SECRET not in str(p.relative_to(tmp_path))
        if p.is_file() and p.suffix in (".parquet", ".jsonl", ".json"):
            text = _texts_of(p)
            assert SECRET not in text, (p.name, text[text.find(SECRET) - 80 :][:200])
    assert SECRET not in json.dumps(summary)
    texts = "".join(_texts_of(p) for p in files if p.suffix in (".parquet", ".jsonl", ".json"))
    assert "[REDACTED]" in texts
