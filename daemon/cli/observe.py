"""``webshepherd observe URL [--visible]``: what the model sees of a page.

Launches Chromium with the built extension, opens URL, captures it through the
extension (the same code that feeds the daemon) and prints the AX-tree text.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

from webshepherd.daemon.browser.chromium import (
    CHROMIUM_ARGS,
    DEFAULT_DIST,
    CaptureError,
    capture,
    extension_context,
    worker_message,
)
from webshepherd.protocol.terminal_text import terminal_safe

__all__ = ["CHROMIUM_ARGS", "DEFAULT_DIST", "add_observe_parser", "cmd_observe", "observe"]


def add_observe_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    o = sub.add_parser("observe", help="print the AX-tree text the daemon would receive for URL")
    o.add_argument("url")
    o.add_argument("--visible", action="store_true", help="with visible/clickable flags (AgentLab)")
    o.add_argument("--extension", type=Path, default=DEFAULT_DIST, help="the built extension")
    o.add_argument("--chromium", default=None, help="Chromium binary (default: chromium on PATH)")
    o.add_argument("--timing", action="store_true", help="print capture timings on stderr")
    o.set_defaults(func=cmd_observe)


async def observe(url: str, flags: str, dist: Path, chromium: str) -> dict[str, object]:
    """The extension's capture of ``url`` in a fresh profile; ``CaptureError`` saying why not
    (the page did not load, the extension's worker failed, ...)."""
    with tempfile.TemporaryDirectory(prefix="webshepherd-observe-") as profile:
        async with extension_context(profile, dist, chromium) as (ctx, worker):
            page = await ctx.new_page()
            try:
                await page.goto(url, wait_until="load")
            except Exception as exc:
                raise CaptureError(f"{url} did not load: {worker_message(exc)}") from None
            return await capture(worker, page.url, flags, exact=True)


def cmd_observe(args: argparse.Namespace) -> int:
    dist = Path(args.extension)
    if not (dist / "manifest.json").exists():
        print(
            f"webshepherd: no built extension in {dist} (cd extension && npm ci && npm run build)",
            file=sys.stderr,
        )
        return 1
    chromium = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("webshepherd: Chromium not found (apt-get install chromium)", file=sys.stderr)
        return 1
    try:
        import playwright  # noqa: F401
    except ImportError:
        print(
            "webshepherd: observe needs the playwright package (pip install playwright)",
            file=sys.stderr,
        )
        return 1
    try:
        result = asyncio.run(
            observe(args.url, "visible" if args.visible else "default", dist, chromium)
        )
    except CaptureError as exc:
        print(f"webshepherd: {terminal_safe(exc.message)}", file=sys.stderr)
        return 1
    sys.stdout.write(terminal_safe(str(result["axtree"]), multiline=True) + "\n")
    for w in result.get("warnings") or []:  # type: ignore[attr-defined]
        print(f"webshepherd: warning: {terminal_safe(str(w))}", file=sys.stderr)
    if args.timing:
        print(f"webshepherd: capture timing (ms): {result['timing']}", file=sys.stderr)
    return 0
