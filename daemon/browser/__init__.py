"""The browser: Debian Chromium discovery, BrowserGym action parsing (one parser for the
whole project), and the Playwright harness that runs actions by bid."""

from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment, frame_bids
from webshepherd.protocol.actions import SIGNATURES, ParsedAction, parse_action

__all__ = ["SIGNATURES", "ParsedAction", "PlaywrightEnvironment", "frame_bids", "parse_action"]
