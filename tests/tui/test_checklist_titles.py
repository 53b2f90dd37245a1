"""At 120×40 the detail pane shows each checklist item's whole title (wrapped), not its
first ~22 characters."""

from __future__ import annotations

from webshepherd.tui.app import WebShepherdApp
from webshepherd.tui.widgets.session_detail import SessionDetail
from webshepherd.tui.widgets.sessions_table import SessionsTable

from tests.tui.helpers import FixedProbe, recorded_state, screen_text, wait_until

LONG = [
    "Open the product search page from the shop's home page",
    "Search for a USB-C cable that costs less than five dollars",
    "Open the cheapest cable",
    "Add the cheapest matching cable to the cart and open the cart",
]


async def test_long_checklist_titles_are_wrapped_whole_at_120x40():
    state = recorded_state()
    for view in state.sessions.values():
        if view.checklist:
            view.checklist = [(i, LONG[(i - 1) % len(LONG)]) for i, _ in view.checklist]
            view.steps_version += 1
    app = WebShepherdApp(connect=False, state=state, probe=FixedProbe())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(
            pilot,
            lambda: app.main.ready and app.main.query_one(SessionsTable).row_count == 3,
            what="the main screen",
        )
        detail = app.main.query_one(SessionDetail)
        await wait_until(pilot, lambda: detail.view is not None, what="a selected session")
        assert detail.view is not None
        titles = LONG[: len(detail.view.checklist)]

        def pane_text() -> str:
            pane = detail.region
            rows = screen_text(app).splitlines()[pane.y : pane.y + pane.height]
            text = " ".join(r[pane.x : pane.x + pane.width].strip() for r in rows)
            return " ".join(text.split())

        await wait_until(
            pilot, lambda: titles[0] in pane_text(), what="the first title", observe=pane_text
        )
        text = pane_text()
        for title in titles:
            assert title in text, f"{title!r} not shown whole in:\n{text}"
        assert "Open the product se " not in text + " "
