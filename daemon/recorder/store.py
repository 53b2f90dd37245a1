"""Writes to the recording, on one writer thread. Every write is committed before it returns
(:meth:`Recorder.commit` resolves only once its transaction is in the WAL file), so the
daemon replies only after the row is durable and the event loop never waits on SQLite. What
each record writes is its kind's (``daemon/records``); the store holds the connection, the
transaction and the files' privacy."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from webshepherd.daemon.recorder.schema import DDL, SCHEMA_VERSION
from webshepherd.daemon.records import kind_for
from webshepherd.daemon.records.kind import Record
from webshepherd.protocol.private import private_dir

log = logging.getLogger(__name__)
SIDE_FILES = ("-wal", "-shm", "-journal")


def make_private(db_path: Path) -> None:
    """The recording holds AX trees and screenshots: its folder 0700, its files 0600.

    The folder is created 0700; an existing one the daemon's user owns is narrowed to 0700
    unless it is a shared (sticky) folder such as /tmp. The database file is created 0600
    before SQLite opens it; SQLite gives its WAL and SHM files the database file's mode.
    """
    private_dir(db_path.parent)
    os.close(os.open(db_path, os.O_RDWR | os.O_CREAT, 0o600))
    for path in [db_path, *(db_path.with_name(db_path.name + s) for s in SIDE_FILES)]:
        if path.exists() and path.stat().st_mode & 0o077:
            path.chmod(0o600)


class Recorder:
    """The SQLite recording of every session (WAL; one write connection, used on one writer
    thread through :meth:`commit`; readers open their own connections)."""

    def __init__(self, path: Path):
        make_private(path)
        self.path = path
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(DDL)
        self.db.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
        self._lock = threading.RLock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recorder")

    def close(self) -> None:
        self._writer.shutdown(wait=True)
        self.db.close()

    def apply(self, record: Record) -> None:
        """Carry out one write of the session machine (on the calling thread): its kind's
        write, in a transaction of its own or the one it joins."""
        write = kind_for(record).write
        with self._transaction():
            write(self.db, record)

    def apply_all(self, records: Sequence[Record]) -> None:
        """Several writes in one transaction: all are recorded, or none."""
        with self._transaction():
            for record in records:
                self.apply(record)

    async def commit(self, records: Sequence[Record]) -> None:
        """:meth:`apply_all` on the writer thread, in the order commits were asked for;
        returns once the transaction is committed (raises what it raised)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._writer, self.apply_all, list(records))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN … COMMIT (ROLLBACK on error); nested uses join the outer transaction."""
        with self._lock:
            if self.db.in_transaction:
                yield
                return
            self.db.execute("BEGIN")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
