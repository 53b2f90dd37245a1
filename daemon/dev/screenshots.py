"""Small page screenshots drawn from text (PIL), for the tiny vision model and the demo.

The text demo has no Chromium, so its pages have no real screenshots; these PNGs stand in
for them: the page's lines drawn in black on white at a small size, the same bytes for the
same text.
"""

from __future__ import annotations

import io

WIDTH, HEIGHT = 96, 72


def page_png(lines: list[str], width: int = WIDTH, height: int = HEIGHT, accent: int = 0) -> bytes:
    """A PNG of ``lines`` (the first one as a coloured title bar), ``width`` x ``height``."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    bar = ((40 + 70 * accent) % 256, (90 + 40 * accent) % 256, (160 + 30 * accent) % 256)
    draw.rectangle((0, 0, width, 11), fill=bar)
    y = 0
    for i, line in enumerate(lines):
        draw.text((2, y), line[:40], fill="white" if i == 0 else "black", font=font)
        y += 12
        if y > height - 10:
            break
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def axtree_png(axtree: str, width: int = WIDTH, height: int = HEIGHT) -> bytes:
    """A screenshot-like PNG of an AX tree's names (its root's name as the title)."""
    lines = []
    for raw in axtree.splitlines():
        text = raw.strip()
        name = text.split("'", 2)[1] if text.count("'") >= 2 else text
        if name:
            lines.append(name)
    return page_png(lines or ["(empty page)"], width, height, accent=len(lines) % 5)
