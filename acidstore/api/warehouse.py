"""The warehouse: the catalog of a directory of ACID tables and its metastore.

A warehouse is a directory of tables (``<warehouse>/<db>.db/<table>``) plus a metastore, by
default a SQLite file inside the warehouse, so one machine needs nothing else running. Table
and database names are plain identifiers, so no name can place files outside the warehouse.
``Warehouse`` shows users their methods only; the engine works on its ``WarehouseCore``.

``Transaction`` is the public transaction: several statements, on several tables, committed
as one; ``with wh.transaction() as txn:`` commits on a clean exit and aborts on an exception,
and ``txn.table(name)`` reads and writes in it. A transaction begun inside another one's
``with`` block on the same warehouse connection (a single statement on ``wh.table``
included) is refused with ``NestedTransactionError``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.api.streaming import StreamingConnection
from acidstore.api.table import Table
from acidstore.config import HEARTBEAT_INTERVAL_SECONDS
from acidstore.engine import catalog
from acidstore.engine.adopt import adopt_table
from acidstore.engine.core import WarehouseCore
from acidstore.engine.handle import TableHandle
from acidstore.engine.transaction import State, TransactionCore
from acidstore.errors import (
    InvalidInputError,
    TableExistsError,
    TableNotFoundError,
    WarehouseNotFoundError,
)
from acidstore.format.writeids import ValidTxnList
from acidstore.fsck import fsck
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import CommitInfo, Metastore
from acidstore.metastore.validate import column_names, split_table_name
from acidstore.write.conform import schema_of

__all__ = ["Transaction", "Warehouse"]


@storage_boundary
class Transaction:
    """An open transaction; use it as a context manager."""

    def __init__(self, core: TransactionCore) -> None:
        self._core = core

    @property
    def txn_id(self) -> int:
        """The metastore's id of this transaction."""
        return self._core.txn_id

    @property
    def snapshot(self) -> ValidTxnList:
        """The transactions this one sees as committed (fixed when it began)."""
        return self._core.snapshot

    @property
    def state(self) -> State:
        """open, committed, aborted, or unknown (the metastore could not tell)."""
        return self._core.state

    def table(self, name: str) -> Table:
        """The table ``name`` as seen and written by this transaction."""
        return Table(TableHandle.open(self._core.core, name, self._core))

    def commit(self) -> CommitInfo:
        """Publish every write of the transaction at once, or raise and publish nothing (a
        commit whose answer was lost is settled with the metastore first:
        ``CommitStateUnknownError`` when it cannot tell)."""
        return self._core.commit()

    def abort(self, reason: str = "aborted by the caller") -> None:
        """Abort: nothing this transaction wrote becomes visible; its files are removed once
        the metastore has recorded the abort."""
        self._core.abort(reason)

    def __enter__(self) -> Transaction:
        self._core.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._core.__exit__(exc_type, exc, tb)

    def __repr__(self) -> str:
        return f"Transaction({self.txn_id}, {self.state})"


