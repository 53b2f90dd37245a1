"""What the session machine and the recorder exchange, in one package both may import (the
import contracts keep ``daemon.sessions`` and ``daemon.recorder`` independent).

One module per recorded kind (or kinds writing one table): its frozen record, a
:class:`~webshepherd.daemon.records.kind.Record` the machine returns as an effect (sans-I/O),
the DDL of its tables, its write and its reads (``records/kind.py`` states the shape). A
record that has a wire message carries it (the event the machine publishes, or the request),
plus only what that lacks, so each fact is stated once; ``op`` names the kind (logs and
tests). Importers take a record from its kind's module.

The registry is discovered, not listed: every module of this package that defines ``KINDS``
contributes them (:func:`kinds`, in module-name order, then each module's order). The
recorder builds its schema from them and dispatches each record through :func:`kind_for`. A
new kind is one new module here; its mirrored test is ``tests/daemon/records/test_<module>.py``.

The read back: ``StoredSession`` (``records/stored.py``), what
:meth:`History.stored_session` reads for the machine to resume a session after a restart.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any

from webshepherd.daemon.records.kind import Record, RecordKind, by_class, kind_of


def discover(path: Iterable[str], package: str) -> tuple[RecordKind[Any], ...]:
    """The kinds the modules of ``package`` (found on ``path``) state in their ``KINDS``, by
    module name, then in each module's order (a module without ``KINDS`` adds none); a class
    or a table stated twice is refused."""
    found: list[RecordKind[Any]] = []
    for module in sorted(pkgutil.iter_modules(path), key=lambda m: m.name):
        found += getattr(importlib.import_module(f"{package}.{module.name}"), "KINDS", ())
    by_class(found)
    return tuple(found)


@functools.cache
def kinds() -> tuple[RecordKind[Any], ...]:
    """Every recorded kind of this package (imported on first use: importing one kind's
    module imports no other)."""
    return discover(__path__, __name__)


@functools.cache
def _by_class() -> dict[type, RecordKind[Any]]:
    return by_class(kinds())


def kind_for(record: Record) -> RecordKind[Any]:
    """The kind that writes ``record`` (a record of no kind is refused, naming its class)."""
    return kind_of(_by_class(), record)
