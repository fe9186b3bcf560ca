"""``SqliteMetastore``: the ``Metastore`` protocol on one SQLite file (stdlib ``sqlite3``).

Good for a warehouse used from one machine, by any number of threads and processes:
- WAL journal: readers never block the writer and the writer never blocks readers;
- every write runs in ``BEGIN IMMEDIATE``, which takes the database write lock up front, so
  txn id, write id and commit-sequence allocation and the commit-time conflict check are
  serialized across processes (never a deferred read lock upgraded late, which SQLite answers
  with an immediate "database is locked" instead of waiting);
- a busy timeout makes a writer wait for the lock instead of failing;
- one connection per thread (``threading.local``): sqlite3 connections must not be shared by
  concurrent threads, and a per-thread connection needs no extra Python lock;
- opening a store whose schema is current only reads it, so connecting never waits for a
  writer either;
- reads never wait for a writer: their snapshot leases go to a lease file of their own
  beside this one (``sqlite_leases``), and a snapshot reaps timed-out txns only if it gets
  the write lock at once;
- a file this process cannot write, or that nobody may write (no write permission bit: how an
  archived copy is marked, and what root honours too), is opened read-only: reads work without
  creating or changing anything, writes raise ``ReadOnlyWarehouseError``.

Only the connection handling is here: the calls are ``sql_store`` / ``sql_base``, shared with
PostgreSQL, the rules ``sql_txn`` and the DDL ``sql_schema``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from acidstore.config import BUSY_TIMEOUT_SECONDS, TXN_TIMEOUT_SECONDS
from acidstore.errors import (
    InvalidInputError,
    MetastoreError,
    MetastoreVersionError,
    ReadOnlyWarehouseError,
)
from acidstore.metastore import sql_txn as txns
from acidstore.metastore.records import ComponentLog
from acidstore.metastore.sql import SQLITE, Dialect, Session
from acidstore.metastore.sql_base import Lock, WriteLockBusy
from acidstore.metastore.sql_log import committed_log
from acidstore.metastore.sql_schema import (
    SCHEMA_VERSION,
    ensure_schema,
    now_micros,
    stored_schema_version,
)
from acidstore.metastore.sql_store import SqlMetastore
from acidstore.metastore.sqlite_errors import sqlite_failure
from acidstore.metastore.sqlite_leases import LEASE_FILE_SUFFIX, LeaseFile
from acidstore.metastore.task_guard import refuse_in_spark_task
from acidstore.metastore.validate import check_seconds

__all__ = ["SqliteMetastore"]

T = TypeVar("T")
R = TypeVar("R")
_JOURNAL_RETRIES = 50


class _Connection(sqlite3.Connection):
    """A connection that can be weakly referenced (``sqlite3.Connection`` cannot) and is a
    ``Session`` of the shared SQL code as it is."""

    dialect: Dialect = SQLITE


class SqliteMetastore(SqlMetastore):
    """Catalog, transactions and write ids in a SQLite file (see the module docstring).

    ``timeout_seconds`` is Hive's ``hive.txn.timeout`` (default 300 s, §14) of the transactions
    this object opens, stored with each: one without a heartbeat for that long is aborted by
    the next call that notices, from any client (whose own timeout does not apply to it).
    ``busy_timeout_seconds`` is how long a call waits for another writer's lock.
    ``read_only``: open the file read-only; by default when it (or its directory) cannot be
    written (see the module docstring). Reader leases live in the file's lease file
    (``sqlite_leases``).
    """

    _leases_apart = True

    def __init__(self, path: str | os.PathLike[str], *,
                 timeout_seconds: float = TXN_TIMEOUT_SECONDS,
                 busy_timeout_seconds: float = BUSY_TIMEOUT_SECONDS,
                 read_only: bool | None = None) -> None:
        self._path = os.fspath(path)
        if not self._path or self._path == ":memory:" or self._path.startswith("file:"):
            # Every thread opens its own connection: an in-memory database would be a different
            # database per thread, so only real files are accepted.
            raise InvalidInputError(f"SqliteMetastore needs a file path, got {self._path!r}")
        self.read_only = _unwritable(self._path) if read_only is None else bool(read_only)
        self._timeout_micros = round(check_seconds(timeout_seconds, "timeout_seconds") * 1e6)
        self._busy = check_seconds(busy_timeout_seconds, "busy_timeout_seconds")
        self._start_connections()
        self._leases = LeaseFile(self._path + LEASE_FILE_SUFFIX, connect=self._open,
                                 first_id=self._last_lease_id)
        try:
            self._ensure_schema(self._connection())
        except sqlite3.Error as exc:
            raise sqlite_failure(exc, self._path,
                                 f"cannot open the metastore {self._path}") from exc

    def __repr__(self) -> str:
        return f"SqliteMetastore({self._path!r})"

    @property
    def url(self) -> str:
        """``sqlite:///`` and the file's absolute path (SQLAlchemy's spelling, which
        ``acidstore.connect`` takes)."""
        return "sqlite:///" + os.path.abspath(self._path)

    @property
    def path(self) -> str:
        """The SQLite file: file operations on a warehouse (``adopt_table`` moving a
        directory's files) must keep their hands off the catalogue wherever it lives."""
        return self._path

    # --- connections and transactions ---------------------------------------------------------

    def _ensure_schema(self, conn: _Connection) -> None:
        """A current schema is only read; a new or older one is created or migrated under
        ``BEGIN IMMEDIATE``, so processes opening a new file together create it once."""
        conn.execute("BEGIN")
        try:
            version = stored_schema_version(conn, self._path)
        finally:
            conn.execute("COMMIT")
        if version == SCHEMA_VERSION:
            return
        if self.read_only:
            found = "no acidstore schema" if version is None else f"schema version {version}"
            raise MetastoreVersionError(
                f"metastore {self._path} is read-only and has {found}; this acidstore reads "
                f"version {SCHEMA_VERSION}, and upgrading needs a writable copy")
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
        refuse_in_spark_task(self._path)
        conn = self._open(self._path)
        conn.execute("PRAGMA foreign_keys = ON")
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _open(self, path: str) -> _Connection:
        """A new connection to ``path`` (the metastore file or its lease file): read-only for
        a read-only store, otherwise in WAL mode; closed by ``close``."""
        if self.read_only:
            conn = sqlite3.connect(_read_only_uri(path), uri=True, timeout=self._busy,
                                   isolation_level=None, check_same_thread=False,
                                   factory=_Connection)
            conn.execute("PRAGMA query_only = ON")
        else:
            conn = sqlite3.connect(path, timeout=self._busy, isolation_level=None,
                                   check_same_thread=False, factory=_Connection)
            self._set_wal(conn, path)
        conn.row_factory = sqlite3.Row
        self._track(conn)
        return conn

    def _set_wal(self, conn: _Connection, path: str) -> None:
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
            raise MetastoreError(f"{path}: SQLite refused WAL mode (got {mode!r}); the "
                                 "metastore needs a local filesystem")

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyWarehouseError(
                f"the metastore {self._path} is read-only (it or its directory cannot be "
                "written, e.g. an archived copy): reads work, but writing, creating or "
                "dropping tables, compaction and cleaning need a writable copy",
                path=self._path)

    def _write(self, body: Callable[[Session, int], T], *, locks: tuple[Lock, ...] = (),
               consistent: bool = False, wait: bool = True) -> T:
        """``BEGIN IMMEDIATE`` takes the database write lock up front: every write runs alone,
        which covers any ``locks`` and gives a ``consistent`` view. ``wait=False`` tries the
        lock once (no busy timeout)."""
        self.check_writable()
        conn = self._connection()
        if conn.in_transaction:
            raise MetastoreError("metastore writes cannot nest (e.g. from a commit check)")
        self._begin_immediate(conn, wait)
        pending: Exception | None = None
        outcome: tuple[T] | None = None
        try:
            now = now_micros()
            txns.reap_timed_out(conn, now)
            outcome = (body(conn, now),)
        except txns.RaiseAfterCommit as signal:
            pending = signal.error
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):  # the error below says what failed
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise sqlite_failure(exc, self._path, f"metastore {self._path} failed") from exc
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise sqlite_failure(exc, self._path,
                                 f"metastore {self._path} could not commit") from exc
        if pending is not None:
            # Raised outside the except block so the error keeps its own context and cause.
            raise pending
        assert outcome is not None
        return outcome[0]

    def _begin_immediate(self, conn: _Connection, wait: bool) -> None:
        """Take the write lock; without ``wait``, raise ``WriteLockBusy`` if it is taken."""
        if not wait:
            conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not wait and (exc.sqlite_errorcode & 0xFF) == sqlite3.SQLITE_BUSY:
                raise WriteLockBusy(self._path) from exc
            raise sqlite_failure(exc, self._path, f"metastore {self._path} is busy") from exc
        except sqlite3.Error as exc:
            raise sqlite_failure(exc, self._path, f"metastore {self._path} is busy") from exc
        finally:
            if not wait:
                conn.execute(f"PRAGMA busy_timeout = {round(self._busy * 1000)}")

    def _lease_call(self, body: Callable[[Session, int], T]) -> T:
        """In the lease file (``sqlite_leases``): its write lock is only ever taken by lease
        calls, one statement at a time, never by a writer of this file."""
        self.check_writable()
        self._connection()  # closed, or in a Spark task without leave: refused as any call
        return self._leases.call(body)

    def _lease_read(self, body: Callable[[Session, int], list[R]]) -> list[R]:
        self._connection()
        return self._leases.read(body)

    def _last_lease_id(self) -> int:
        """The last lease id this file handed out (before leases moved to the lease file)."""
        row: Any = self._read(lambda conn: conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'leases'").fetchone())
        return 0 if row is None else int(row[0])

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
            raise sqlite_failure(exc, self._path, f"metastore {self._path} failed") from exc

    def committed_log(self, table: str, *, min_write_id: int = 0,
                      after_seq: int | None = None) -> ComponentLog:
        """See ``CommitLog``: every commit takes the database write lock, and one read is one
        WAL snapshot, so the commit sequence a read sees has no gaps below its last value."""
        def body(conn: Session) -> ComponentLog:
            table_id = int(self._table_row(conn, table)["table_id"])
            return committed_log(conn, table_id, min_write_id=min_write_id,
                                 after_seq=after_seq)

        return self._read(body)


def _unwritable(path: str) -> bool:
    """Whether an existing metastore must be opened read-only: this process cannot write the
    file or its directory (where SQLite keeps its ``-wal`` and ``-shm`` files), or nobody may
    (no write permission bit at all; root passes every access check, so for it the bits are
    the only mark of an archived copy)."""
    if not os.path.isfile(path):
        return False  # a new store is created (or its directory's error reported) as usual

    def writable(target: str) -> bool:
        return os.access(target, os.W_OK) and bool(os.stat(target).st_mode & 0o222)

    return not writable(path) or not writable(os.path.dirname(os.path.abspath(path)))


def _read_only_uri(path: str) -> str:
    """``mode=ro``, and ``immutable=1`` unless a ``-wal`` file holds commits not yet in the
    main file: without it SQLite would create ``-shm`` and ``-wal`` files beside a read-only
    file (failing where it cannot, writing where root can), but an immutable open ignores
    the ``-wal``, which would hide those commits."""
    wal = path + "-wal"
    pending = os.path.isfile(wal) and os.path.getsize(wal) > 0
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    return uri if pending else uri + "&immutable=1"
