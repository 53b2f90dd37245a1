"""The offline commands' progress bar: counts per item or from done/total, silent when quiet."""

from __future__ import annotations

import os
import pty
from collections.abc import Iterator
from typing import TextIO

import pytest
from webshepherd.daemon.cli.progress import ProgressBar


@pytest.fixture
def terminal() -> Iterator[TextIO]:
    """A pseudo-terminal to draw on (tqdm draws only on a terminal); a few lines fit its buffer."""
    main, child = pty.openpty()
    with os.fdopen(child, "w") as stream:
        yield stream
    os.close(main)


def test_counts_items_and_follows_done_of_total(terminal: TextIO) -> None:
    steps = ProgressBar("export", "step", total=3, stream=terminal)
    assert steps._bar is None  # made on the first report, not before
    steps.update()
    steps.update(2)
    assert (steps._bar.n, steps._bar.total) == (3, 3)
    steps.close()
    assert steps._bar is None
    rows = ProgressBar("rewardbench", "row", stream=terminal)
    rows.reached(2, 5)
    assert (rows._bar.n, rows._bar.total) == (2, 5)
    rows.reached(5, 5)
    assert rows._bar is None  # closed at the end


def test_quiet_makes_no_bar(terminal: TextIO) -> None:
    bar = ProgressBar("export", "step", total=2, quiet=True, stream=terminal)
    bar.update()
    bar.reached(1, 2)
    assert bar._bar is None
