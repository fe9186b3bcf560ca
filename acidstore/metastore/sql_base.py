"""``SqlBase``: what the SQL metastores share besides their connections.

``SqliteMetastore`` and ``PostgresMetastore`` differ only in how they connect and run a
metastore transaction (``_write`` / ``_read``); every protocol call is written once, here and in
``sql_store``, over the shared SQL of ``sql_txn``, ``sql_queue`` and ``sql_leases``.

Each write names the *locks* it needs. SQLite ignores them (``BEGIN IMMEDIATE`` already holds
the whole database); PostgreSQL takes them, in ``LOCK_ORDER``, before anything else, so calls
that need no global order (heartbeats, write-id allocation on different tables, leases) run
concurrently on several machines while those that define an order are serialized:
- ``txn``: a new txn id and its snapshot (the SQLite-shaped open; PostgreSQL's own open,
  ``postgres_functions``, takes no lock); also whoever reads the txn counter as "the first
  txn after me" (a compaction's ``next_txn_id``);
- ``commit``: taken by ``add_columns``; commits themselves lock only the rows of their
  tables (``sql_txn._lock_tables``: first committer wins per table, §12.2);
- ``queue``: compaction queue changes (one claim per partition);
- ``catalog``: create and drop table, partitions.
A call that changes one txn first locks that txn's row (``Dialect.row_lock``), so a commit,
an abort and a heartbeat of one txn never interleave.

Reads never wait for a writer. A read's own writes stay out of the catalogue's write
transactions: its snapshot lease goes to the backend's lease store (``_lease_call``: SQLite's
lease file, PostgreSQL's ``leases`` table outside any named lock, see ``sql_leases``), and a
snapshot builder reaps timed-out txns only when it gets the write lock at once
(``_snapshot_call``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Self, TypeVar

from acidstore.errors import InvalidInputError, TableNotFoundError
from acidstore.format.orc.schema import live_columns
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import sql_leases as leases
from acidstore.metastore import sql_queue as queue
from acidstore.metastore import sql_txn as txns
from acidstore.metastore.queue import (
    CompactionCommit,
    CompactionInfo,
    CompactionKind,
    CompactionState,
)
from acidstore.metastore.records import LeaseInfo, TableInfo
from acidstore.metastore.sql import Session
from acidstore.metastore.sql_schema import decode_schema, from_micros
from acidstore.metastore.validate import check_seconds, check_ttl, split_table_name

__all__ = ["LOCK_ORDER", "NO_LEASE", "Lock", "SqlBase", "WriteLockBusy"]

T = TypeVar("T")
R = TypeVar("R")
#: the lease id a read-only store hands out: no lease row (ids start at 1), nothing to renew
NO_LEASE = 0
Lock = Literal["catalog", "txn", "commit", "queue"]
#: Locks are always taken in this order, so two calls can never wait for each other's.
LOCK_ORDER: tuple[Lock, ...] = ("catalog", "txn", "commit", "queue")


class WriteLockBusy(Exception):  # noqa: N818  (a signal between a backend and this module)
    """``_write(..., wait=False)`` found what it needs held by another client, and did
    nothing: the caller goes on without the write rather than wait."""


class SqlBase(ABC):
    """The connection-independent half of a SQL metastore (see the module docstring)."""

    _timeout_micros: int
    #: a store opened read-only (an archived SQLite copy): nothing can change it, so reads
    #: neither reap timed-out txns nor lease their snapshots (no cleaner can run there)
    read_only: bool = False

    def check_writable(self) -> None:
        """Raise ``ReadOnlyWarehouseError`` when nothing may change this store (a read-only
        copy). Every write refuses by itself; callers that change *files* on the strength of
        what they read (the cleaner, ``fsck --repair``) ask first, before touching any.
        A store that can be opened read-only (SQLite's) overrides this; others always may
        be written."""
        return

    def _start_connections(self) -> None:
        """One connection per thread (``_local``), tracked weakly, so a connection dies with
        its thread (threads come and go in pools) while ``close`` can still reach every one."""
        self._local = threading.local()
        self._guard = threading.Lock()
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self._closed = False

    def _track(self, conn: Any) -> None:
        with self._guard:
            self._connections.add(conn)

    def close(self) -> None:
        """Release connections; the object is unusable afterwards."""
        with self._guard:
            self._closed = True
            connections = list(self._connections)
            self._connections.clear()
        for conn in connections:
            with contextlib.suppress(Exception):  # closing a broken connection may fail
                conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @abstractmethod
    def _write(self, body: Callable[[Session, int], T], *, locks: tuple[Lock, ...] = (),
               consistent: bool = False, wait: bool = True) -> T:
        """Run ``body(session, now)`` in one metastore write transaction holding ``locks``,
        after reaping timed-out txns. ``consistent``: every statement of ``body`` must see one
        snapshot of the database (not only its own statement's). Errors roll back, except
        ``txns.RaiseAfterCommit``, whose abort is committed before its error is raised.
        ``wait=False``: raise ``WriteLockBusy`` instead of waiting for a lock another client
        holds (the write lock on SQLite, any row or table lock on PostgreSQL)."""

    @abstractmethod
    def _lease_call(self, body: Callable[[Session, int], T]) -> T:
        """Run ``body(session, now)`` on the lease store (``sql_leases``), each statement its
        own short transaction: no reaping, and no lock a writer of the catalogue takes."""

    @abstractmethod
    def _lease_read(self, body: Callable[[Session, int], list[R]]) -> list[R]:
        """``body(session, now)`` over the lease store (nothing when it holds no lease yet)."""

    #: whether the lease store is apart from the catalogue (SQLite's lease file): the
    #: cleaner's live snapshots then add its leases to those the catalogue records
    _leases_apart: bool = False

    @abstractmethod
    def _clock(self, conn: Session) -> int:
        """Now, in microseconds since the epoch, by the clock every client of this store
        shares (heartbeat ages and lease expiry compare times written by different clients)."""

    @property
    @abstractmethod
    def url(self) -> str:
        """The store as a URL without a password (``sqlite:///path``,
        ``postgresql://user@host:port/db``): what messages and a warehouse's marker file
        name it by."""

    def current_time(self) -> datetime:
        """The store's clock now (see ``History.current_time``): ``_clock``, which reads
        the server's on PostgreSQL and this machine's on SQLite."""
        return from_micros(self._read(self._clock))

    @abstractmethod
    def _read(self, body: Callable[[Session], T]) -> T:
        """Run ``body`` in one read-only transaction over a consistent snapshot; inside a
        running write (a commit check reading the catalog) it joins that transaction."""

    def _snapshot_call(self, body: Callable[[Session], T]) -> T:
        """Snapshot builders reap timed-out txns first (§14), but take the write lock only when
        there is one to reap, and only if they get it at once: a read never waits for a writer
        (which may hold the lock as long as it likes). Without the lock the snapshot is read as
        it is: a timed-out txn is still listed open, which hides its writes as its abort will
        (it can never commit: a commit and a heartbeat reap it first), and the next call that
        gets the lock reaps it."""
        def unless_stale(conn: Session) -> tuple[T] | None:
            if txns.has_timed_out(conn, self._clock(conn)):
                return None
            return (body(conn),)

        if self.read_only:
            return self._read(body)  # a timed-out txn stays open there, hence invisible
        result = self._read(unless_stale)
        if result is not None:
            return result[0]
        try:
            return self._write(lambda conn, _now: body(conn), consistent=True, wait=False)
        except WriteLockBusy:
            return self._read(body)


    @staticmethod
    def _table_row(conn: Session, name: str) -> Any:
        database, table = split_table_name(name)
        row: Any = conn.execute(
            "SELECT * FROM tables WHERE db_name = ? AND name = ?", (database, table)).fetchone()
        if row is None:
            raise TableNotFoundError(f"table {database}.{table} does not exist")
        return row

    @staticmethod
    def _table_info(row: Any) -> TableInfo:
        # the stored schema is the files' row struct, dropped columns' placeholders included
        stored = decode_schema(row["schema"])
        schema = live_columns(stored)
        return TableInfo(
            row["db_name"], row["name"], schema,
            decode_schema(row["partition_schema"]), tuple(json.loads(row["bucket_by"])),
            row["buckets"], json.loads(row["properties"]), row["location"], row["table_id"],
            from_micros(row["created"]), row["metadata_version"],
            bool(row["originals_recorded"]), stored if schema is not stored else None)


    # --- snapshot leases ----------------------------------------------------------------------
    # A lease is a reader's write: it goes to the lease store (``_lease_call``), never into a
    # write transaction of the catalogue, so a read does not queue behind a writer there.

    def acquire_lease(self, table: str, snapshot: ValidTxnList, write_ids: ValidWriteIdList,
                      ttl_seconds: float) -> int:
        ttl = round(check_ttl(ttl_seconds) * 1e6)
        if not isinstance(snapshot, ValidTxnList) or not isinstance(write_ids, ValidWriteIdList):
            raise InvalidInputError("a lease needs a ValidTxnList and a ValidWriteIdList")
        # an unknown table is refused (a plain read: it waits for no writer)
        table_id = int(self._read(lambda conn: self._table_row(conn, table))["table_id"])
        if self.read_only:
            return NO_LEASE
        return self._lease_call(lambda conn, now: leases.acquire(
            conn, table_id, snapshot, write_ids, now=now, ttl=ttl))

    def renew_lease(self, lease_id: int, ttl_seconds: float) -> None:
        ttl = round(check_ttl(ttl_seconds) * 1e6)
        if self.read_only and lease_id == NO_LEASE:
            return
        self._lease_call(lambda conn, now: leases.renew(conn, lease_id, now, ttl))

    def release_lease(self, lease_id: int) -> None:
        if self.read_only and lease_id == NO_LEASE:
            return
        self._lease_call(lambda conn, _now: leases.release(conn, lease_id))

    def active_leases(self, table: str) -> list[LeaseInfo]:
        row = self._read(lambda conn: self._table_row(conn, table))
        full_name = f"{row['db_name']}.{row['name']}"
        return self._lease_read(lambda conn, now: leases.active(
            conn, int(row["table_id"]), full_name, now))

    # --- cleaner support and the compaction queue ------------------------------------------------

    def live_snapshots(self, table: str) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
        """The open txns' snapshots and the leases the catalogue holds, then those of a lease
        store apart. The two are not read at one moment, and need not be: a lease recorded
        after this read belongs to a reader that checks, once it holds it, for what committed
        since its snapshot (``time_travel.lease_snapshot``, docs/dev/architecture.md)."""
        def body(conn: Session) -> tuple[int, list[tuple[ValidTxnList, ValidWriteIdList]]]:
            row = self._table_row(conn, table)
            return int(row["table_id"]), queue.live_snapshots(
                conn, row["table_id"], f"{row['db_name']}.{row['name']}", self._clock(conn))

        table_id, snapshots = self._snapshot_call(body)
        if self._leases_apart:
            snapshots += self._lease_read(lambda conn, now: leases.live(conn, table_id, now))
        return snapshots

    def opens_in_flight(self) -> list[int]:
        return self._read(queue.opens_in_flight)

    def forget_aborted(self, table: str, write_ids: Iterable[int]) -> int:
        wanted = list(write_ids)
        return self._write(lambda conn, _now: queue.forget_aborted(
            conn, self._table_row(conn, table)["table_id"], wanted))

    def enqueue_compaction(self, table: str, partition: str, kind: CompactionKind,
                           reason: str) -> CompactionInfo | None:
        def body(conn: Session, now: int) -> CompactionInfo | None:
            row = self._table_row(conn, table)
            return queue.enqueue(conn, table_id=row["table_id"],
                                 table=f"{row['db_name']}.{row['name']}", partition=partition,
                                 kind=kind, reason=reason, now=now)

        return self._write(body, locks=("queue",))

    def log_compaction(self, table: str, partition: str, kind: CompactionKind,
                       state: CompactionState, reason: str) -> CompactionInfo:
        def body(conn: Session, now: int) -> CompactionInfo:
            row = self._table_row(conn, table)
            return queue.log_outcome(conn, table_id=row["table_id"],
                                     table=f"{row['db_name']}.{row['name']}",
                                     partition=partition, kind=kind, state=state,
                                     reason=reason, now=now)

        return self._write(body, locks=("queue",))

    def record_compaction(self, table: str, partition: str, kind: CompactionKind,
                          reason: str, *, txn_id: int,
                          compactor_write_ids: ValidWriteIdList,
                          worker: str) -> CompactionInfo:
        def body(conn: Session, now: int) -> CompactionInfo:
            row = self._table_row(conn, table)
            return queue.record_compacted(
                conn, table_id=row["table_id"], table=f"{row['db_name']}.{row['name']}",
                partition=partition, kind=kind, reason=reason, txn_id=txn_id,
                compactor_write_ids=compactor_write_ids, worker=worker, now=now,
                stale_micros=self._timeout_micros)

        return self._write(body, locks=("txn", "queue"))

    def claim_compaction(self, worker: str, stale_seconds: float) -> CompactionInfo | None:
        stale = round(check_seconds(stale_seconds, "stale_seconds") * 1e6)
        return self._write(lambda conn, now: queue.claim(conn, worker, now, stale),
                           locks=("queue",))

    def heartbeat_compaction(self, compaction_id: int, worker: str, *,
                             txn_id: int | None = None,
                             compactor_write_ids: ValidWriteIdList | None = None) -> None:
        self._write(lambda conn, now: queue.heartbeat(
            conn, compaction_id, worker, now, txn_id=txn_id,
            compactor_write_ids=compactor_write_ids), locks=("queue",))

    def compaction_compacted(self, compaction_id: int, worker: str) -> None:
        self._write(lambda conn, now: queue.compacted(conn, compaction_id, worker, now),
                    locks=("txn", "queue"))

    def finish_compaction(self, compaction_id: int, state: CompactionState,
                          error: str | None = None) -> None:
        self._write(lambda conn, now: queue.finish(conn, compaction_id, state, error, now),
                    locks=("queue",))

    def compactions_ready_for_cleaning(self) -> list[CompactionInfo]:
        return self._read(queue.ready_for_cleaning)

    def show_compactions(self) -> list[CompactionInfo]:
        return self._read(lambda conn: [queue.info_of(r) for r in conn.execute(
            "SELECT * FROM compactions ORDER BY compaction_id")])

    def begin_cleaning(self, table: str, partition: str, txns: ValidTxnList) -> list[int]:
        return self._write(lambda conn, now: queue.begin_cleaning(
            conn, self._table_row(conn, table)["table_id"], partition, txns, now),
            locks=("queue",))

    def compactions_committed_after(self, table: str, point: int | datetime
                                    ) -> list[CompactionCommit]:
        return self._read(lambda conn: queue.committed_after(
            conn, self._table_row(conn, table)["table_id"], point))

    def unseen_replacements(self, table: str, snapshot: ValidTxnList) -> list[int]:
        return self._read(lambda conn: queue.unseen_replacements(
            conn, self._table_row(conn, table)["table_id"], snapshot))
