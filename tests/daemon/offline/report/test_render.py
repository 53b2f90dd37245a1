"""``webshepherd report``: a session recorded through a real daemon (screenshots rendered in
real Chromium, an approval, four steps) becomes one HTML file that renders in Chromium with
every step, its image, the plot and the heat-strip, without a console error or a request."""

from __future__ import annotations

import asyncio
import base64
import re

from webshepherd.daemon.cli import main
from webshepherd.daemon.offline.report.figures import element_boxes, image_size

from tests.fixtures.report_session import (
    CHROMIUM,
    SECRET,
    record_report_session,
    shop_pages,
    snapshots,
)

STEPS = 4


async def test_report_renders_in_chromium(daemon, tmp_path, capsys):
    observations = await snapshots(shop_pages(STEPS))
    agent = await daemon.client()
    approver = await daemon.client(role="extension", name="ext")
    sid = await record_report_session(agent, approver, observations)
    data_dir = str(daemon.config.data_dir)

    assert await asyncio.to_thread(main, ["report", "--list", "--data-dir", data_dir]) == 0
    listed = capsys.readouterr().out
    assert sid in listed and "report-bot" in listed and "success" in listed

    out = tmp_path / "report.html"
    rc = await asyncio.to_thread(
        main,
        ["report", sid, "--out", str(out), "--data-dir", data_dir, "--redact", r"USB-C cable 1 m"],
    )
    assert rc == 0
    html = out.read_text(encoding="utf-8")
    # redaction: the typed password (learned from the cart's password field) and the pattern
    assert SECRET not in html and "USB-C cable 1 m" not in html and "[REDACTED]" in html
    # self-contained: no external reference of any kind
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", html)
    assert "model" in html and "tiny" in html.lower()

    from playwright.async_api import async_playwright

    problems: list[str] = []
    requests: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            page.on(
                "console",
                lambda m: problems.append(m.text) if m.type in ("error", "warning") else None,
            )
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            await page.goto(out.as_uri())
            assert await page.locator("section.step").count() == STEPS
            imgs = await page.eval_on_selector_all(
                "section.step .shot img", "els => els.map(i => [i.complete, i.naturalWidth])"
            )
            assert imgs == [[True, 1280]] * STEPS
            assert await page.locator("svg.curve polyline.line-best").count() >= 1
            executed_rewards = await page.eval_on_selector_all(
                "tr.cand:has(.tag.executed) td:nth-child(2)", "els => els.map(e => e.innerText)"
            )
            assert len(executed_rewards) == STEPS
            scored = [r for r in executed_rewards if r.strip() != "—"]  # tiny model: some unparsed
            assert await page.locator("svg.curve circle.pt-executed").count() == len(scored)
            assert await page.locator("svg.curve path.approval").count() == 1
            assert await page.locator("svg.heat rect.cell").count() == 3 * STEPS
            assert await page.locator("svg.heat rect.cell-none").count() < 3 * STEPS
            # every step outlines its candidates' targets that have boxes (two per page here)
            assert await page.locator("section.step svg.targets rect.target").count() >= STEPS
            approval = page.locator("section.step .approval")
            assert await approval.count() == 1
            text = await approval.inner_text()
            assert "approve" in text and "looks right to me" in text and "extension:ext" in text
            assert await page.locator("tr.cand .tag.executed").count() == STEPS
            assert await page.locator("details pre.axtree").count() == STEPS
            assert not await page.locator("details pre.axtree").first.is_visible()  # collapsed
            await page.screenshot(path="/tmp/issue16-report.png", full_page=True)
        finally:
            await browser.close()
    assert problems == []
    assert requests == [out.as_uri()]


def test_figure_helpers_read_boxes_and_sizes():
    tree = (
        "[1] RootWebArea 'x'\n\t[12] button 'Go', box=\"(10,20,110,60)\"\n"
        "\t[13] link 'a', center=\"(50,50)\""
    )
    assert element_boxes(tree) == {"12": (10, 20, 110, 60), "13": (38, 38, 62, 62)}
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAYAAACddGYaAAAAEklEQVR4nGNgYPj/HwoZGBgYACfYA/3ncYDd"
        "AAAAAElFTkSuQmCC"
    )
    assert image_size(png) == (3, 2)
    assert image_size(b"not an image") is None


def test_unknown_session_is_a_clear_error(tmp_path, capsys):
    from webshepherd.daemon.recorder import Recorder

    Recorder(tmp_path / "webshepherd.sqlite3").close()
    assert main(["report", "nope", "--data-dir", str(tmp_path)]) == 1
    assert "no recorded session 'nope'" in capsys.readouterr().err
    assert main(["report", "x", "--data-dir", str(tmp_path / "missing")]) == 1
    assert "no recording at" in capsys.readouterr().err


# One hostile string per character class (the shared display vectors cover every range).
HOSTILE = {
    "bidi control": (
        "fill('2', '\u202e91\u202c')",
        "fill(&#x27;2&#x27;, &#x27;\\u202e91\\u202c&#x27;)",
    ),
    "zero-width": ("click('1\u200b3')", "click(&#x27;1\\u200b3&#x27;)"),
    "tag": ("usb-c cable\U000e0049\U000e0067", "usb-c cable\\U000e0049\\U000e0067"),
    "variation selector": ("cheap\ufe0f", "cheap\\ufe0f"),
    "soft hyphen": ("Pay\u00adPal", "Pay\\xadPal"),
    "C0 control": ("Buy \x1b[2J now", "Buy \\x1b[2J now"),
    "C1 control": ("\x9b2J", "\\x9b2J"),
    "Hangul filler": ("\u3164", "\\u3164"),
    "url host": ("goto('https://pаypal.com/')", "goto(&#x27;https://xn--pypal-4ve.com/&#x27;)"),
}


