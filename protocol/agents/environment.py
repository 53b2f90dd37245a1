"""The environment contract an agent loop drives: observe a page, execute an action, reset.

Implemented by the Playwright harness (real Chromium) and by the demo's text
browser. Actions are BrowserGym action strings such as ``click('12')``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from webshepherd.protocol.actions import ActionError
from webshepherd.protocol.common import ElementFacts

__all__ = ["ActionError", "ActionResult", "Environment", "PageState"]


@dataclass(frozen=True)
class PageState:
    """What the agent sees of the page before choosing an action."""

    url: str
    axtree: str
    screenshot: bytes | None = None  # PNG
    last_action_error: str | None = None
    # bid -> what the page says of the element (links, the form it submits and its method):
    # sent with the observation, the daemon's guards read them
    elements: Mapping[str, ElementFacts] | None = None


@dataclass(frozen=True)
class ActionResult:
    """The outcome of one executed action."""

    action: str
    message: str | None = None  # text of send_msg_to_user
    infeasible: str | None = None  # reason of report_infeasible

    @property
    def done(self) -> bool:
        """Whether the action ends the episode (an answer or an infeasibility report)."""
        return self.message is not None or self.infeasible is not None


@runtime_checkable
class Environment(Protocol):
    """A browser (real or simulated) the agent loop observes and acts on."""

    async def observe(self) -> PageState:
        """The current page."""
        ...

    async def execute(self, action: str) -> ActionResult:
        """Run one BrowserGym action string; raises :class:`ActionError`."""
        ...

    async def reset(self) -> None:
        """Return to the start state: the start page, and as far as the environment can,
        the site's own state. Tree search backtracks by ``reset`` and replaying an action
        prefix (Koh et al. 2024); the other paradigms never call it."""
        ...
