"""The shape of a recorded kind: its record class, the tables it owns and its write.

A kind's module (``records/<kind>.py``) holds all of it: the frozen record the session
machine returns (a :class:`Record`), the DDL of its tables, the function that writes it, its
:class:`RecordKind` in the module's ``KINDS``, and the functions that read those tables back.
The modules only state SQL and take the connection the recorder passes (already inside its
transaction); none opens a database.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel
from webshepherd.protocol.errors import WebShepherdError


@dataclass(frozen=True)
class Record:
    """Any write of the session machine: each kind's frozen record subclasses it and names
    its kind in ``op`` (logs and tests)."""

    op: ClassVar[str]


R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class RecordKind(Generic[R]):
    """One recorded kind: ``write(db, record)`` runs its statements on ``db`` inside the
    recorder's transaction; ``tables`` is the DDL (tables and indexes) of the tables this
    kind owns (empty when it writes tables another kind of its module owns)."""

    record: type[R]
    write: Callable[[sqlite3.Connection, R], None]
    tables: str = ""


def by_class(kinds: Iterable[RecordKind[Any]]) -> dict[type, RecordKind[Any]]:
    """The kinds by record class; a class with two kinds, or a table created by two, is
    refused."""
    out: dict[type, RecordKind[Any]] = {}
    owner: dict[str, str] = {}
    for kind in kinds:
        name = kind.record.__name__
        if kind.record in out:
            raise WebShepherdError(f"records: {name} has two kinds")
        out[kind.record] = kind
        for table in created_tables(kind.tables):
            if table in owner:
                raise WebShepherdError(
                    f"records: table {table} is created by {owner[table]} and {name}"
                )
            owner[table] = name
    return out


def kind_of(kinds: Mapping[type, RecordKind[Any]], record: object) -> RecordKind[Any]:
    """The kind that writes ``record`` (a record of no kind is refused, naming its class)."""
    kind = kinds.get(type(record))
    if kind is None:
        raise WebShepherdError(
            f"recorder: unknown record {type(record).__name__} "
            "(no module of daemon.records states its kind in KINDS)"
        )
    return kind


_CREATE_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)")


def created_tables(ddl: str) -> list[str]:
    """The tables a DDL text creates, in order."""
    return _CREATE_TABLE.findall(ddl)


def insert(
    db: sqlite3.Connection, table: str, row: Mapping[str, object], *, replace: bool = False
) -> sqlite3.Cursor:
    """``INSERT`` (or ``INSERT OR REPLACE``) ``row``, column by column, into ``table`` (names
    from this package's code only; the values are parameters)."""
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    marks = ", ".join("?" * len(row))
    sql = f"{verb} INTO {table} ({', '.join(row)}) VALUES ({marks})"
    return db.execute(sql, tuple(row.values()))


def to_json(v: object) -> str:
    """A JSON column (compact, UTF-8 kept)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def models_json(models: Iterable[BaseModel]) -> str:
    """A column holding a list of wire models: checklist items, a result's item
    probabilities (the one serialisation of a step's result into the recording)."""
    return to_json([m.model_dump() for m in models])


def table_rows(db: sqlite3.Connection, sql: str, args: tuple[object, ...]) -> list[sqlite3.Row]:
    """The rows of a query on a table a recording made before it was kept lacks (none)."""
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # a recording made before the table was kept
        return []
