"""SQLite schema of the recording (WAL mode; one file under the data dir): the store's own
``meta`` table, then every recorded kind's tables (``daemon/records``)."""

from webshepherd.daemon.records import kinds

SCHEMA_VERSION = 1

META = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

DDL = META + "".join(k.tables for k in kinds())
