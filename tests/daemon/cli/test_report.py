"""``webshepherd report --list`` in a real terminal (a pty): intents an agent sent with terminal
sequences (OSC 52 writes the clipboard, OSC 0 the title, CSI 2J clears the screen) are listed
with those sequences shown as escapes; no ESC byte reaches the terminal. The sessions are
recorded through a real daemon (reference checklists: no judgement is involved)."""

from __future__ import annotations

import asyncio
import os
import pty
import subprocess
import sys

from tests.fixtures.daemon import start_session

HOSTILE = {
    "osc52": "Buy \x1b]52;c;cm0gLXJmIH4K\x07 a lamp",
    "osc0": "Rename \x1b]0;pwned title\x1b\\ the tab",
    "csi2j": "Clear \x1b[2J\x1b[H the screen \x9b2J",
}


def read_in_pty(args: list[str], env: dict[str, str]) -> bytes:
    """Run ``args`` with a pty as its terminal; everything it wrote there."""
    main, child = pty.openpty()
    proc = subprocess.Popen(args, stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    out = bytearray()
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")
    return bytes(out)


async def test_report_list_prints_no_terminal_sequence(daemon, tmp_path):
    agent = await daemon.client(name="agent-\x1b[31mred")
    for intent in HOSTILE.values():
        await start_session(agent, intent=intent, agent={"name": "bot\x1b]0;t\x07"})
    env = dict(os.environ, WEBSHEPHERD_CONFIG_DIR=str(tmp_path / "config"), NO_COLOR="1")
    args = [sys.executable, "-m", "webshepherd.daemon.cli", "report", "--list"]
    args += ["--data-dir", str(daemon.config.data_dir)]
    out = await asyncio.to_thread(read_in_pty, args, env)
    assert b"\x1b" not in out and b"\x07" not in out and "\x9b".encode() not in out
    text = out.decode()
    assert "Buy \\x1b]52;c;cm0gLXJmIH4K\\x07 a lamp" in text
    assert "Rename \\x1b]0;pwned title\\x1b\\ the tab" in text
    assert "Clear \\x1b[2J\\x1b[H the screen \\x9b2J" in text
    assert text.count("bot\\x1b]0;t\\x07") == 3
