"""browser-use's actions as BrowserGym action strings (no framework imported: ``webshepherd
rescore`` reads saved browser-use histories with it, the live hooks in :mod:`.browser_use`)."""

from __future__ import annotations

from typing import Any

SCROLL_PX = 600


def to_browsergym(name: str, params: dict[str, Any], bids: dict[int, str]) -> str | None:
    """browser-use's action as a BrowserGym action string; None when it has no counterpart."""

    def bid() -> str | None:
        index = params.get("index")
        return bids.get(index) if isinstance(index, int) else None

    if name == "click" and bid():
        return f"click({bid()!r})"
    if name == "input" and bid():
        return f"fill({bid()!r}, {params.get('text', '')!r})"
    if name == "navigate":
        goto = f"goto({params['url']!r})"
        return f"new_tab()\n{goto}" if params.get("new_tab") else goto
    if name == "go_back":
        return "go_back()"
    if name == "scroll" and params.get("index") is None:
        sign = 1 if params.get("down", True) else -1
        return f"scroll(0, {sign * round(float(params.get('pages', 1.0)) * SCROLL_PX)})"
    if name == "select_dropdown" and bid():
        return f"select_option({bid()!r}, {params.get('text', '')!r})"
    if name == "send_keys":
        return f"keyboard_press({params.get('keys', '')!r})"
    if name == "done":
        return f"send_msg_to_user({params.get('text', '')!r})"
    return None
