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

The transactional rules themselves live in ``sqlite_txn`` and the DDL in ``sqlite_schema``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Self, TypeVar

from acidstore.errors import (
    InvalidInputError,
    MetastoreError,
    TableExistsError,
    TableNotFoundError,
    TransactionStateError,
)
from acidstore.metastore import sqlite_leases as leases
from acidstore.metastore import sqlite_queue as queue
from acidstore.metastore import sqlite_txn as txns
from acidstore.metastore.protocol import (
    CommitCheck,
    CommitInfo,
    HistoryEntry,
    LeaseInfo,
    LockInfo,
    NewTable,
    TableInfo,
    TxnInfo,
    TxnKind,
    WriteComponent,
)
from acidstore.metastore.queue import (
    CompactionCommit,
    CompactionInfo,
    CompactionKind,
    CompactionState,
)
from acidstore.metastore.sqlite_schema import (
    decode_schema,
    encode_schema,
    ensure_schema,
    from_micros,
    now_micros,
)
from acidstore.metastore.validate import (
    check_kind,
    check_new_table,
    check_partition,
    check_ttl,
    split_table_name,
)
from acidstore.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["SqliteMetastore"]

T = TypeVar("T")
_JOURNAL_RETRIES = 50


class _Connection(sqlite3.Connection):
    """A plain connection that can be weakly referenced (``sqlite3.Connection`` cannot)."""


