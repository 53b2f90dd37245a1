"""Reading input files row by row, with errors that name the file, the row and the field."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from webshepherd.daemon.offline.files import lines, loads
from webshepherd.protocol.errors import ErrorCode, WebShepherdError


class DataError(WebShepherdError):
    """A malformed input file: says which file, which row (1-based) and which field."""

    def __init__(self, path: Path | str, row: int | None, field: str | None, problem: str):
        where = f"{path}"
        if row is not None:
            where += f" row {row}"
        if field is not None:
            where += f" field {field!r}"
        super().__init__(f"{where}: {problem}", ErrorCode.INVALID_MESSAGE)
        self.path, self.row, self.field = str(path), row, field


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row number, row)`` from JSONL, a JSON list, Parquet, CSV or XLSX (by suffix)."""
    if not path.exists():
        raise DataError(path, None, None, "no such file")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        yield from _jsonl(path)
    elif suffix == ".json":
        try:
            data = loads(path.read_text(encoding="utf-8"), path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(path, None, None, f"not valid JSON ({e})") from None
        if not isinstance(data, list):
            raise DataError(path, None, None, "a .json input must hold a list of objects")
        for i, row in enumerate(data, 1):
            if not isinstance(row, dict):
                raise DataError(path, i, None, "not a JSON object")
            yield i, row
    elif suffix == ".parquet":
        yield from _parquet(path)
    elif suffix == ".csv":
        with path.open(newline="", encoding="utf-8-sig") as f:
            for i, row in enumerate(csv.DictReader(f), 1):
                yield i, {k.strip(): v for k, v in row.items() if k is not None}
    elif suffix == ".xlsx":
        yield from _xlsx(path)
    else:
        raise DataError(
            path, None, None, f"unknown file type {suffix!r} (.jsonl, .json, .parquet, .csv, .xlsx)"
        )


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as f:
        for i, line in lines(f, path):
            if not line.strip():
                continue
            try:
                row = loads(line, f"{path} row {i}")
            except json.JSONDecodeError as e:
                raise DataError(path, i, None, f"not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise DataError(path, i, None, "not a JSON object")
            yield i, row


def _parquet(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(
            path,
            None,
            None,
            "reading Parquet needs pyarrow: pip install '.[eval]' in a clone",
        ) from None
    try:
        pf = pq.ParquetFile(str(path))
    except Exception as e:
        raise DataError(path, None, None, f"not a readable Parquet file ({e})") from None
    i = 0
    for batch in pf.iter_batches(batch_size=256):
        for row in batch.to_pylist():
            i += 1
            yield i, row


def _xlsx(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import openpyxl
    except ImportError:
        raise DataError(
            path, None, None, "reading .xlsx needs openpyxl: pip install openpyxl"
        ) from None
    wb = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    rows = wb.active.iter_rows(values_only=True)
    header = [str(h).strip() if h is not None else "" for h in next(rows, ())]
    for i, values in enumerate(rows, 1):
        yield i, {h: v for h, v in zip(header, values, strict=False) if h}


def need_str(
    path: Path,
    row: int,
    data: dict[str, Any],
    field: str,
    *,
    optional: bool = False,
    numbers: bool = False,
) -> str:
    """A string field; ``numbers``: also accept a number (ids, answers) as its text."""
    v = data.get(field)
    if v is None:
        if optional:
            return ""
        raise DataError(path, row, field, "missing")
    if numbers and isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        raise DataError(path, row, field, f"expected a string, got {type(v).__name__}")
    return v


def need_int(path: Path, row: int, data: dict[str, Any], field: str) -> int:
    v = data.get(field)
    if v is None:
        raise DataError(path, row, field, "missing")
    try:
        if isinstance(v, bool):
            raise ValueError
        if isinstance(v, float) and not v.is_integer():
            raise ValueError
        return int(v)
    except (TypeError, ValueError):
        raise DataError(path, row, field, f"expected an integer, got {v!r}") from None


def need_str_list(
    path: Path, row: int, data: dict[str, Any], field: str, none_as: str | None = None
) -> list[str]:
    """A list of strings (``none_as``: what a null entry reads as; else nulls are refused)."""
    v = data.get(field)
    if v is None:
        return []
    if isinstance(v, str):
        try:
            v = loads(v, f"{path} row {row} field {field!r}")
        except json.JSONDecodeError:
            raise DataError(path, row, field, "expected a list of strings") from None
    if isinstance(v, list) and none_as is not None:
        v = [none_as if x is None else x for x in v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise DataError(path, row, field, "expected a list of strings")
    return list(v)
