"""SQLite's reader leases, in a small database file of their own beside the metastore file.

A read leases its snapshot so that the cleaner keeps what it reads (``sql_leases``). In the
metastore file a lease is a write, and every write there queues for SQLite's one write lock,
which commits, opens and compaction steps take, and which a slow or suspended process may
hold for as long as it likes: every read then waited behind it until the busy timeout. Here
only lease calls take the file's write lock, each for one statement (no Python code runs
while it is held), so a read never queues behind a writer of the catalogue.

- ``<metastore file>-leases``: its name begins with the metastore's, as SQLite's ``-wal``
  and ``-shm`` files' do, so the warehouse treats it as part of the catalogue. The first
  lease creates it; a store nobody has leased from has none, and reads find no lease there.
- WAL journal: the cleaner reads the leases while readers add theirs, neither waiting.
- ``synchronous = NORMAL``: a lease is visible to every process once its statement ends but
  is not flushed to disk. A lease protects a running reader: a process that dies keeps its
  commits (WAL), and a machine that loses power loses its readers with their leases.
- Lease ids continue the metastore's own numbering (seeded from its ``sqlite_sequence`` when
  the file is created), so an id never names two leases, not even across the move of the
  leases out of the metastore file.
- A read-only store (an archived copy) takes no lease; it reads an existing file read-only.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from acidstore.metastore.sql import SQLITE
from acidstore.metastore.sql_schema import now_micros
from acidstore.metastore.sqlite_errors import sqlite_failure

__all__ = ["LEASE_FILE_SUFFIX", "LeaseFile"]

T = TypeVar("T")
R = TypeVar("R")
#: appended to the metastore file's path
LEASE_FILE_SUFFIX = "-leases"

_DDL = (
    "CREATE TABLE IF NOT EXISTS leases (lease_id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "table_id INTEGER NOT NULL, snapshot TEXT NOT NULL, write_ids TEXT NOT NULL, "
    "acquired INTEGER NOT NULL, expires INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS leases_by_table ON leases (table_id, expires)",
    "CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expires)",
)


class LeaseFile:
    """The lease store of one SQLite metastore. ``connect(path)`` opens a connection the way
    the metastore opens its own (WAL or read-only, tracked so that closing the metastore
    closes it); ``first_id()`` is the metastore file's last lease id, read when the file is
    created. One connection per thread, as the metastore's."""

    def __init__(self, path: str, *, connect: Callable[[str], sqlite3.Connection],
                 first_id: Callable[[], int]) -> None:
        self.path = path
        self._connect = connect
        self._first_id = first_id
        self._local = threading.local()

    def call(self, body: Callable[[Any, int], T]) -> T:
        """``body(connection, now)`` in autocommit mode: each statement is one short write
        transaction of this file (created on first use)."""
        conn = self._connection(create=True)
        assert conn is not None
        try:
            if not getattr(self._local, "ready", False):
                self._create(conn)
                self._local.ready = True
            return body(conn, now_micros())
        except sqlite3.Error as exc:
            raise sqlite_failure(exc, self.path, f"the lease file {self.path} failed") from exc

    def read(self, body: Callable[[Any, int], list[R]]) -> list[R]:
        """``body(connection, now)``, or nothing when the file holds no lease table yet."""
        try:
            conn = self._connection(create=False)
            if conn is None or conn.execute(SQLITE.table_exists,
                                            ("leases",)).fetchone() is None:
                return []
            return body(conn, now_micros())
        except sqlite3.Error as exc:
            raise sqlite_failure(exc, self.path, f"the lease file {self.path} failed") from exc

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        """This thread's connection; None (and nothing created) when the file does not exist
        and ``create`` is false."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        if not create and not os.path.exists(self.path):
            return None
        conn = self._connect(self.path)
        self._local.conn, self._local.pid, self._local.ready = conn, os.getpid(), False
        return conn

    def _create(self, conn: sqlite3.Connection) -> None:
        """The lease table, once per file (``BEGIN IMMEDIATE``: processes creating it
        together create it once), its ids seeded past the metastore file's."""
        conn.execute("PRAGMA synchronous = NORMAL")
        if conn.execute(SQLITE.table_exists, ("leases",)).fetchone() is not None:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(SQLITE.table_exists, ("leases",)).fetchone() is None:
                for statement in _DDL:
                    conn.execute(statement)
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('leases', ?)",
                             (self._first_id(),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
