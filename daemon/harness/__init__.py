"""The agent harness, kept as a public import path: :mod:`webshepherd.daemon.browser` holds it."""

from webshepherd.daemon.browser import (
    SIGNATURES,
    ParsedAction,
    PlaywrightEnvironment,
    frame_bids,
    parse_action,
)

__all__ = ["SIGNATURES", "ParsedAction", "PlaywrightEnvironment", "frame_bids", "parse_action"]
