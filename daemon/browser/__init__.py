"""The browser: Debian Chromium discovery, BrowserGym action parsing (one parser for the
whole project), and the Playwright harness that runs actions by bid."""

from webshepherd.daemon.browser.actions import SIGNATURES, Action, parse_action
from webshepherd.daemon.browser.playwright_env import PlaywrightEnvironment, frame_bids

__all__ = ["SIGNATURES", "Action", "PlaywrightEnvironment", "frame_bids", "parse_action"]
