"""The target of a held action cut out of the step's screenshot, drawn in the terminal: two
pixels a cell (``▀``: the upper pixel is the foreground colour, the lower the background),
with a margin of the page around it and the target outlined."""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.color import Color
from rich.style import Style
from rich.text import Text

if TYPE_CHECKING:
    from PIL.Image import Image

MARGIN = 16  # pixels of the page kept around the target
OUTLINE = (255, 200, 0)


def crop_image(data: bytes, box: Sequence[float], cols: int, rows: int) -> Image | None:
    """The RGB image of ``box`` (left, top, width, height, in the screenshot's pixels) with its
    margin, outlined, scaled to fit ``cols`` × ``2 * rows`` pixels; None when the bytes are
    not an image or the box lies outside it."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    try:
        with PILImage.open(io.BytesIO(data)) as img:
            img.load()
            page = img.convert("RGB")
    except (OSError, ValueError, PILImage.DecompressionBombError):
        return None
    left, top, width, height = (float(v) for v in box)
    right, bottom = left + max(width, 1.0), top + max(height, 1.0)
    x0, y0 = max(0, int(left) - MARGIN), max(0, int(top) - MARGIN)
    x1, y1 = min(page.width, int(right + 0.999) + MARGIN), min(page.height, int(bottom) + MARGIN)
    if x1 - x0 < 2 or y1 - y0 < 2 or right <= 0 or bottom <= 0:
        return None
    part = page.crop((x0, y0, x1, y1))
    scale = min(cols / part.width, 2 * rows / part.height, 1.0)
    line = max(1, round(1 / scale))  # survives the scaling as about one pixel
    ImageDraw.Draw(part).rectangle(
        (left - x0 - line, top - y0 - line, right - x0 + line - 1, bottom - y0 + line - 1),
        outline=OUTLINE,
        width=line,
    )
    size = (max(1, round(part.width * scale)), max(2, round(part.height * scale)))
    return part.resize(size, PILImage.Resampling.LANCZOS) if size != part.size else part


def half_blocks(img: Image) -> Text:
    """An RGB image as lines of ``▀`` cells, two pixels a cell."""
    out = Text(no_wrap=True, overflow="crop")
    rgb = list(img.convert("RGB").getdata())  # row by row, (r, g, b) each
    w, h = img.width, img.height
    for y in range(0, h, 2):
        if y:
            out.append("\n")
        for x in range(w):
            top = Color.from_rgb(*rgb[y * w + x])
            below = Color.from_rgb(*rgb[(y + 1) * w + x]) if y + 1 < h else None
            out.append("▀", Style(color=top, bgcolor=below))
    return out


def target_crop(screenshot_b64: str, box: Sequence[float], cols: int, rows: int) -> Text | None:
    """The target cut out of a base64 screenshot as terminal cells (None: no usable image)."""
    try:
        data = base64.b64decode(screenshot_b64, validate=True)
    except (binascii.Error, ValueError):
        return None
    img = crop_image(data, box, max(cols, 4), max(rows, 2))
    return None if img is None else half_blocks(img)
