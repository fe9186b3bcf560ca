"""The engine's handle on one table: its catalog entry, snapshots, leased scans, and the
transaction its statements run in.

Everything below the public API that works on a table (the write pipeline, Spark, the
compactors, fsck, the change feed, the command line) works on a ``TableHandle``; the public
``acidstore.Table`` wraps one and shows users their methods only. A handle is bound to the
caller's transaction or to none, in which case each statement runs in a transaction of its
own (``run``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.config import LEASE_TTL_SECONDS, ORC_COMPRESS_PROPERTY, PARTITION_DIRS_KEPT
from acidstore.engine.core import WarehouseCore
from acidstore.engine.pinned import pinned_partitions
from acidstore.engine.results import WriteResult
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import StrayPathError, TableNotFoundError, UnsupportedOperationError
from acidstore.format.orc.file_writer import compression_codec
from acidstore.format.partitions import parse_partition_path
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.metastore import HistoryEntry, Metastore, PlannedWrite, TableInfo
from acidstore.metastore.conflicts import IsolationLevel, isolation_level
from acidstore.read.record_plan import RecordPlan
from acidstore.read.recorded import SnapshotRecord
from acidstore.read.scan import PartitionDir, Scan, table_partitions
from acidstore.read.time_travel import lease_snapshot, past_snapshot, release_lease
from acidstore.sql.expressions import Predicate

__all__ = ["LEASE_TTL_SECONDS", "AsOf", "HasHandle", "TableHandle", "handle_of"]

AsOf = int | datetime | None


@functools.lru_cache(maxsize=PARTITION_DIRS_KEPT)
def _partition_dir(location: str, relative: str) -> PartitionDir:
    """A recorded partition's directory and values, parsed once per process: a read of a
    table of thousands of partitions asks for all of them before it prunes."""
    return PartitionDir(afs.join(location, relative), tuple(parse_partition_path(relative)))


class TableHandle:
    """Table ``info`` of warehouse ``core``, seen (and written) by ``txn`` if given."""

    def __init__(self, core: WarehouseCore, info: TableInfo,
                 txn: TransactionCore | None = None) -> None:
        self.core = core
        self.info = info
        self.txn = txn

    @classmethod
    def open(cls, core: WarehouseCore, name: str, txn: TransactionCore | None = None
             ) -> TableHandle:
        """The handle of the existing table ``name`` (``TableNotFoundError`` if none)."""
        if txn is not None:
            txn.check_open()
        return cls(core, core.table_info(name), txn)

    # --- description ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.info.full_name

    @property
    def schema(self) -> pa.Schema:
        """User columns followed by partition columns, as reads return them."""
        return pa.schema(list(self.info.schema) + list(self.info.partition_schema))

    @property
    def location(self) -> str:
        return self.info.location

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self.core.filesystem

    @property
    def metastore(self) -> Metastore:
        return self.core.metastore

    @property
    def isolation_level(self) -> IsolationLevel:
        """``WriteSerializable`` (default) or ``Serializable`` (``acidstore.isolationLevel``)."""
        return isolation_level(self.info.properties, self.name)

    @property
    def compression(self) -> str:
        """The pyarrow codec every writer of this table uses (its ``orc.compress``)."""
        return compression_codec(self.info.properties.get(ORC_COMPRESS_PROPERTY))

    def check_exists(self) -> None:
        """Refuse a dropped table; take the current catalog entry if its metadata changed
        (another client's ``add_columns``), so that each statement plans against the schema
        of its start, which its commit then checks (``MetadataChangedError``)."""
        try:
            current = self.metastore.get_table(self.name)
        except TableNotFoundError as exc:
            raise TableNotFoundError(
                f"table {self.name} does not exist any more: it was dropped or renamed "
                "(Warehouse.tables() lists the current names)") from exc
        if current.table_id != self.info.table_id:
            # never read or write the new table through a handle on the old one
            raise TableNotFoundError(
                f"table {self.name} was dropped or renamed, and {self.name} is now another "
                "table: open it again by name to use that one")
        if current.metadata_version != self.info.metadata_version:
            self.info = self.core.table_info(self.name)

    def outside_transaction(self, operation: str) -> None:
        """Compaction, cleaning and schema changes commit their own transactions, never a
        caller's."""
        if self.txn is not None:
            raise UnsupportedOperationError(
                f"{operation}() of {self.name} is a metastore transaction of its own and "
                f"cannot run inside a transaction: call it on wh.table({self.name!r}) "
                "outside `with wh.transaction()`")
        self.check_exists()

    def history(self) -> pa.Table:
        """One row per committed write id and per committed compaction (``HistoryEntry``)."""
        self.check_exists()
        return HistoryEntry.table(self.metastore.history(self.name))

    # --- snapshots -----------------------------------------------------------------------------

    def snapshot(self) -> tuple[ValidTxnList, ValidWriteIdList]:
        """The (txns, write ids) a read would use now: the transaction's, if bound."""
        self.check_exists()  # a dropped table's name (and location) may hold a new table
        if self.txn is not None:
            return self.txn.snapshot, self.txn.write_ids(self.name)
        txns = self.metastore.valid_txns()
        return txns, self.metastore.valid_write_ids(self.name, txns)

    def read_snapshot(self, as_of: AsOf = None) -> tuple[ValidTxnList, ValidWriteIdList]:
        """The (txns, write ids) a read would use now, or ``as_of`` a write id or time."""
        return self._read_snapshot(as_of)[:2]

    def _read_snapshot(self, as_of: AsOf
                       ) -> tuple[ValidTxnList, ValidWriteIdList, frozenset[int]]:
        txns, write_ids = self.snapshot()
        if as_of is None:
            return txns, write_ids, frozenset()
        return past_snapshot(self.metastore, self.name, as_of, txns, write_ids)

    def leased_snapshot(self, as_of: AsOf = None, *, ttl_seconds: float = LEASE_TTL_SECONDS
                        ) -> tuple[ValidTxnList, ValidWriteIdList, int]:
        """``read_snapshot`` plus a metastore lease on it, taken before any directory is
        listed: from then on the cleaner keeps everything the snapshot selects (see
        ``read.time_travel.lease_snapshot`` for the compactions and overwrites it checks)."""
        return lease_snapshot(self.metastore, self.name, lambda: self._read_snapshot(as_of),
                              as_of=as_of, own_transaction=self.txn is not None,
                              ttl_seconds=ttl_seconds)

    # --- what a snapshot reads -----------------------------------------------------------------

    def partition_dirs(self, *, strays: list[StrayPathError] | None = None
                       ) -> list[PartitionDir]:
        """The table's partitions: those listed on disk, plus those the metastore says a
        commit wrote whose directory is gone (``table_partitions``), so that what lists (a
        compaction, fsck, a read of a table whose record is incomplete) reaches them and
        stops on their missing data instead of answering without their rows. The metastore
        is asked first: a partition a commit adds after the listing is then not mistaken
        for a missing one."""
        names = self.info.partition_schema.names
        recorded = self.metastore.list_partitions(self.name) if names else []
        return table_partitions(self.filesystem, self.location, names, strays=strays,
                                recorded=recorded)

    def record_plan(self) -> RecordPlan | None:
        """What plans this table's reads from the metastore's record, unlisted; None where
        the record may lack what the table holds (a table created before metastore schema
        12, or a transaction that wrote to it: its own writes are not committed, so not
        recorded), and reads list as before (``read.record_plan``)."""
        if not self.info.originals_recorded:
            return None
        if self.txn is not None and self.txn.own_write_ids(self.name):
            return None
        return RecordPlan(self.metastore, self.name, self.location)

    def read_partitions(self, plan: RecordPlan | None, filter: Predicate | None = None
                        ) -> list[PartitionDir]:
        """The partitions a read plans over: from the record when ``plan`` is given (no
        listing; a directory nobody recorded is not read, and ``fsck`` reports it), and
        only those ``filter`` pins when it pins every partition column (``pinned``), else
        ``partition_dirs``."""
        if plan is None:
            return self.partition_dirs()
        schema = self.info.partition_schema
        if not schema.names:
            return [PartitionDir(self.location)]
        pinned = pinned_partitions(schema, filter)
        return [_partition_dir(self.location, p)
                for p in (plan.partitions() if pinned is None else pinned)]

    def recorded_writes(self) -> SnapshotRecord:
        """The committed writes of this table as the metastore recorded them, by partition:
        what a snapshot must find on disk (a missing one is a MissingDataError, not rows
        silently lost or deletes silently undone)."""
        own = self.txn.own_write_ids(self.name) if self.txn is not None else frozenset()
        return SnapshotRecord(self.metastore, self.name, self.location, pending=own,
                              originals=self.info.originals_recorded)

    def scan_at(self, txns: ValidTxnList, write_ids: ValidWriteIdList, *,
                columns: Sequence[str] | None = None, filter: Predicate | None = None,
                with_row_id: bool = False, buckets: frozenset[int] | None = None) -> Scan:
        """A scan of the snapshot (txns, write ids), planned now: from the metastore's
        record where it is complete (``record_plan``), else from listings."""
        plan = self.record_plan()
        return Scan(self.filesystem, self.read_partitions(plan, filter), write_ids, txns,
                    schema=self.info.row_schema, partition_schema=self.info.partition_schema,
                    columns=columns, filter=filter, with_row_id=with_row_id,
                    recorded=self.recorded_writes(), buckets=buckets, record_plan=plan)

    def scan(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
             as_of: AsOf = None, with_row_id: bool = False, *,
             snapshot: tuple[ValidTxnList, ValidWriteIdList] | None = None) -> Scan:
        """A planned scan, unread and unleased: for engines that read the splits elsewhere
        (Spark executors). ``snapshot`` pins the (txns, write ids) to read, e.g. those of a
        transaction that changes the rows it reads."""
        txns, write_ids = snapshot if snapshot is not None else self.snapshot()
        if as_of is not None:
            txns, write_ids, _ = past_snapshot(self.metastore, self.name, as_of, txns,
                                               write_ids)
        return self.scan_at(txns, write_ids, columns=columns, filter=filter,
                            with_row_id=with_row_id)

    def leased_scan(self, columns: Sequence[str] | None, filter: Predicate | None,
                    as_of: AsOf, with_row_id: bool) -> tuple[Scan, int]:
        """A scan whose snapshot was leased *before* its directories were listed, so no file
        it planned can vanish between planning and reading; and the lease."""
        txns, write_ids, lease = self.leased_snapshot(as_of)
        try:
            return self.scan(columns, filter, None, with_row_id,
                             snapshot=(txns, write_ids)), lease
        except BaseException:
            release_lease(self.metastore, lease)
            raise

    def read_table(self, columns: Sequence[str] | None = None,
                   filter: Predicate | None = None, as_of: AsOf = None,
                   with_row_id: bool = False) -> pa.Table:
        """The rows at a snapshot, read in parallel threads under a lease held meanwhile."""
        scan, lease = self.leased_scan(columns, filter, as_of, with_row_id)
        try:
            return scan.to_table()
        finally:
            release_lease(self.metastore, lease)

    def read_batches(self, columns: Sequence[str] | None = None,
                     filter: Predicate | None = None, as_of: AsOf = None,
                     with_row_id: bool = False) -> pa.RecordBatchReader:
        """The rows at a snapshot as a stream. The snapshot is leased until the reader is
        exhausted, closed or collected; a slow consumer renews the lease as it goes."""
        scan, lease = self.leased_scan(columns, filter, as_of, with_row_id)
        metastore = self.metastore
        release = weakref.finalize(scan, release_lease, metastore, lease)

        def batches() -> Iterator[pa.RecordBatch]:
            renewed = time.monotonic()
            try:
                for batch in scan.to_batches():
                    if time.monotonic() - renewed > LEASE_TTL_SECONDS / 3:
                        metastore.renew_lease(lease, LEASE_TTL_SECONDS)
                        renewed = time.monotonic()
                    yield batch
            finally:
                release()

        # re-exported through the C stream interface: closing that reader releases the
        # stream and with it the generator (and the lease), which ``close()`` on a reader
        # made by ``from_batches`` does not do
        return pa.RecordBatchReader.from_stream(
            pa.RecordBatchReader.from_batches(scan.schema, batches()))

    # --- statements ----------------------------------------------------------------------------

    def run(self, body: Callable[[TransactionCore], WriteResult],
            writes: Sequence[PlannedWrite] = ()) -> WriteResult:
        """Run ``body(txn)`` in this handle's transaction, or in a new one that commits (and
        opens with ``writes``, the INSERT it starts with, if known). A statement that fails
        in the caller's transaction aborts it: its half-written files must not commit."""
        self.check_exists()  # and take the table's current metadata
        if self.txn is not None:
            try:
                result: WriteResult = body(self.txn)
            except BaseException as exc:
                self.txn.fail(exc)
                raise
            return result
        with TransactionCore.begin(self.core, writes=writes) as txn:
            result = body(txn)
            if writes and result.write_id is None and not result.skipped:
                # the open took the write id, so it commits: a version that changed nothing,
                # as a statement's whose files held no matching row
                result = dataclasses.replace(result, write_id=txn.write_id(self.name))
        return dataclasses.replace(result, committed=not result.skipped)


class HasHandle(Protocol):
    """A public object over a table (``acidstore.Table``)."""

    @property
    def _handle(self) -> TableHandle: ...


def handle_of(table: TableHandle | HasHandle) -> TableHandle:
    """The engine's handle behind a public ``Table`` (or the handle itself)."""
    return table if isinstance(table, TableHandle) else table._handle