def _positive_seconds(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidInputError(f"{what} must be positive and finite, got {value!r}")
    return float(value)


class SqliteMetastore:
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
        self._timeout_micros = round(_positive_seconds(timeout_seconds, "timeout_seconds") * 1e6)
        self._busy = _positive_seconds(busy_timeout_seconds, "busy_timeout_seconds")
        self._local = threading.local()
        self._guard = threading.Lock()
        # Weak, so a connection dies with its thread (threads come and go in pools) while
        # close() can still reach every live one.
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._closed = False
        try:
            ensure_schema(self._connection())
        except sqlite3.Error as exc:
            raise MetastoreError(f"cannot open the metastore {self._path}: {exc}") from exc

    def __repr__(self) -> str:
        return f"SqliteMetastore({self._path!r})"

    # --- connections and transactions ---------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (a forked child opens its own instead of sharing one)."""
        if self._closed:
            raise MetastoreError(f"metastore {self._path} is closed")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        conn = sqlite3.connect(self._path, timeout=self._busy, isolation_level=None,
                               check_same_thread=False, factory=_Connection)
        conn.row_factory = sqlite3.Row
        self._set_wal(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        with self._guard:
            self._connections.add(conn)
        self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _set_wal(self, conn: sqlite3.Connection) -> None:
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

    def _write(self, body: Callable[[sqlite3.Connection, int], T]) -> T:
        """Run ``body(conn, now)`` in one ``BEGIN IMMEDIATE`` transaction after reaping timed-out
        txns. Errors roll back, except ``RaiseAfterCommit``, whose abort is committed first."""
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

    def _read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in one read transaction (a consistent WAL snapshot). Inside a running
        write (a commit check reading the catalog) it simply joins that transaction."""
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

    def _snapshot_call(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Snapshot builders reap timed-out txns first (§14), but take the write lock only when
        there is one to reap, so readers do not queue behind writers for nothing."""
        def unless_stale(conn: sqlite3.Connection) -> tuple[T] | None:
            if txns.has_timed_out(conn, now_micros(), self._timeout_micros):
                return None
            return (body(conn),)

        result = self._read(unless_stale)
        if result is not None:
            return result[0]
        return self._write(lambda conn, _now: body(conn))

    def close(self) -> None:
        with self._guard:
            self._closed = True
            connections = list(self._connections)
            self._connections.clear()
        for conn in connections:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- catalog ------------------------------------------------------------------------------

    @staticmethod
    def _table_row(conn: sqlite3.Connection, name: str) -> sqlite3.Row:
        database, table = split_table_name(name)
        row: sqlite3.Row | None = conn.execute(
            "SELECT * FROM tables WHERE db_name = ? AND name = ?", (database, table)).fetchone()
        if row is None:
            raise TableNotFoundError(f"table {database}.{table} does not exist")
        return row

    @staticmethod
    def _table_info(row: sqlite3.Row) -> TableInfo:
        return TableInfo(
            row["db_name"], row["name"], decode_schema(row["schema"]),
            decode_schema(row["partition_schema"]), tuple(json.loads(row["bucket_by"])),
            row["buckets"], json.loads(row["properties"]), row["location"], row["table_id"],
            from_micros(row["created"]))

    def create_table(self, info_without_id: NewTable) -> TableInfo:
        info = info_without_id
        check_new_table(info)

        def body(conn: sqlite3.Connection, now: int) -> TableInfo:
            if conn.execute("SELECT 1 FROM tables WHERE db_name = ? AND name = ?",
                            (info.database, info.name)).fetchone() is not None:
                raise TableExistsError(f"table {info.full_name} already exists")
            conn.execute("INSERT OR IGNORE INTO databases (name, created) VALUES (?, ?)",
                         (info.database, now))
            cursor = conn.execute(
                "INSERT INTO tables (db_name, name, schema, partition_schema, bucket_by, "
                "buckets, properties, location, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (info.database, info.name, encode_schema(info.schema),
                 encode_schema(info.partition_schema), json.dumps(list(info.bucket_by)),
                 info.buckets, json.dumps(info.properties, sort_keys=True), info.location, now))
            row = conn.execute("SELECT * FROM tables WHERE table_id = ?",
                               (cursor.lastrowid,)).fetchone()
            return self._table_info(row)

        return self._write(body)

    def get_table(self, name: str) -> TableInfo:
        return self._read(lambda conn: self._table_info(self._table_row(conn, name)))

    def list_tables(self, database: str | None = None) -> list[str]:
        def body(conn: sqlite3.Connection) -> list[str]:
            if database is None:
                rows = conn.execute("SELECT db_name, name FROM tables")
            else:
                rows = conn.execute("SELECT db_name, name FROM tables WHERE db_name = ?",
                                    (database.lower(),))
            return sorted(f"{db}.{table}" for db, table in rows)

        return self._read(body)

    def drop_table(self, name: str) -> TableInfo:
        def body(conn: sqlite3.Connection, _now: int) -> TableInfo:
            row = self._table_row(conn, name)
            for statement in ("DELETE FROM partitions WHERE table_id = ?",
                              "DELETE FROM leases WHERE table_id = ?",
                              "DELETE FROM tables WHERE table_id = ?"):
                conn.execute(statement, (row["table_id"],))
            return self._table_info(row)

        return self._write(body)

    def add_partitions(self, table: str, partitions: Iterable[str]) -> None:
        wanted = list(partitions)

        def body(conn: sqlite3.Connection, _now: int) -> None:
            row = self._table_row(conn, table)
            info = self._table_info(row)
            columns = [c.lower() for c in info.partition_schema.names]
            for partition in wanted:
                check_partition(partition, columns, info.full_name)
            conn.executemany("INSERT OR IGNORE INTO partitions (table_id, part) VALUES (?, ?)",
                             [(row["table_id"], p) for p in wanted])

        self._write(body)

    def list_partitions(self, table: str) -> list[str]:
        def body(conn: sqlite3.Connection) -> list[str]:
            table_id = self._table_row(conn, table)["table_id"]
            return [r[0] for r in conn.execute(
                "SELECT part FROM partitions WHERE table_id = ? ORDER BY part", (table_id,))]

        return self._read(body)

    # --- transactions -------------------------------------------------------------------------

    @staticmethod
    def _txn_info(row: sqlite3.Row) -> TxnInfo:
        finished = row["finished"]
        return TxnInfo(
            row["txn_id"], row["state"], row["kind"], row["user_name"], row["host"],
            from_micros(row["started"]), from_micros(row["last_heartbeat"]),
            None if finished is None else from_micros(finished),
            ValidTxnList.parse(row["snapshot"]))

    def open_transaction(self, *, user: str, host: str, kind: TxnKind = "default") -> TxnInfo:
        check_kind(kind)
        if not isinstance(user, str) or not isinstance(host, str):
            raise InvalidInputError("user and host must be strings")

        def body(conn: sqlite3.Connection, now: int) -> TxnInfo:
            txn_id = txns.next_sequence(conn, "txn")
            snapshot = txns.take_snapshot(conn)
            # Commits numbered up to here are in the snapshot; a later number is a commit this
            # txn cannot see, i.e. one it overlaps with (the conflict check of §12.2).
            seen_commits = txns.peek_sequence(conn, "commit") - 1
            conn.execute(
                "INSERT INTO txns (txn_id, state, kind, user_name, host, started, "
                "last_heartbeat, snapshot, snapshot_commit_seq) "
                "VALUES (?, 'open', ?, ?, ?, ?, ?, ?, ?)",
                (txn_id, kind, user, host, now, now, str(snapshot), seen_commits))
            return self._txn_info(conn.execute("SELECT * FROM txns WHERE txn_id = ?",
                                               (txn_id,)).fetchone())

        return self._write(body)

    def heartbeat(self, txn_id: int) -> None:
        def body(conn: sqlite3.Connection, now: int) -> None:
            txns.require_open(conn, txn_id)
            conn.execute("UPDATE txns SET last_heartbeat = ? WHERE txn_id = ?", (now, txn_id))

        self._write(body)

    def allocate_write_id(self, txn_id: int, table: str) -> int:
        def body(conn: sqlite3.Connection, _now: int) -> int:
            txns.require_open(conn, txn_id)
            row = self._table_row(conn, table)
            full_name = f"{row['db_name']}.{row['name']}"
            return txns.allocate_write_id(conn, txn_id, row["table_id"], full_name)

        return self._write(body)

    def valid_txns(self, txn_id: int | None = None) -> ValidTxnList:
        if txn_id is None:
            return self._snapshot_call(txns.take_snapshot)

        def recorded(conn: sqlite3.Connection) -> ValidTxnList:
            row = conn.execute("SELECT snapshot FROM txns WHERE txn_id = ?",
                               (txn_id,)).fetchone()
            if row is None:
                raise TransactionStateError(f"txnid:{txn_id} does not exist")
            return ValidTxnList.parse(row[0])

        return self._read(recorded)

    def valid_write_ids(self, table: str, snapshot: ValidTxnList,
                        txn_id: int | None = None) -> ValidWriteIdList:
        if not isinstance(snapshot, ValidTxnList):
            raise InvalidInputError(f"snapshot must be a ValidTxnList, got {snapshot!r}")

        def body(conn: sqlite3.Connection) -> ValidWriteIdList:
            row = self._table_row(conn, table)
            return txns.build_write_id_list(conn, row["table_id"],
                                            f"{row['db_name']}.{row['name']}", snapshot, txn_id)

        return self._snapshot_call(body)

    def record_write(self, txn_id: int, component: WriteComponent) -> None:
        def body(conn: sqlite3.Connection, now: int) -> None:
            txns.require_open(conn, txn_id)
            txns.record_write(conn, txn_id, component, now)

        self._write(body)

    def commit(self, txn_id: int, components: Sequence[WriteComponent], *,
               check: CommitCheck | None = None) -> CommitInfo:
        offered = list(components)
        return self._write(lambda conn, now: txns.commit_txn(conn, txn_id, offered, check, now))

    def abort(self, txn_id: int, reason: str = "") -> None:
        def body(conn: sqlite3.Connection, now: int) -> None:
            row = conn.execute("SELECT state FROM txns WHERE txn_id = ?", (txn_id,)).fetchone()
            if row is None:
                raise TransactionStateError(f"txnid:{txn_id} does not exist")
            if row["state"] == "committed":
                raise TransactionStateError(f"txnid:{txn_id} is committed; it cannot abort")
            if row["state"] == "open":
                txns.abort_txn(conn, txn_id, now, reason or "aborted by the client")

        self._write(body)

    def commit_info(self, txn_id: int) -> CommitInfo | None:
        def body(conn: sqlite3.Connection) -> CommitInfo | None:
            row = conn.execute("SELECT commit_seq, finished FROM txns WHERE txn_id = ? AND "
                               "state = 'committed'", (txn_id,)).fetchone()
            if row is None:
                return None
            write_ids = {r["table_name"]: int(r["write_id"]) for r in conn.execute(
                "SELECT table_name, write_id FROM txn_write_ids WHERE txn_id = ?", (txn_id,))}
            return CommitInfo(txn_id, int(row["commit_seq"]), from_micros(row["finished"]),
                              write_ids)

        return self._read(body)

    def aborted_components(self, table: str) -> list[WriteComponent]:
        return self._components(table, "aborted")

    def committed_components(self, table: str) -> list[WriteComponent]:
        return self._components(table, "committed")

    def _components(self, table: str, state: str) -> list[WriteComponent]:
        def body(conn: sqlite3.Connection) -> list[WriteComponent]:
            table_id = self._table_row(conn, table)["table_id"]
            return [txns.component_of(row) for row in conn.execute(
                "SELECT c.* FROM components c JOIN txns t ON t.txn_id = c.txn_id "
                "WHERE c.table_id = ? AND t.state = ? ORDER BY c.txn_id, "
                "c.component_id", (table_id, state))]

        return self._read(body)

    # --- introspection ------------------------------------------------------------------------

    def history(self, table: str) -> list[HistoryEntry]:
        def body(conn: sqlite3.Connection) -> list[HistoryEntry]:
            table_id = self._table_row(conn, table)["table_id"]
            return [HistoryEntry(
                r["write_id"], r["txn_id"], from_micros(r["commit_time"]), r["operation"],
                r["rows_inserted"], r["rows_deleted"], r["files"], r["bytes"],
                tuple(json.loads(r["partitions"])))
                for r in conn.execute("SELECT * FROM history WHERE table_id = ? "
                                      "ORDER BY write_id", (table_id,))]

        return self._read(body)

    def show_transactions(self) -> list[TxnInfo]:
        return self._read(lambda conn: [self._txn_info(row) for row in conn.execute(
            "SELECT * FROM txns ORDER BY txn_id")])

    def show_locks(self) -> list[LockInfo]:
        return self._read(lambda conn: [LockInfo(
            r["lock_id"], r["txn_id"], r["db_name"], r["table_name"], r["part"] or None,
            r["lock_type"], "acquired", from_micros(r["acquired"]))
            for r in conn.execute("SELECT * FROM locks ORDER BY lock_id")])

    def write_id_commit_times(self, table: str) -> dict[int, datetime]:
        def body(conn: sqlite3.Connection) -> dict[int, datetime]:
            table_id = self._table_row(conn, table)["table_id"]
            return {r[0]: from_micros(r[1]) for r in conn.execute(
                "SELECT write_id, commit_time FROM history WHERE table_id = ? ORDER BY write_id",
                (table_id,))}

        return self._read(body)

    # --- snapshot leases ----------------------------------------------------------------------

    def acquire_lease(self, table: str, snapshot: ValidTxnList, write_ids: ValidWriteIdList,
                      ttl_seconds: float) -> int:
        ttl = round(check_ttl(ttl_seconds) * 1e6)
        if not isinstance(snapshot, ValidTxnList) or not isinstance(write_ids, ValidWriteIdList):
            raise InvalidInputError("a lease needs a ValidTxnList and a ValidWriteIdList")
        return self._write(lambda conn, now: leases.acquire(
            conn, self._table_row(conn, table)["table_id"], snapshot, write_ids, now=now,
            ttl=ttl))

    def renew_lease(self, lease_id: int, ttl_seconds: float) -> None:
        ttl = round(check_ttl(ttl_seconds) * 1e6)
        self._write(lambda conn, now: leases.renew(conn, lease_id, now, ttl))

    def release_lease(self, lease_id: int) -> None:
        self._write(lambda conn, _now: leases.release(conn, lease_id))

    def active_leases(self, table: str) -> list[LeaseInfo]:
        def body(conn: sqlite3.Connection) -> list[LeaseInfo]:
            row = self._table_row(conn, table)
            return leases.active(conn, row["table_id"], f"{row['db_name']}.{row['name']}",
                                 now_micros())

        return self._read(body)

    # --- cleaner support and the compaction queue ------------------------------------------------

    def live_snapshots(self, table: str) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
        def body(conn: sqlite3.Connection) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
            row = self._table_row(conn, table)
            return queue.live_snapshots(conn, row["table_id"],
                                        f"{row['db_name']}.{row['name']}", now_micros())

        return self._snapshot_call(body)

    def forget_aborted(self, table: str, write_ids: Iterable[int]) -> int:
        wanted = list(write_ids)
        return self._write(lambda conn, _now: queue.forget_aborted(
            conn, self._table_row(conn, table)["table_id"], wanted))

    def enqueue_compaction(self, table: str, partition: str, kind: CompactionKind,
                           reason: str) -> CompactionInfo | None:
        def body(conn: sqlite3.Connection, now: int) -> CompactionInfo | None:
            row = self._table_row(conn, table)
            return queue.enqueue(conn, table_id=row["table_id"],
                                 table=f"{row['db_name']}.{row['name']}", partition=partition,
                                 kind=kind, reason=reason, now=now)

        return self._write(body)

    def log_compaction(self, table: str, partition: str, kind: CompactionKind,
                       state: CompactionState, reason: str) -> CompactionInfo:
        def body(conn: sqlite3.Connection, now: int) -> CompactionInfo:
            row = self._table_row(conn, table)
            return queue.log_outcome(conn, table_id=row["table_id"],
                                     table=f"{row['db_name']}.{row['name']}",
                                     partition=partition, kind=kind, state=state,
                                     reason=reason, now=now)

        return self._write(body)

    def record_compaction(self, table: str, partition: str, kind: CompactionKind,
                          reason: str, *, txn_id: int,
                          compactor_write_ids: ValidWriteIdList,
                          worker: str) -> CompactionInfo:
        def body(conn: sqlite3.Connection, now: int) -> CompactionInfo:
            row = self._table_row(conn, table)
            return queue.record_compacted(
                conn, table_id=row["table_id"], table=f"{row['db_name']}.{row['name']}",
                partition=partition, kind=kind, reason=reason, txn_id=txn_id,
                compactor_write_ids=compactor_write_ids, worker=worker, now=now)

        return self._write(body)

    def claim_compaction(self, worker: str, stale_seconds: float) -> CompactionInfo | None:
        stale = round(_positive_seconds(stale_seconds, "stale_seconds") * 1e6)
        return self._write(lambda conn, now: queue.claim(conn, worker, now, stale))

    def heartbeat_compaction(self, compaction_id: int, worker: str, *,
                             txn_id: int | None = None,
                             compactor_write_ids: ValidWriteIdList | None = None) -> None:
        self._write(lambda conn, now: queue.heartbeat(
            conn, compaction_id, worker, now, txn_id=txn_id,
            compactor_write_ids=compactor_write_ids))

    def compaction_compacted(self, compaction_id: int, worker: str) -> None:
        self._write(lambda conn, now: queue.compacted(conn, compaction_id, worker, now))

    def finish_compaction(self, compaction_id: int, state: CompactionState,
                          error: str | None = None) -> None:
        self._write(lambda conn, now: queue.finish(conn, compaction_id, state, error, now))

    def compactions_ready_for_cleaning(self) -> list[CompactionInfo]:
        return self._read(queue.ready_for_cleaning)

    def show_compactions(self) -> list[CompactionInfo]:
        return self._read(lambda conn: [queue.info_of(r) for r in conn.execute(
            "SELECT * FROM compactions ORDER BY compaction_id")])

    def begin_cleaning(self, table: str, partition: str, txns: ValidTxnList) -> list[int]:
        return self._write(lambda conn, now: queue.begin_cleaning(
            conn, self._table_row(conn, table)["table_id"], partition, txns, now))

    def compactions_committed_after(self, table: str, point: int | datetime
                                    ) -> list[CompactionCommit]:
        return self._read(lambda conn: queue.committed_after(
            conn, self._table_row(conn, table)["table_id"], point))

    def overwrites_committed_after(self, table: str, moment: datetime) -> list[int]:
        return self._read(lambda conn: queue.overwrites_after(
            conn, self._table_row(conn, table)["table_id"], moment))
