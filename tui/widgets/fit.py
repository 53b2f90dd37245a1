"""Table column widths from their content: each column as wide as its header and its cells,
one flexible column (an intent, an action) gets the rest of the table's width. Names are
cut at :data:`NAME_MAX` cells, with an ellipsis."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable
from webshepherd.tui.plain import plain

NAME_MAX = 20
#: the least a flexible column is given, however narrow the table
FLEX_LEAST = 10

Cell = Text | str


def width_of(cell: Cell) -> int:
    return cell_len(cell.plain if isinstance(cell, Text) else cell)


def name_cell(name: str, most: int = NAME_MAX) -> Text:
    """An untrusted name as plain text, cut at ``most`` cells."""
    return cut(plain(name), most)


def cut(cell: Cell, width: int) -> Text:
    text = cell.copy() if isinstance(cell, Text) else Text(cell)
    text.no_wrap = True
    text.truncate(width, overflow="ellipsis")
    return text


def fit(
    columns: Sequence[str], rows: Iterable[Sequence[Cell]], flex: str, room: int, padding: int = 1
) -> dict[str, int]:
    """Each column's width: the widest of its header and cells; ``flex``'s is what is left of
    ``room`` (the table's width) after the others and every column's padding."""
    widths = {c: cell_len(c) for c in columns}
    for row in rows:
        for c, cell in zip(columns, row, strict=True):
            if c != flex:
                widths[c] = max(widths[c], width_of(cell))
    used = sum(w for c, w in widths.items() if c != flex) + 2 * padding * len(columns)
    widths[flex] = max(FLEX_LEAST, room - used)
    return widths


def shown(
    columns: Sequence[str], cells: Sequence[Cell], flex: str, widths: dict[str, int]
) -> tuple[Cell, ...]:
    """A row's cells as shown: ``flex``'s cut to its width."""
    return tuple(
        cut(c, widths[flex]) if name == flex else c for name, c in zip(columns, cells, strict=True)
    )


def room(table: DataTable[Cell], fallback: int = 80) -> int:
    """The width a table's columns can fill: its own less a vertical scrollbar's (kept free
    whether shown or not), else ``fallback`` before it is laid out."""
    width = table.size.width or fallback
    return max(0, width - table.styles.scrollbar_size_vertical)