async def test_untrusted_text_is_shown_escaped_in_the_report(daemon, tmp_path):
    """Every class of invisible character an agent, page or checklist carries is shown as an
    escape in the report (HTML-escaped too), and a non-ASCII host as punycode, in the file and
    in what Chromium renders."""
    from webshepherd.protocol.terminal_text import ESCAPED_RANGES

    texts = [raw for raw, _ in HOSTILE.values()]
    agent = await daemon.client()
    r = await agent.request(
        {
            "type": "session.start",
            "intent": "Pay " + " ".join(texts),
            "start_url": "https://pаypal.com/",
            "observation": {"url": "https://pаypal.com/", "axtree": "[2] textbox 'amount\u200b'"},
            "checklist": "Checklist 1: Open " + texts[2] + "\nChecklist 2: " + texts[0],
            "agent": {"name": "bot\u202e", "planning": "step", "plan": None},
        }
    )
    assert r["type"] == "session.started", r
    sid = r["session_id"]
    cands = [{"thought": t, "action": t} for t in texts[:2]] + [
        {"thought": " ".join(texts), "action": texts[-1]}
    ]
    scored = await agent.request(
        {
            "type": "score",
            "session_id": sid,
            "candidates": cands,
            "samples": 1,
            "approval": "never",
        },
        timeout=120,
    )
    assert scored["type"] == "scored", scored
    a = await agent.request(
        {"type": "action", "session_id": sid, "action": texts[-1], "thought": " ".join(texts)}
    )
    assert a["type"] == "action.recorded", a
    out = tmp_path / "hostile.html"
    data_dir = str(daemon.config.data_dir)
    assert (
        await asyncio.to_thread(main, ["report", sid, "--out", str(out), "--data-dir", data_dir])
        == 0
    )
    html = out.read_text(encoding="utf-8")
    escaped = {c for lo, hi, _ in ESCAPED_RANGES for c in range(lo, hi + 1)} - {0x0A}
    assert [f"U+{ord(c):04X}" for c in html if ord(c) in escaped] == []
    assert "pаypal" not in html
    for cls, (_, shown) in HOSTILE.items():
        assert shown in html, f"{cls}: {shown!r} not in the report"

    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            await page.goto(out.as_uri())
            shown_text = await page.locator("body").inner_text()
            codes = await page.locator("tr.cand code").all_inner_texts()
        finally:
            await browser.close()
    assert "fill('2', '\\u202e91\\u202c')" in codes and "click('1\\u200b3')" in codes
    assert "goto('https://xn--pypal-4ve.com/')" in codes
    assert "https://xn--pypal-4ve.com/" in shown_text and "bot\\u202e" in shown_text
    assert "Open usb-c cable\\U000e0049\\U000e0067" in shown_text  # a checklist title


async def test_report_shows_judge_person_agreement(tmp_path):
    """A person's four decisions (tests/fixtures/decisions.py) counted against the judge's
    rewards; the timeout is named, not counted; each person's decision is marked as truth."""
    from html.parser import HTMLParser

    from webshepherd.daemon.config import DB_NAME
    from webshepherd.daemon.offline.report.render import render_report
    from webshepherd.daemon.recorder import History
    from webshepherd.protocol.agreement import Agreement, agreement

    from tests.fixtures.decisions import record_decisions

    rec = await record_decisions(tmp_path)
    history = History.open(rec.data_dir / DB_NAME)
    try:
        tl = history.timeline(rec.session_id)
    finally:
        history.close()
    assert tl is not None
    assert agreement(tl.decisions()) == Agreement(
        decisions=4, approved=2, rejected=1, edited=1, top_picks=4, top_approved=2,
        high=2, high_rejected=1, low=2, low_approved=1,
    )  # fmt: skip
    page = render_report(tl, generated_at=0.0)

    class Section(HTMLParser):
        """The text of the agreement section, its <dt>/<dd> pairs in order."""

        def __init__(self) -> None:
            super().__init__()
            self.inside, self.cell, self.cells, self.text = False, False, [], []

        def handle_starttag(self, tag, attrs):
            if tag == "section" and ("id", "agreement") in attrs:
                self.inside = True
            if self.inside and tag in ("dt", "dd"):
                self.cell = True
                self.cells.append("")

        def handle_endtag(self, tag):
            self.inside = self.inside and tag != "section"
            self.cell = self.cell and tag not in ("dt", "dd")

        def handle_data(self, data):
            if self.inside:
                self.text.append(data)
                if self.cell:
                    self.cells[-1] += data

    parsed = Section()
    parsed.feed(page)
    pairs = dict(zip(parsed.cells[::2], parsed.cells[1::2], strict=True))
    assert pairs == {
        "decisions by a person": "4 (2 approved, 1 rejected, 1 edited)",
        "judge's top pick approved": "2 of 4",
        "high reward rejected or edited": "1 of 2",
        "low reward approved": "1 of 2",
        "approval threshold": "0.3",
        "not a person's (not counted)": "1 (timeouts, the daemon's), 0 pending",
    }
    assert "Judge–person agreement" in "".join(parsed.text)
    assert page.count(" · ground truth") == 4  # the four approvals a person decided
