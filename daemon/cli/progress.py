"""The offline commands' progress bar: tqdm on stderr, or nothing when quiet or off a terminal."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm


class ProgressBar:
    """A bar made on the first report (tqdm is in the ``eval`` extra; without it, no bar).

    ``update(n)`` counts ``n`` more items done (export); ``reached(done, total)`` says how
    far the work is (evaluation callbacks) and closes the bar at the end.
    """

    def __init__(
        self,
        desc: str,
        unit: str,
        total: int | None = None,
        quiet: bool = False,
        stream: TextIO | None = None,  # default: stderr
    ) -> None:
        self.desc, self.unit, self.total, self.quiet = desc, unit, total, quiet
        self.stream = stream
        self._bar: tqdm[object] | None = None

    def _make(self) -> tqdm[object] | None:
        if self._bar is None and not self.quiet:
            try:
                from tqdm import tqdm
            except ImportError:
                self.quiet = True
                return None
            self._bar = tqdm(
                total=self.total,
                desc=self.desc,
                unit=self.unit,
                file=self.stream or sys.stderr,
                disable=None,  # no bar off a terminal
            )
        return self._bar

    def update(self, n: int = 1) -> None:
        bar = self._make()
        if bar is not None:
            bar.update(n)

    def reached(self, done: int, total: int) -> None:
        self.total = total
        bar = self._make()
        if bar is None:
            return
        bar.total, bar.n = total, done
        bar.refresh()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
