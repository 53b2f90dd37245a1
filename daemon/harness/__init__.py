"""The agent harness: BrowserGym action strings parsed (``actions``) and run by bid in a
real page through Playwright (``playwright_env``), as an ``Environment`` of the SDK's
agent loop (``webshepherd.protocol.agents``)."""

from .actions import SIGNATURES, Action, parse_action
from .playwright_env import PlaywrightEnvironment, frame_bids

__all__ = ["SIGNATURES", "Action", "PlaywrightEnvironment", "frame_bids", "parse_action"]
