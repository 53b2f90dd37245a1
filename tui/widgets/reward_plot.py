"""A reward-over-steps line plot drawn with braille dots (2×4 dots per cell), y fixed to [0, 1]."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widget import Widget

Point = tuple[int, float | None]

_DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] within a cell
Y_AXIS = 5  # "1.0 ┤"


class BrailleCanvas:
    """A grid of cells, each a 2×4 braille dot matrix; dots remember which series set them."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.width, self.height = cols * 2, rows * 4
        self.bits = [[0] * cols for _ in range(rows)]
        self.owner = [[0] * cols for _ in range(rows)]  # bitmask of series per cell

    def set(self, x: int, y: int, series: int) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            r, c = y >> 2, x >> 1
            self.bits[r][c] |= _DOT[y & 3][x & 1]
            self.owner[r][c] |= 1 << series

    def line(self, x0: int, y0: int, x1: int, y1: int, series: int) -> None:
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.set(x0, y0, series)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def row_text(self, r: int, styles: Sequence[str], mixed: str) -> Text:
        text = Text()
        for c in range(self.cols):
            bits, owner = self.bits[r][c], self.owner[r][c]
            if not bits:
                text.append(" ")
                continue
            single = [i for i in range(len(styles)) if owner == 1 << i]
            text.append(chr(0x2800 + bits), styles[single[0]] if single else mixed)
        return text


def render_plot(
    series: Sequence[Sequence[Point]],
    width: int,
    height: int,
    styles: Sequence[str],
    labels: Sequence[str],
    mixed: str = "yellow",
) -> Text:
    """The plot as ``height`` lines of ``width`` cells: legend, plot rows, x axis, step labels."""
    out = Text(no_wrap=True, overflow="crop")
    legend = Text("  ")
    for label, style in zip(labels, styles, strict=True):
        legend.append("━━ ", style)
        legend.append(f"{label}  ")
    out.append_text(legend)
    rows = height - 3
    cols = width - Y_AXIS
    if rows < 2 or cols < 4:
        return out
    steps = [s for pts in series for s, _ in pts]
    lo, hi = (min(steps), max(steps)) if steps else (1, 1)
    canvas = BrailleCanvas(cols, rows)
    span = max(hi - lo, 1)

    def px(step: int) -> int:
        return round((step - lo) * (canvas.width - 1) / span)

    def py(reward: float) -> int:
        return round((1.0 - min(max(reward, 0.0), 1.0)) * (canvas.height - 1))

    for i, pts in enumerate(series):
        prev: tuple[int, int] | None = None
        for step, reward in pts:
            if reward is None:  # no label parsed: a gap in the curve, never a silent 0
                prev = None
                continue
            p = (px(step), py(reward))
            if prev is None:
                canvas.set(*p, i)
            else:
                canvas.line(*prev, *p, i)
            prev = p
    for r in range(rows):
        out.append("\n")
        tick = {0: "1.0", rows // 2: "0.5", rows - 1: "0.0"}.get(r)
        out.append(f"{tick} ┤" if tick else "    │", "dim")
        out.append_text(canvas.row_text(r, styles, mixed))
    axis = "└" + "─" * (cols - 1)
    left, right = f"step {lo}", str(hi)
    foot = " " * (Y_AXIS - 1) + axis
    out.append("\n" + foot[:width], "dim")
    out.append("\n")
    label = " " * Y_AXIS + left + right.rjust(max(cols - len(left), 0))
    out.append(label[:width], "dim")
    return out


class RewardPlot(Widget):
    """Best candidate's reward and the executed action's reward per step."""

    DEFAULT_CSS = """
    RewardPlot { height: 10; min-height: 6; }
    """
    STYLES = ("cyan", "magenta")
    LABELS = ("best candidate", "executed action")

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._series: tuple[list[Point], list[Point]] = ([], [])
        self._key: object = None
        self._cache: tuple[object, Text] | None = None

    @property
    def points(self) -> tuple[list[Point], list[Point]]:
        return self._series

    def set_series(self, best: list[Point], executed: list[Point], key: object = None) -> None:
        """New data; ``key`` (e.g. the session and its version) skips redraws when unchanged."""
        if key is not None and key == self._key:
            return
        self._key = key
        self._series = (best, executed)
        self._cache = None
        self.refresh()

    def render(self) -> Text:
        size = (self.size.width, self.size.height)
        if self._cache is not None and self._cache[0] == size:
            return self._cache[1]
        body = (
            render_plot(self._series, *size, self.STYLES, self.LABELS)
            if any(self._series)
            else Text("  no scored steps yet", style="dim")
        )
        lines = body.split("\n")[: size[1]]
        text = Text("\n", no_wrap=True, overflow="crop").join(lines)
        self._cache = (size, text)
        return text
