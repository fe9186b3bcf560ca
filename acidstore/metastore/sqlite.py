"""``SqliteMetastore``: the ``Metastore`` protocol on one SQLite file (stdlib ``sqlite3``).

Good for a warehouse used from one machine, by any number of threads and processes:
- WAL journal: readers never block the writer and the writer never blocks readers;
- every write runs in ``BEGIN IMMEDIATE``, which takes the database write lock up front, so
  txn id, write id and commit-sequence allocation and the commit-time conflict check are
  serialized across processes (never a deferred read lock upgraded late, which SQLite answers
  with an immediate "database is locked" instead of waiting);
- a busy timeout makes a writer wait for the lock instead of failing;
- one connection per thread (``threading.local``): sqlite3 connections must not be shared by
  concurrent threads, and a per-thread connection needs no extra Python lock.

Only the connection handling is here: the calls are ``sql_store`` / ``sql_base``, shared with
PostgreSQL, the rules ``sql_txn`` and the DDL ``sql_schema``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from acidstore.errors import InvalidInputError, MetastoreError
from acidstore.metastore import sql_txn as txns
from acidstore.metastore.sql import SQLITE, Dialect, Session
from acidstore.metastore.sql_base import Lock, positive_seconds
from acidstore.metastore.sql_schema import ensure_schema, now_micros
from acidstore.metastore.sql_store import SqlMetastore

__all__ = ["SqliteMetastore"]

T = TypeVar("T")
_JOURNAL_RETRIES = 50


class _Connection(sqlite3.Connection):
    """A connection that can be weakly referenced (``sqlite3.Connection`` cannot) and is a
    ``Session`` of the shared SQL code as it is."""

    dialect: Dialect = SQLITE


class SqliteMetastore(SqlMetastore):
    """Catalog, transactions and write ids in a SQLite file (see the module docstring).

    ``timeout_seconds`` is Hive's ``hive.txn.timeout`` (default 300 s, §14): open transactions
    without a heartbeat for that long are aborted by the next call that notices.
    ``busy_timeout_seconds`` is how long a call waits for another writer's lock.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout_seconds: float = 300,
                 busy_timeout_seconds: float = 30) -> None:
        self._path = os.fspath(path)
        if not self._path or self._path == ":memory:" or self._path.startswith("file:"):
            # Every thread opens its own connection: an in-memory database would be a different
            # database per thread, so only real files are accepted.
            raise InvalidInputError(f"SqliteMetastore needs a file path, got {self._path!r}")
        self._timeout_micros = round(positive_seconds(timeout_seconds, "timeout_seconds") * 1e6)
        self._busy = positive_seconds(busy_timeout_seconds, "busy_timeout_seconds")
        self._start_connections()
        try:
            self._ensure_schema(self._connection())
        except sqlite3.Error as exc:
            raise MetastoreError(f"cannot open the metastore {self._path}: {exc}") from exc

    def __repr__(self) -> str:
        return f"SqliteMetastore({self._path!r})"

    # --- connections and transactions ---------------------------------------------------------

    def _ensure_schema(self, conn: _Connection) -> None:
        """Under ``BEGIN IMMEDIATE``, so processes opening a new file together create it once."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            ensure_schema(conn, self._path)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _connection(self) -> _Connection:
        """This thread's connection (a forked child opens its own instead of sharing one)."""
        if self._closed:
            raise MetastoreError(f"metastore {self._path} is closed")
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        conn = sqlite3.connect(self._path, timeout=self._busy, isolation_level=None,
                               check_same_thread=False, factory=_Connection)
        conn.row_factory = sqlite3.Row
        self._set_wal(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        self._track(conn)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _set_wal(self, conn: _Connection) -> None:
        """Switching a new file to WAL needs an exclusive lock that SQLite does not always wait
        for, so processes opening a fresh file together retry briefly."""
        for attempt in range(_JOURNAL_RETRIES):
            try:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError:
                if attempt == _JOURNAL_RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        if str(mode).lower() != "wal":
            raise MetastoreError(f"{self._path}: SQLite refused WAL mode (got {mode!r}); the "
                                 "metastore needs a local filesystem")

    def _write(self, body: Callable[[Session, int], T], *, locks: tuple[Lock, ...] = (),
               consistent: bool = False) -> T:
        """``BEGIN IMMEDIATE`` takes the database write lock up front: every write runs alone,
        which covers any ``locks`` and gives a ``consistent`` view."""
        conn = self._connection()
        if conn.in_transaction:
            raise MetastoreError("metastore writes cannot nest (e.g. from a commit check)")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise MetastoreError(f"metastore {self._path} is busy: {exc}") from exc
        pending: Exception | None = None
        outcome: tuple[T] | None = None
        try:
            now = now_micros()
            txns.reap_timed_out(conn, now, self._timeout_micros)
            outcome = (body(conn, now),)
        except txns.RaiseAfterCommit as signal:
            pending = signal.error
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):  # the error below says what failed
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise MetastoreError(f"metastore {self._path} failed: {exc}") from exc
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise MetastoreError(f"metastore {self._path} could not commit: {exc}") from exc
        if pending is not None:
            # Raised outside the except block so the error keeps its own context and cause.
            raise pending
        assert outcome is not None
        return outcome[0]

    def _clock(self, conn: Session) -> int:
        """One machine: its own clock is the shared one."""
        return now_micros()

    def _read(self, body: Callable[[Session], T]) -> T:
        """One read transaction is a consistent WAL snapshot."""
        conn = self._connection()
        if conn.in_transaction:
            return body(conn)
        try:
            conn.execute("BEGIN")
            try:
                return body(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise MetastoreError(f"metastore {self._path} failed: {exc}") from exc
