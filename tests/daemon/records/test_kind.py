"""The registry of recorded kinds (``records.kinds()``): every record class is a frozen
:class:`Record` with exactly one kind, every table the recording holds belongs to exactly one
kind, and a record of no kind, or a registry stating a class or a table twice, is refused with
an error that names it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from webshepherd.daemon import records
from webshepherd.daemon.recorder import Recorder
from webshepherd.daemon.recorder.schema import DDL
from webshepherd.daemon.records import kinds
from webshepherd.daemon.records.kind import Record, RecordKind, by_class, created_tables, insert
from webshepherd.daemon.records.labels import LabelRecord
from webshepherd.protocol.errors import WebShepherdError


def _record_classes() -> set[type]:
    """Every Record subclass the package's modules define."""
    out: set[type] = set()
    for m in pkgutil.iter_modules(records.__path__):
        module = importlib.import_module(f"{records.__name__}.{m.name}")
        out |= {
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if issubclass(c, Record) and c is not Record and c.__module__ == module.__name__
        }
    return out


def test_every_record_class_has_exactly_one_kind() -> None:
    classes = [k.record for k in kinds()]
    assert len(classes) == len(set(classes)) == 14
    assert set(classes) == _record_classes()  # no record class without its kind
    for cls in classes:
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert isinstance(cls.op, str) and cls.op


def test_every_table_the_recording_holds_belongs_to_one_kind(tmp_path: Path) -> None:
    owners: dict[str, list[str]] = {}
    for k in kinds():
        for table in created_tables(k.tables):
            owners.setdefault(table, []).append(k.record.__name__)
    assert all(len(o) == 1 for o in owners.values()), owners
    r = Recorder(tmp_path / "rec.sqlite3")
    try:
        made = {n for (n,) in r.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        r.close()
    assert made == set(owners) | {"meta"}  # meta: the store's own (the schema version)
    assert created_tables(DDL) == ["meta", *owners]  # in the registry's order
    assert len(owners) == 17


def test_every_index_is_created_with_its_table() -> None:
    db = sqlite3.connect(":memory:")
    for k in kinds():
        if not k.tables:
            continue
        before = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        db.executescript(k.tables)
        made = db.execute(
            "SELECT name, tbl_name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
        ).fetchall()
        for name, table in made:
            if name not in before:
                assert table in created_tables(k.tables), (name, k.record.__name__)


@dataclass(frozen=True)
class PlantedRecord(Record):
    op = "planted"
    session_id: str


def test_a_record_of_no_kind_is_refused_and_nothing_of_its_batch_is_written(rec) -> None:
    from webshepherd.protocol.requests import Label

    label = Label(
        id="l1", session_id="s1", step=0, action="click('1')", items=["yes"], source="person"
    )
    with pytest.raises(WebShepherdError, match="unknown record PlantedRecord"):
        rec.apply_all([LabelRecord(label, "person:ann", 2.0), PlantedRecord("s1")])
    assert rec.db.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == 0
    assert not rec.db.in_transaction


def test_a_registry_stating_a_class_or_a_table_twice_is_refused() -> None:
    def write(db: sqlite3.Connection, r: object) -> None: ...

    one = RecordKind(PlantedRecord, write, "CREATE TABLE IF NOT EXISTS planted (x);")
    with pytest.raises(WebShepherdError, match="PlantedRecord has two kinds"):
        by_class([one, RecordKind(PlantedRecord, write)])
    with pytest.raises(WebShepherdError, match="table planted is created by PlantedRecord and Lab"):
        by_class([one, RecordKind(LabelRecord, write, one.tables)])
    assert set(by_class(kinds())) == _record_classes()


def test_insert_writes_each_value_to_its_named_column_and_replace_replaces() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, a INTEGER, b TEXT)")
    insert(db, "t", {"b": "x", "k": "one", "a": 1})  # any order: by name
    assert db.execute("SELECT k, a, b FROM t").fetchall() == [("one", 1, "x")]
    with pytest.raises(sqlite3.IntegrityError):
        insert(db, "t", {"k": "one", "a": 2})
    insert(db, "t", {"k": "one", "a": 2}, replace=True)
    assert db.execute("SELECT k, a, b FROM t").fetchall() == [("one", 2, None)]
