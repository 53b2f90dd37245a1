"""After a run that collected the docs' walkthroughs: the blocks the pages mark as not run
here, and why (the only blocks the harness skips)."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.docs.walkthroughs import shell_blocks

    ran = any(
        "test_walkthroughs.py::test_a_shell_block_runs_as_typed" in r.nodeid
        for outcome in ("passed", "failed", "skipped")
        for r in terminalreporter.stats.get(outcome, [])
        if hasattr(r, "nodeid")
    )
    if not ran:
        return
    marked = [b for b in shell_blocks() if b.not_run is not None]
    terminalreporter.section(f"docs blocks not run here ({len(marked)})")
    for b in marked:
        terminalreporter.write_line(f"{b.where}: {b.not_run}")
