"""``PostgresMetastore``: the ``Metastore`` protocol on a PostgreSQL server (psycopg 3).

For warehouses shared by several machines. The calls and their SQL are the SQLite backend's
(``sql_store`` / ``sql_base`` over ``sql_txn``, ``sql_queue``, ``sql_leases``); what differs is
how a metastore transaction runs, because here many clients write at once:
- a write first takes the named locks of its call (``sql_base``: ``txn``, ``commit``, ``queue``,
  ``catalog``; ``LOCK TABLE`` on an empty table per lock, in one fixed order), then runs at
  READ COMMITTED, so each statement sees everything committed before it, including by the
  previous holder of the lock; a call that changes one txn locks that txn's row first;
- a ``consistent`` write (a snapshot built after reaping timed-out txns) runs at REPEATABLE
  READ, its snapshot taken *after* the lock (``LOCK TABLE`` takes none);
- the hot calls (open, heartbeat, write-id allocation, component record, a plain insert's
  commit) are one statement each, a server function of ``postgres_functions``, with no
  global lock; where that function declines (anything unusual), the general path runs;
- reads run at REPEATABLE READ READ ONLY: every statement of a call sees one snapshot;
- serialization failures and deadlocks roll back and retry the whole call (bodies are pure
  functions of the database, so a retry is a fresh attempt, not a replay);
- times come from the server's clock, so clients on machines whose clocks differ still agree
  on heartbeat ages and lease expiry: a commit's time is read inside the commit
  (``sql_txn.commit_time``, ``acid_commit_v15``), other times are a reading of the server's
  clock advanced by this process's monotonic clock (``_Session.server_time``), so a step of
  the client's wall clock changes none of them;
- reads never wait for a writer: a reader's lease calls are single statements on ``leases``
  (no foreign key, no named lock, no reaping; expired leases another call holds are skipped),
  and a snapshot reaps timed-out txns only if no lock stands in its way.

Txn ids and commit numbers come from server sequences, per-table write ids from counter rows
bumped with an upsert: nothing relies on one client process. One connection per thread (and
per process after a fork), like the SQLite backend.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar

from acidstore.config import BUSY_TIMEOUT_SECONDS, CONNECT_TIMEOUT_SECONDS, TXN_TIMEOUT_SECONDS
from acidstore.errors import InvalidInputError, MetastoreError
from acidstore.format.writeids import ValidTxnList
from acidstore.metastore import postgres_functions as functions
from acidstore.metastore import sql_txn as txns
from acidstore.metastore.postgres_calls import CatalogEntry, commit_arguments, open_plans
from acidstore.metastore.postgres_connect import (
    Connection,
    connect,
    display_url,
    in_transaction,
    is_retryable,
    psycopg_error,
)
from acidstore.metastore.queue import CompactionInfo
from acidstore.metastore.records import (
    CommitCheck,
    CommitInfo,
    CompactionOutput,
    PlannedWrite,
    StatementSummary,
    TxnInfo,
    TxnKind,
    WriteComponent,
)
from acidstore.metastore.sql import POSTGRES, Cursor, Dialect, Session
from acidstore.metastore.sql_base import LOCK_ORDER, Lock, WriteLockBusy
from acidstore.metastore.sql_schema import (
    SCHEMA_VERSION,
    decode_schema,
    ensure_schema,
    from_micros,
    now_micros,
    stored_schema_version,
)
from acidstore.metastore.sql_store import SqlMetastore, _checked_open
from acidstore.metastore.task_guard import refuse_in_spark_task
from acidstore.metastore.validate import check_seconds, split_table_name

__all__ = ["PostgresMetastore"]

T = TypeVar("T")
R = TypeVar("R")
#: attempts of one call before a serialization failure or deadlock is reported
_ATTEMPTS = 30
#: any constant: the key of the advisory lock that serializes schema creation and migration
_SCHEMA_LOCK_KEY = 0x61636964  # "acid"
_NOW = f"SELECT {POSTGRES.server_clock}"
#: how long one reading of the server's clock serves (``_Session.server_time``): the
#: monotonic clock drifts from the server's by a few parts per million at most
_READING_SECONDS = 60
#: unique_violation: a late open whose id was filled as a dead gap (postgres_functions)
_TAKEN = "23505"
#: raised by acid_open_v9 when a cached catalog entry no longer names its table
_STALE_CATALOG = "AS001"
#: lock_not_available: a ``_write(wait=False)`` met a lock another client holds
_LOCKED = "55P03"


def _pause(attempt: int) -> None:
    """Another client changed the same rows first: start over after a pause that grows and is
    jittered, so the same clients do not collide again."""
    time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 6)))


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled). The shared SQL has no
    ``?`` or ``%`` inside string literals, so the replacement is exact."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Session:
    """A psycopg connection as the shared SQL code's ``Session``."""

    dialect: Dialect = POSTGRES

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        #: (the server's clock in microseconds, this process's monotonic clock in
        #: nanoseconds) at one moment: ``server_time`` then costs no round trip
        self._reading: tuple[int, int] | None = None

    def server_time(self) -> int:
        """The server's clock now, in microseconds since the epoch: a reading of it (one round
        trip, taken again once it is ``_READING_SECONDS`` old) advanced by the monotonic
        clock, which no step of this machine's wall clock moves. (An offset from the wall
        clock, measured once, carried every later step into heartbeats, lease expiry and
        the timeout reaper's cutoff: a client whose clock jumped ahead aborted the live
        transactions of every other client.)"""
        mono = time.monotonic_ns()
        if self._reading is None or mono - self._reading[1] > _READING_SECONDS * 1e9:
            server = int(self.execute(_NOW).fetchone()[0])
            after = time.monotonic_ns()
            # the server read its clock somewhere in the round trip: take the middle
            self._reading, mono = (server, (mono + after) // 2), after
        server, at = self._reading
        return server + (mono - at) // 1000

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        return self.conn.execute(_pg_sql(sql), parameters)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> object:
        with self.conn.cursor() as cursor:
            cursor.executemany(_pg_sql(sql), list(rows))
        return None


class PostgresMetastore(SqlMetastore):
    """Catalog, transactions and write ids in a PostgreSQL database (see the module docstring).

    ``url`` is a libpq URL, ``postgresql://user[:password]@host:port/dbname`` (the password may
    also come from ``PGPASSWORD`` or ``~/.pgpass``, as libpq resolves it). The database must
    exist; the metastore's tables are created in it on first use, or migrated from an older
    acidstore's, or refused (``MetastoreVersionError``) if a newer acidstore wrote them.
    ``timeout_seconds`` is Hive's ``hive.txn.timeout`` (§14) of the transactions this object
    opens, stored with each (any client reaps one by its own); ``busy_timeout_seconds`` bounds
    how long a call waits for a lock another client holds.
    """

    def __init__(self, url: str, *, timeout_seconds: float = TXN_TIMEOUT_SECONDS,
                 busy_timeout_seconds: float = BUSY_TIMEOUT_SECONDS,
                 connect_timeout_seconds: float = CONNECT_TIMEOUT_SECONDS) -> None:
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise InvalidInputError(
                f"a PostgreSQL metastore URL looks like postgresql://user@host:5432/dbname, "
                f"got {url!r}")
        self._url = url
        self._where = display_url(url)
        self._timeout_micros = round(check_seconds(timeout_seconds, "timeout_seconds") * 1e6)
        self._busy = check_seconds(busy_timeout_seconds, "busy_timeout_seconds")
        self._connect_timeout = check_seconds(connect_timeout_seconds,
                                                 "connect_timeout_seconds")
        self._start_connections()
        self._catalog: dict[str, CatalogEntry] = {}
        self._ensure_schema(self._session())

    def __repr__(self) -> str:
        return f"PostgresMetastore({self._where!r})"

    @property
    def url(self) -> str:
        """The URL without its password."""
        return self._where

    # --- connections --------------------------------------------------------------------------

    def _session(self) -> _Session:
        """This thread's connection, opened on first use (a forked child opens its own, and a
        broken one is replaced by the next call)."""
        if self._closed:
            raise MetastoreError(f"metastore {self._where} is closed")
        session: _Session | None = getattr(self._local, "session", None)
        if session is not None and self._local.pid == os.getpid() and not session.conn.closed:
            return session
        refuse_in_spark_task(self._where)
        conn = connect(self._url, self._where, connect_timeout=self._connect_timeout,
                       lock_timeout=self._busy)
        self._track(conn)
        session = _Session(conn)
        self._local.session, self._local.pid = session, os.getpid()
        return session

    def _ensure_schema(self, session: _Session) -> None:
        """A current schema is only read (connecting takes no lock a writer holds); otherwise
        create, migrate or refuse it under an advisory lock, so clients opening a new database
        together create it once; DDL is transactional, so a refusal or a crash leaves the
        database as it was."""
        def current() -> bool:
            return stored_schema_version(session, self._where) == SCHEMA_VERSION and all(
                session.execute(POSTGRES.table_exists, (f"lock_{lock}",)).fetchone()
                for lock in LOCK_ORDER) and bool(
                session.execute(functions.FUNCTIONS_PRESENT).fetchone())

        if self._transaction(session, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                             current):
            return

        def body() -> None:
            session.execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK_KEY,))
            ensure_schema(session, self._where)
            for lock in LOCK_ORDER:
                session.execute(f"CREATE TABLE IF NOT EXISTS lock_{lock} ()")
            functions.install(session)

        self._transaction(session, "BEGIN", body)

    def _transaction(self, session: _Session, begin: str, body: Callable[[], T]) -> T:
        """Run ``body`` between ``begin`` and COMMIT; any error rolls back and is mapped."""
        try:
            session.execute(begin)
            try:
                result = body()
            except BaseException:
                with contextlib.suppress(Exception):
                    session.execute("ROLLBACK")
                raise
            session.execute("COMMIT")
            return result
        except Exception as exc:
            mapped = psycopg_error(exc, self._where)
            if mapped is exc:
                raise
            raise mapped from exc

    # --- metastore transactions ---------------------------------------------------------------

    def _clock(self, conn: Session) -> int:
        """The server's clock (see the module docstring and ``_Session.server_time``)."""
        return conn.server_time() if isinstance(conn, _Session) else now_micros()

    def _write(self, body: Callable[[Session, int], T], *, locks: tuple[Lock, ...] = (),
               consistent: bool = False, wait: bool = True) -> T:
        """``wait=False``: any lock wait ends at once (``lock_timeout``, the shortest there
        is) and raises ``WriteLockBusy``, the transaction rolled back."""
        session = self._session()
        if in_transaction(session.conn):
            raise MetastoreError("metastore writes cannot nest (e.g. from a commit check)")
        # one round trip: statements without parameters go as one simple query
        begin = "; ".join(["BEGIN ISOLATION LEVEL REPEATABLE READ" if consistent else "BEGIN",
                           *([] if wait else ["SET LOCAL lock_timeout = '1ms'"]),
                           *(f"LOCK TABLE lock_{lock} IN EXCLUSIVE MODE"
                             for lock in LOCK_ORDER if lock in locks)])
        for attempt in range(_ATTEMPTS):
            pending: Exception | None = None
            committing = False
            try:
                session.execute(begin)
                now = self._clock(session)
                txns.reap_timed_out(session, now)
                try:
                    outcome = body(session, now)
                except txns.RaiseAfterCommit as signal:
                    pending = signal.error
                committing = True
                session.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    session.execute("ROLLBACK")
                if not wait and getattr(exc, "sqlstate", None) == _LOCKED:
                    raise WriteLockBusy(self._where) from exc
                if is_retryable(exc) and attempt < _ATTEMPTS - 1:
                    _pause(attempt)
                    continue
                self._reraise(exc, ambiguous=committing)
            if pending is not None:
                raise pending
            return outcome
        raise AssertionError("unreachable")  # pragma: no cover

    def _lease_call(self, body: Callable[[Session, int], T]) -> T:
        """Autocommit: each lease statement is its own transaction, and none waits for a
        writer (see ``sql_leases``). Retried like ``_write`` on serialization failures."""
        session = self._session()
        if in_transaction(session.conn):
            raise MetastoreError("metastore writes cannot nest (e.g. from a commit check)")
        for attempt in range(_ATTEMPTS):
            try:
                return body(session, self._clock(session))
            except Exception as exc:
                if is_retryable(exc) and attempt < _ATTEMPTS - 1:
                    _pause(attempt)
                    continue
                self._reraise(exc)
        raise AssertionError("unreachable")  # pragma: no cover

    def _lease_read(self, body: Callable[[Session, int], list[R]]) -> list[R]:
        return self._read(lambda conn: body(conn, self._clock(conn)))

    def _read(self, body: Callable[[Session], T]) -> T:
        session = self._session()
        if in_transaction(session.conn):
            return body(session)
        return self._transaction(session, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                                 lambda: body(session))

    # --- the hot calls: one statement each (postgres_functions) -------------------------------

    def _call(self, sql: str, parameters: Sequence[Any], *,
              also_retry: frozenset[str] = frozenset(),
              unmapped: frozenset[str] = frozenset(), commits: bool = False) -> Any:
        """One statement in its own transaction (autocommit): one round trip. Retried like a
        ``_write`` on serialization failures and deadlocks, and on ``also_retry`` SQLSTATEs;
        an ``unmapped`` SQLSTATE reaches the caller as the driver raised it. Returns the
        statement's first row (None if it has none). ``commits``: the statement commits a
        transaction, so a connection lost during it leaves the outcome unknown."""
        session = self._session()
        if in_transaction(session.conn):
            raise MetastoreError("metastore writes cannot nest (e.g. from a commit check)")
        for attempt in range(_ATTEMPTS):
            try:
                return session.execute(sql, parameters).fetchone()
            except Exception as exc:
                sqlstate = getattr(exc, "sqlstate", None)
                if sqlstate in unmapped:
                    raise
                if (is_retryable(exc) or sqlstate in also_retry) and attempt < _ATTEMPTS - 1:
                    _pause(attempt)
                    continue
                self._reraise(exc, ambiguous=commits)
        raise AssertionError("unreachable")  # pragma: no cover

    def _reraise(self, exc: BaseException, *, ambiguous: bool = False) -> NoReturn:
        """Raise a driver error as the ``MetastoreError`` it means; any other as it is."""
        mapped = psycopg_error(exc, self._where, ambiguous=ambiguous)
        if mapped is exc:
            raise exc
        raise mapped from exc

    def _entry(self, name: str) -> CatalogEntry:
        """The table's catalog entry, from the cache or read (``TableNotFoundError``)."""
        key = ".".join(split_table_name(name))
        entry = self._catalog.get(key)
        if entry is None:
            row = self._read(lambda conn: self._table_row(conn, key))
            entry = CatalogEntry(int(row["table_id"]), row["db_name"], row["name"], tuple(
                c.lower() for c in decode_schema(row["partition_schema"]).names))
            self._catalog[key] = entry
        return entry

    def open_transaction(self, *, user: str, host: str, kind: TxnKind = "default",
                         writes: Sequence[PlannedWrite] = ()) -> TxnInfo:
        """One call of ``acid_open_v9``: the id, the snapshot, the row and the planned writes
        in one statement, with no global lock (see ``postgres_functions`` for why the
        snapshot stays correct)."""
        planned = _checked_open(kind, user, host, writes)
        for attempt in range(2):
            # a cached entry may be of a table since dropped or replaced: whatever it fails
            # (the partition check here, the server's id check), it fails once more read anew
            try:
                plans = open_plans([(plan, self._entry(plan.table)) for plan in planned])
                now = self._clock(self._session())
                row = self._call(
                    "SELECT txn_id, snapshot, write_ids FROM acid_open_v9(?, ?, ?, ?, ?, ?, "
                    "?::jsonb)", (kind, user, host, now, self._timeout_micros,
                                  functions.GAP_TIMEOUT_MICROS, plans),
                    also_retry=frozenset({_TAKEN}), unmapped=frozenset({_STALE_CATALOG}))
            except Exception as exc:
                stale = isinstance(exc, InvalidInputError) or getattr(
                    exc, "sqlstate", None) == _STALE_CATALOG
                if attempt or not stale:
                    self._reraise(exc)
                self._catalog.clear()
                continue
            started = from_micros(now)
            return TxnInfo(int(row[0]), "open", kind, user, host, started, started, None,
                           ValidTxnList.parse(row[1]),
                           write_ids={k: int(v) for k, v in row[2].items()})
        raise AssertionError("unreachable")  # pragma: no cover

    def heartbeat(self, txn_id: int) -> None:
        """One statement when the txn is open and alive; otherwise the general path, which
        reaps a timed-out txn and says what is wrong."""
        if not isinstance(txn_id, bool) and isinstance(txn_id, int):
            now = self._clock(self._session())
            row = self._call("SELECT acid_heartbeat_v9(?, ?)", (txn_id, now))
            if row[0]:
                return
        super().heartbeat(txn_id)

    def opens_in_flight(self) -> list[int]:
        """As the shared path, after filling dead opens' ids (``_fill_dead_gaps``)."""
        self._fill_dead_gaps()
        return super().opens_in_flight()

    def compactions_ready_for_cleaning(self) -> list[CompactionInfo]:
        """As the shared path, after filling dead opens' ids (``_fill_dead_gaps``)."""
        self._fill_dead_gaps()
        return super().compactions_ready_for_cleaning()

    def _fill_dead_gaps(self) -> None:
        """Fill with aborted rows the ids whose open died (no row, a later txn started over
        ``GAP_TIMEOUT_MICROS`` ago) and raise the floor, as an open does once it is far
        enough above the floor. The cleaner counts a gap as an open in flight, so without
        this one dead client kept a quiet store's obsolete directories until enough new
        opens came along; a gap younger than the timeout (a live open) is left alone."""
        now = self._clock(self._session())
        self._call("SELECT acid_raise_floor_v9(?, (SELECT last_value FROM acid_txn_ids))",
                   (now - functions.GAP_TIMEOUT_MICROS,))

    def allocate_write_id(self, txn_id: int, table: str) -> int:
        """One ``acid_allocate_v9`` statement; the general path when the txn is not open or
        timed out, or the cached catalog entry is stale (it reads the table and says why)."""
        entry = None
        if not isinstance(txn_id, bool) and isinstance(txn_id, int):
            with contextlib.suppress(Exception):  # an unknown table: the general path says so
                entry = self._entry(table)
        if entry is not None:
            now = self._clock(self._session())
            try:
                row = self._call("SELECT acid_allocate_v9(?, ?, ?, ?, ?)",
                                 (txn_id, now, entry.table_id, entry.db_name, entry.name),
                                 unmapped=frozenset({_STALE_CATALOG}))
            except Exception as exc:
                if getattr(exc, "sqlstate", None) != _STALE_CATALOG:
                    raise
                self._catalog.clear()
            else:
                if row[0] is not None:
                    return int(row[0])
        return super().allocate_write_id(txn_id, table)

    def record_write(self, txn_id: int, component: WriteComponent) -> None:
        """One ``acid_record_v9`` statement for a component these checks vouch for; the
        general path otherwise (and when the server declines), which says what is wrong."""
        arguments = None
        if not isinstance(txn_id, bool) and isinstance(txn_id, int) and isinstance(
                component, WriteComponent):
            with contextlib.suppress(Exception):  # an unknown table: the general path says so
                self._entry(component.table)
            arguments = commit_arguments([component], self._catalog, inserts_only=False)
        if arguments is not None:
            now = self._clock(self._session())
            row = self._call("SELECT acid_record_v9(?, ?, ?::jsonb -> 0)",
                             (txn_id, now, arguments[0]))
            if row[0]:
                return
        super().record_write(txn_id, component)

    def commit(self, txn_id: int, components: Sequence[WriteComponent], *,
               check: CommitCheck | None = None,
               outputs: Sequence[CompactionOutput] = (),
               statements: Sequence[StatementSummary] = ()) -> CommitInfo:
        """A plain insert's commit is one ``acid_commit_v15`` statement; anything else, and
        anything that function declines, takes the general path (``sql_commit.commit_txn``).
        ``check`` only ever sees overlapping writes, which plain inserts never have."""
        offered, ran = list(components), list(statements)
        arguments = None
        if not outputs and not isinstance(txn_id, bool) and isinstance(txn_id, int):
            with contextlib.suppress(Exception):  # an unknown table: the general path says so
                for component in offered:
                    if isinstance(component, WriteComponent):
                        self._entry(component.table)
            arguments = commit_arguments(offered, self._catalog, statements=ran)
        if arguments is not None:
            row = self._call("SELECT commit_seq, write_ids, commit_time FROM acid_commit_v15("
                             "?, ?::jsonb, ?::jsonb)", (txn_id, *arguments),
                             commits=True)
            if row is not None:
                return CommitInfo(txn_id, int(row[0]), from_micros(int(row[2])),
                                  {k: int(v) for k, v in row[1].items()})
        return super().commit(txn_id, offered, check=check, outputs=outputs, statements=ran)