@storage_boundary
class Warehouse:
    """A warehouse of ACID tables and its metastore (``acidstore.connect``)."""

    def __init__(self, location: str | os.PathLike[str], metastore: Metastore, *,
                 filesystem: pafs.FileSystem | None = None,
                 heartbeat_interval: float = HEARTBEAT_INTERVAL_SECONDS) -> None:
        fs, root = afs.resolve(location, filesystem)
        try:
            fs.create_dir(root, recursive=True)
        except OSError as exc:  # e.g. an S3 bucket that does not exist
            raise WarehouseNotFoundError(
                f"cannot create the warehouse directory {root}: {exc}", path=root) from exc
        self._core = WarehouseCore(root, fs, metastore, heartbeat_interval=heartbeat_interval)

    @property
    def location(self) -> str:
        """The warehouse root, as a path on ``filesystem``."""
        return self._core.location

    @property
    def metastore(self) -> Metastore:
        """The metastore holding the catalogue and the transactions."""
        return self._core.metastore

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem of the warehouse's files."""
        return self._core.filesystem

    def close(self) -> None:
        """Close the metastore's connections."""
        self._core.metastore.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Warehouse({self.location!r}, metastore={self.metastore!r})"

    # --- catalog ---------------------------------------------------------------------------------

    def create_table(self, name: str, schema: pa.Schema | Any, *,
                     partition_by: Iterable[str] | None = (),
                     bucket_by: Iterable[str] | None = (), buckets: int | None = 0,
                     properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False) -> Table:
        """Create a transactional table; ``schema`` lists every column, partition ones too.

        ``schema`` may also be a pyarrow Table or pandas DataFrame whose schema the table takes
        (its rows are not inserted: ``t.insert(df)`` does that). With ``if_not_exists`` an
        existing table of that name is returned as it is, without comparing its schema or
        layout (as Delta's and SQL's ``CREATE TABLE IF NOT EXISTS`` do), so that a job can
        run the same setup code every time. ``partition_by``, ``bucket_by`` and ``buckets``
        may be None, meaning none (as their defaults do)."""
        split_table_name(name)  # a bad name is refused before anything else
        if if_not_exists:
            with contextlib.suppress(TableNotFoundError):
                return self.table(name)
        schema = schema_of(schema, f"table {name}")
        partitions = column_names(partition_by, "partition_by", name)
        bucketing = column_names(bucket_by, "bucket_by", name)
        if buckets is None:
            buckets = 0
        if isinstance(buckets, bool) or not isinstance(buckets, int):
            raise InvalidInputError(f"table {name}: buckets must be an int, got "
                                    f"{type(buckets).__name__} {buckets!r}")
        if properties is not None and not isinstance(properties, Mapping):
            raise InvalidInputError(f"table {name}: properties must be a mapping of names "
                                    f"to values or None, got {type(properties).__name__}")
        try:
            info = catalog.create_table(self._core, name, schema, partition_by=partitions,
                                        bucket_by=bucketing, buckets=buckets,
                                        properties=properties)
        except TableExistsError:
            if not if_not_exists:
                raise
            return self.table(name)  # created by another client since we looked
        return Table(TableHandle(self._core, info))

    def table(self, name: str) -> Table:
        """An existing table (``TableNotFoundError`` if there is none)."""
        return Table(TableHandle.open(self._core, name))

    def tables(self, database: str | None = None) -> list[str]:
        """The tables, as ``database.table`` names (of one database if given)."""
        return self._core.metastore.list_tables(database.lower() if database else None)

    def drop_table(self, name: str) -> None:
        """Remove a table and its files."""
        catalog.drop_table(self._core, name)

    def rename_table(self, old: str, new: str) -> Table:
        """Rename table ``old`` to ``new`` (also into another database) and return it: its
        rows, history and time travel stay, and so do its files, where they are. ``old``
        is free afterwards (``TableNotFoundError`` through it, also from ``Table`` objects
        opened before). Refused while transactions write the table (``TableBusyError``)
        and when ``new`` is taken (``TableExistsError``)."""
        split_table_name(new)  # a bad new name is refused before anything else
        return Table(TableHandle(self._core, catalog.rename_table(self._core, old, new)))

    def adopt_table(self, name: str, path: str | os.PathLike[str], *,
                    partition_by: Iterable[str] | None = (), schema: pa.Schema | None = None,
                    properties: Mapping[str, str] | None = None) -> Table:
        """Turn the plain ORC/Parquet files below ``path`` (``col=value`` directories for
        ``partition_by``; None: unpartitioned) into the new transactional table ``name``, as
        Hive converts a table to ACID: ORC files are moved in as pre-ACID originals, Parquet
        ones rewritten as ORC."""
        split_table_name(name)
        handle = adopt_table(self._core, name, os.fspath(path),
                             partition_by=column_names(partition_by, "partition_by", name),
                             schema=schema, properties=properties)
        return Table(handle)

    # --- transactions ----------------------------------------------------------------------------

    def transaction(self) -> Transaction:
        """A new transaction; ``with wh.transaction() as txn:`` commits on a clean exit and
        aborts on an exception; ``txn.table(name)`` reads and writes in it."""
        return Transaction(TransactionCore.begin(self._core))

    def streaming_connection(self, table: str, *, app_id: str | None = None,
                             batch_size: int = 10,
                             partition: Mapping[str, str | None] | None = None
                             ) -> StreamingConnection:
        """A writer of many small transactions into ``table``: transactions are opened
        ``batch_size`` at a time in one metastore call and heartbeated together; with
        ``app_id``, each commit carries a version and is exactly-once. ``partition``: the
        one partition every row goes to."""
        return StreamingConnection(self._core, table, app_id=app_id, batch_size=batch_size,
                                   partition=partition)

    def show_transactions(self) -> pa.Table:
        rows = self._core.metastore.show_transactions()
        return pa.table({
            "txn_id": pa.array([r.txn_id for r in rows], pa.int64()),
            "state": pa.array([r.state for r in rows], pa.string()),
            "kind": pa.array([r.kind for r in rows], pa.string()),
            "user": pa.array([r.user for r in rows], pa.string()),
            "host": pa.array([r.host for r in rows], pa.string()),
            "started": pa.array([r.started for r in rows], pa.timestamp("us", "UTC")),
            "last_heartbeat": pa.array([r.last_heartbeat for r in rows],
                                       pa.timestamp("us", "UTC")),
            "finished": pa.array([r.finished for r in rows], pa.timestamp("us", "UTC")),
        })

    def show_compactions(self) -> pa.Table:
        """The compaction queue and its history (Hive's SHOW COMPACTIONS)."""
        rows = self._core.metastore.show_compactions()

        def times(name: str) -> pa.Array:
            return pa.array([getattr(r, name) for r in rows], pa.timestamp("us", "UTC"))

        return pa.table({
            "compaction_id": pa.array([r.compaction_id for r in rows], pa.int64()),
            "table": pa.array([r.table for r in rows], pa.string()),
            "partition": pa.array([r.partition for r in rows], pa.string()),
            "kind": pa.array([r.kind for r in rows], pa.string()),
            "state": pa.array([r.state for r in rows], pa.string()),
            "reason": pa.array([r.reason for r in rows], pa.string()),
            "worker": pa.array([r.worker for r in rows], pa.string()),
            "txn_id": pa.array([r.txn_id for r in rows], pa.int64()),
            "highest_write_id": pa.array([r.highest_write_id for r in rows], pa.int64()),
            "enqueued": times("enqueued"),
            "started": times("started"),
            "compacted": times("compacted"),
            "finished": times("finished"),
            "cleaning_started": times("cleaning_started"),
            "attempts": pa.array([r.attempts for r in rows], pa.int64()),
            "error": pa.array([r.error for r in rows], pa.string()),
        })

    def fsck(self, table: str | None = None, *, repair: bool = False) -> pa.Table:
        """Check that the files of ``table`` (default: every table) are what the metastore
        says they are; one row per finding, none for a sound table (``acidstore.fsck``).
        ``repair`` removes only directories of writes the metastore records as aborted."""
        return fsck(self._core, table, repair=repair)

    def show_locks(self) -> pa.Table:
        rows = self._core.metastore.show_locks()
        return pa.table({
            "lock_id": pa.array([r.lock_id for r in rows], pa.int64()),
            "txn_id": pa.array([r.txn_id for r in rows], pa.int64()),
            "database": pa.array([r.database for r in rows], pa.string()),
            "table": pa.array([r.table for r in rows], pa.string()),
            "partition": pa.array([r.partition for r in rows], pa.string()),
            "lock_type": pa.array([r.lock_type for r in rows], pa.string()),
            "state": pa.array([r.state for r in rows], pa.string()),
            "acquired": pa.array([r.acquired for r in rows], pa.timestamp("us", "UTC")),
        })

    def show_leases(self) -> pa.Table:
        """Unexpired reader leases of every table: snapshots the cleaner keeps readable. A
        Spark read's lease lasts ``leaseSeconds`` (an hour) past the job; ``lease_id`` is what
        ``metastore.release_lease`` (``acidstore clean --release-lease``) takes."""
        rows = [lease for name in self.tables()
                for lease in self._core.metastore.active_leases(name)]
        rows.sort(key=lambda r: r.lease_id)
        return pa.table({
            "lease_id": pa.array([r.lease_id for r in rows], pa.int64()),
            "table": pa.array([r.table for r in rows], pa.string()),
            "write_ids": pa.array([str(r.write_ids) for r in rows], pa.string()),
            "txns": pa.array([str(r.snapshot) for r in rows], pa.string()),
            "acquired": pa.array([r.acquired for r in rows], pa.timestamp("us", "UTC")),
            "expires": pa.array([r.expires for r in rows], pa.timestamp("us", "UTC")),
        })
