"""The public table (layer L4): reads at a snapshot, and INSERT / UPDATE / DELETE / MERGE.

Every write runs in a transaction: the caller's (``wh.transaction()``) or an implicit one per
call. A statement reads the rows it changes at the transaction's snapshot (only the row-id and
predicate columns for a DELETE), writes delete events and new rows into directories of its own
write id and statement id, and registers them with the transaction; nothing is visible until
the transaction commits.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.api import frames
from acidstore.api import optimize as maintenance
from acidstore.engine import idempotent
from acidstore.engine import schema_change as schema_evolution
from acidstore.engine.merge_match import MergeSpec, not_matched_rows
from acidstore.engine.publish import operation_of, publish_change
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import (
    ChangeKind,
    ChangeUnit,
    Executor,
    StatementTarget,
    UnitOutcome,
    bucket_of_rows,
    partition_inserts,
    pinned_buckets,
    plan_inserts,
    plan_units,
    planned_directories,
    run_units,
)
from acidstore.errors import (
    InvalidInputError,
    StrayPathError,
    TableNotFoundError,
    UnsupportedOperationError,
    required_condition,
)
from acidstore.format.layout import base_name, delta_name
from acidstore.format.orc.acid_file import compression_codec
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import HistoryEntry, Operation, PlannedWrite, TableInfo, WriteComponent
from acidstore.metastore.conflicts import IsolationLevel, isolation_level
from acidstore.read import changes as change_feed
from acidstore.read.recorded import SnapshotRecord
from acidstore.read.scan import PartitionDir, Scan, table_partitions
from acidstore.read.time_travel import lease_snapshot, past_snapshot, release_lease
from acidstore.sql.expressions import Predicate, SqlEvaluator
from acidstore.write.conform import (
    PartitionData,
    conform,
    refuse_zone_drop,
    split_partitions,
    to_arrow_table,
)
from acidstore.write.files import INSERT_THREADS, WrittenDirectory, write_inserts

if TYPE_CHECKING:
    from acidstore.api.merge_builder import MergeBuilder
    from acidstore.api.warehouse import Warehouse
    from acidstore.engine.transaction import Transaction

__all__ = ["Table", "WriteResult"]

LEASE_TTL_SECONDS = 300.0


@storage_boundary
class Table:
    """A table of a warehouse, optionally bound to a transaction."""

    def __init__(self, warehouse: Warehouse, info: TableInfo,
                 transaction: Transaction | None = None) -> None:
        self._warehouse = warehouse
        self.info = info
        self._txn = transaction

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
    def isolation_level(self) -> IsolationLevel:
        """``WriteSerializable`` (default) or ``Serializable`` (property
        ``acidstore.isolationLevel``; README, "Concurrent writers")."""
        return isolation_level(self.info.properties, self.name)

    @property
    def compression(self) -> str:
        """The pyarrow codec every writer of this table uses (its ``orc.compress``)."""
        return compression_codec(self.info.properties.get("orc.compress"))

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The filesystem of the table's files (engines that read them elsewhere need it)."""
        return self._warehouse.filesystem

    @property
    def warehouse(self) -> Warehouse:
        return self._warehouse

    def __repr__(self) -> str:
        return f"Table({self.name!r}, location={self.location!r})"

    # --- snapshots and reads -------------------------------------------------------------------

    def _snapshot(self) -> tuple[ValidTxnList, ValidWriteIdList]:
        self._check_exists()  # a dropped table's name (and location) may hold a new table
        if self._txn is not None:
            return self._txn.snapshot, self._txn.write_ids(self.name)
        metastore = self._warehouse.metastore
        txns = metastore.valid_txns()
        return txns, metastore.valid_write_ids(self.name, txns)

    def snapshot(self) -> ValidWriteIdList:
        """The ValidWriteIdList a read would use now."""
        return self._snapshot()[1]

    def _scan(self, txns: ValidTxnList, write_ids: ValidWriteIdList, *,
              columns: Sequence[str] | None = None, filter: Predicate | None = None,
              with_row_id: bool = False, buckets: frozenset[int] | None = None) -> Scan:
        fs = self._warehouse.filesystem
        partitions = self.partition_dirs()
        return Scan(fs, partitions, write_ids, txns, schema=self.info.schema,
                    partition_schema=self.info.partition_schema, columns=columns, filter=filter,
                    with_row_id=with_row_id, recorded=self.recorded_writes(), buckets=buckets)

    def partition_dirs(self, *, strays: list[StrayPathError] | None = None
                       ) -> list[PartitionDir]:
        """The table's partitions: those listed on disk, plus those the metastore says a
        commit wrote whose directory is gone (``table_partitions``), so that a read, DML
        statement, compaction or fsck reaches them and stops on their missing data instead
        of answering without their rows. The metastore is asked first: a partition a commit
        adds after the listing is then not mistaken for a missing one."""
        names = self.info.partition_schema.names
        recorded = self._warehouse.metastore.list_partitions(self.name) if names else []
        return table_partitions(self._warehouse.filesystem, self.location, names,
                                strays=strays, recorded=recorded)

    def recorded_writes(self) -> SnapshotRecord:
        """The committed writes of this table as the metastore recorded them, by partition:
        what a snapshot must find on disk (a missing one is a MissingDataError, not rows
        silently lost or deletes silently undone). Loaded per partition as a read selects
        its directories: only what its base has not replaced."""
        own = self._txn.own_write_ids(self.name) if self._txn is not None else frozenset()
        return SnapshotRecord(self._warehouse.metastore, self.name, self.location,
                              pending=own, originals=self.info.originals_recorded)

    def read_snapshot(self, as_of: int | datetime | None = None
                      ) -> tuple[ValidTxnList, ValidWriteIdList]:
        """The (txns, write ids) a read would use now, or ``as_of`` a write id or time."""
        return self._read_snapshot(as_of)[:2]

    def _read_snapshot(self, as_of: int | datetime | None
                       ) -> tuple[ValidTxnList, ValidWriteIdList, frozenset[int]]:
        txns, write_ids = self._snapshot()
        if as_of is None:
            return txns, write_ids, frozenset()
        return past_snapshot(self._warehouse.metastore, self.name, as_of, txns, write_ids)

    def leased_snapshot(self, as_of: int | datetime | None = None, *,
                        ttl_seconds: float = LEASE_TTL_SECONDS
                        ) -> tuple[ValidTxnList, ValidWriteIdList, int]:
        """``read_snapshot`` plus a metastore lease on it, taken before any directory is
        listed: from then on the cleaner keeps everything the snapshot selects (see
        ``time_travel.lease_snapshot`` for the compactions and overwrites it looks for)."""
        return lease_snapshot(self._warehouse.metastore, self.name,
                              lambda: self._read_snapshot(as_of), as_of=as_of,
                              own_transaction=self._txn is not None, ttl_seconds=ttl_seconds)

    def _leased_scan(self, columns: Sequence[str] | None, filter: Predicate | None,
                     as_of: int | datetime | None, with_row_id: bool) -> tuple[Scan, int]:
        """A scan whose snapshot was leased *before* its directories were listed, so no file
        it planned can vanish between planning and reading."""
        txns, write_ids, lease = self.leased_snapshot(as_of)
        metastore = self._warehouse.metastore
        try:
            return self.scan(columns, filter, None, with_row_id,
                             snapshot=(txns, write_ids)), lease
        except BaseException:
            release_lease(metastore, lease)
            raise

    def to_batches(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                   as_of: int | datetime | None = None, with_row_id: bool = False
                   ) -> pa.RecordBatchReader:
        """Stream the table at a snapshot. The snapshot is leased in the metastore (so the
        cleaner keeps its files) until the reader is exhausted, closed or collected; a slow
        consumer renews the lease as it goes."""
        scan, lease = self._leased_scan(columns, filter, as_of, with_row_id)
        metastore = self._warehouse.metastore
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

    def to_arrow(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                 as_of: int | datetime | None = None, with_row_id: bool = False) -> pa.Table:
        """The table at a snapshot (now, or ``as_of`` a write id or a time); splits are read
        in parallel threads under a lease held for the duration of the read."""
        scan, lease = self._leased_scan(columns, filter, as_of, with_row_id)
        try:
            return scan.to_table()
        finally:
            release_lease(self._warehouse.metastore, lease)

    def to_pandas(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                  as_of: int | datetime | None = None) -> Any:
        """``to_arrow(...).to_pandas()``: a pandas DataFrame of the table at a snapshot."""
        return self.to_arrow(columns, filter, as_of).to_pandas()

    def to_polars(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                  as_of: int | datetime | None = None) -> Any:
        """A Polars DataFrame of the table at a snapshot (needs the optional polars)."""
        return frames.to_polars(self.to_arrow(columns, filter, as_of))

    def to_duckdb(self, connection: Any = None, *, columns: Sequence[str] | None = None,
                  filter: Predicate | None = None, as_of: int | datetime | None = None) -> Any:
        """A DuckDB relation over the table at a snapshot (rows read now, see frames)."""
        return frames.to_duckdb(self.to_arrow(columns, filter, as_of), connection)

    def scan(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
             as_of: int | datetime | None = None, with_row_id: bool = False, *,
             snapshot: tuple[ValidTxnList, ValidWriteIdList] | None = None) -> Scan:
        """A planned scan, unread and unleased: for engines that read the splits elsewhere
        (Spark executors). ``snapshot`` pins the (txns, write ids) to read, e.g. those of a
        transaction that changes the rows it reads."""
        txns, write_ids = snapshot if snapshot is not None else self._snapshot()
        if as_of is not None:
            txns, write_ids, _ = past_snapshot(self._warehouse.metastore, self.name, as_of,
                                               txns, write_ids)
        return self._scan(txns, write_ids, columns=columns, filter=filter,
                          with_row_id=with_row_id)

    def add_columns(self, columns: Any) -> None:
        """Append nullable columns (a ``pa.Schema``); rows written before read them as NULL,
        and writers that planned against the old schema fail with MetadataChangedError
        (see ``acidstore.engine.schema_change``)."""
        self._check_exists()
        self.info = schema_evolution.add_columns(self._warehouse, self.name, columns,
                                                 in_transaction=self._txn is not None)

    def changes(self, start_write_id: int, end_write_id: int) -> pa.Table:
        """The rows inserted, updated and deleted by the committed write ids
        ``start_write_id..end_write_id`` (inclusive): the table's columns plus
        ``_change_type`` (insert, delete, update_preimage, update_postimage), ``_write_id``,
        ``_commit_time`` and ``row__id``. See ``acidstore.read.changes`` for the rules."""
        return change_feed.changes(self, start_write_id, end_write_id)

    # --- maintenance: the compaction package's compactors and cleaner, for this table ---------

    def optimize(self, kind: Literal["minor", "major"] = "major", *,
                 partition: str | Mapping[str, str | None] | None = None,
                 engine: str = "local", spark: Any = None) -> maintenance.OptimizeOutcome:
        """Delta's ``optimize()``: ``compaction.compact(self, kind, ...)`` now (major by
        default, as Delta rewrites into fewer files). What it replaced stays until vacuum."""
        self._outside_transaction("optimize")
        return maintenance.maintenance().optimize(self, kind, partition, engine, spark)

    def vacuum(self, retention_seconds: float = 300.0) -> maintenance.VacuumOutcome:
        """Delta's ``vacuum()``: a ``compaction.Cleaner`` pass over this table only; what a
        live reader or a time travel within ``retention_seconds`` may need is kept."""
        self._outside_transaction("vacuum")
        return maintenance.maintenance().vacuum(self, retention_seconds)

    def _outside_transaction(self, operation: str) -> None:
        """Compaction and cleaning commit their own transactions, never a caller's."""
        if self._txn is not None:
            raise UnsupportedOperationError(
                f"{operation}() of {self.name} cannot run inside a transaction: call it on "
                f"wh.table({self.name!r}) outside `with wh.transaction()`")
        self._check_exists()

    def history(self) -> pa.Table:
        """One row per committed write id."""
        self._check_exists()
        return HistoryEntry.table(self._warehouse.metastore.history(self.name))

    # --- writes --------------------------------------------------------------------------------

    def _run(self, body: Callable[[Transaction], WriteResult],
             writes: Sequence[PlannedWrite] = ()) -> WriteResult:
        """Run ``body(txn)`` in this table's transaction, or in a new one that commits (and
        opens with ``writes``, the INSERT it starts with, if known)."""
        self._check_exists()  # and take the table's current metadata
        if self._txn is not None:
            try:
                result: WriteResult = body(self._txn)
            except BaseException as exc:
                self._txn.fail(exc)
                raise
            return result
        with self._warehouse.transaction(writes=writes) as txn:
            result = body(txn)
            if writes and result.write_id is None and not result.skipped:
                # the open took the write id, so it commits: a version that changed nothing,
                # as a statement's whose files held no matching row
                result = dataclasses.replace(result, write_id=txn.write_id(self.name))
        return dataclasses.replace(result, committed=not result.skipped)

    def refresh(self) -> None:
        """Take the table's current catalog entry (its schema after another client's
        ``add_columns``), as every statement does at its start; one that was dropped raises
        ``TableNotFoundError``. For callers that check data against ``schema`` themselves
        before a later statement writes it (a streaming transaction's ``write``)."""
        self._check_exists()

    def _check_exists(self) -> None:
        """Refuse a dropped table; take the current catalog entry if its metadata changed
        (another client's ``add_columns``), so that each statement plans against the schema
        of its start, which its commit then checks (``MetadataChangedError``)."""
        current = self._warehouse.metastore.get_table(self.name)
        if current.table_id != self.info.table_id:
            raise TableNotFoundError(f"table {self.name} was dropped (and re-created)")
        if current.metadata_version != self.info.metadata_version:
            self.info = self._warehouse.table_info(self.name)

    def _conformed(self, data: Any) -> pa.Table:
        self._check_exists()  # conform to the schema the statement's commit is checked against
        where = f"table {self.name}"
        table = to_arrow_table(data, where)
        refuse_zone_drop(table, self.schema, where=where)
        return conform(table, self.schema, where=where)

    def insert(self, data: Any, *, app_id: str | None = None, version: int | None = None
               ) -> WriteResult:
        """Append rows (a pyarrow Table, RecordBatchReader or pandas DataFrame). With
        ``app_id`` and ``version`` the write is idempotent (``acidstore.engine.idempotent``): if the
        table holds that version of ``app_id`` or a later one, nothing is written and the
        result says ``skipped``."""
        return self._write_once(data, "insert", app_id, version)

    def insert_overwrite(self, data: Any, *, app_id: str | None = None,
                         version: int | None = None) -> WriteResult:
        """Replace the partitions present in ``data`` (the whole table if unpartitioned) with
        ``data``: each gets a ``base_w``, so older data there is no longer read
        (``app_id``/``version`` as for ``insert``)."""
        return self._write_once(data, "overwrite", app_id, version)

    def _write_once(self, data: Any, operation: Operation, app_id: str | None,
                    version: int | None) -> WriteResult:
        rows, app = self._conformed(data), idempotent.requested(app_id, version)
        parts = split_partitions(rows, self.info.partition_schema.names)
        # known before the transaction opens: a new transaction allocates and records it
        planned = PlannedWrite(self.name, tuple(p.path for p in parts),
                               "overwrite" if operation == "overwrite" else "insert")
        return idempotent.write_once(
            self._warehouse.metastore, self.name, app, operation,
            run=lambda body: self._run(body, writes=(planned,)),
            write=lambda t: self._write_rows(t, rows, operation, parts))

    def delete(self, predicate: Predicate) -> WriteResult:
        """Delete the rows matching ``predicate`` (SQL string or pyarrow expression;
        ``"true"`` for every row)."""
        required_condition(predicate, f"DELETE from {self.name}")
        return self._run(lambda txn: self._delete(txn, predicate),
                         writes=self._planned_change("delete"))

    def update(self, predicate: Predicate, set: Mapping[str, str]) -> WriteResult:
        """Set columns of the rows matching ``predicate`` (``"true"`` for every row) to SQL
        expressions of the old row."""
        required_condition(predicate, f"UPDATE of {self.name}")
        assignments = self._check_assignments(set)
        return self._run(lambda txn: self._update(txn, predicate, assignments),
                         writes=self._planned_change("update"))

    def _planned_change(self, operation: Literal["update", "delete"]
                        ) -> tuple[PlannedWrite, ...]:
        """What a DELETE or UPDATE that opens its own transaction writes, when that is known
        before the open: on an unpartitioned table its first statement can only write the
        directories ``PlannedWrite`` names, so the open allocates the write id and records
        them (two durable metastore transactions per statement instead of four, as for an
        insert). A partitioned table's partitions are known only once planned."""
        if self._txn is not None or len(self.info.partition_schema):
            return ()
        return (PlannedWrite(self.name, ("",), operation),)

    def merge(self, source: Any, condition: str, *, source_alias: str = "s",
              target_alias: str = "t") -> MergeBuilder:
        """Start a MERGE of ``source`` into this table on ``condition``."""
        from acidstore.api.merge_builder import MergeBuilder

        rows = to_arrow_table(source, f"MERGE source of {self.name}")
        return MergeBuilder(self, rows, condition, source_alias, target_alias)

    # --- statement bodies (inside a transaction) -----------------------------------------------

    def updatable_column(self, name: str) -> str:
        """The column ``name`` (any case) names, if an UPDATE may set it: partition and
        bucketing columns place rows in files, so they cannot change (as in Hive)."""
        by_lower = {f.name.lower(): f.name for f in self.info.schema}
        fixed = {n.lower() for n in self.info.partition_schema.names} | {
            n.lower() for n in self.info.bucket_by}
        if name.lower() in fixed:
            raise InvalidInputError(
                f"cannot update {name!r} of {self.name}: partition and bucketing columns "
                "cannot be updated (as in Hive)")
        if name.lower() not in by_lower:
            raise InvalidInputError(f"unknown column {name!r} in update of {self.name}")
        column: str = by_lower[name.lower()]
        return column

    def insertable_columns(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` keyed by the table's own spelling of each column (every column,
        partition ones included, may be given a value)."""
        known = {n.lower(): n for n in self.schema.names}
        unknown = [c for c in values if c.lower() not in known]
        if unknown:
            raise InvalidInputError(f"unknown column(s) {unknown} in MERGE insert of "
                                    f"{self.name}")
        return {known[c.lower()]: v for c, v in values.items()}

    def execute_merge(self, spec: MergeSpec) -> WriteResult:
        """Run a planned MERGE in this table's transaction (or its own), in this process."""
        return self._run(lambda txn: self.run_statement(txn, "merge", merge=spec))

    def _check_assignments(self, assignments: Mapping[str, str]) -> dict[str, str]:
        if not assignments:
            raise InvalidInputError("update needs at least one column to set")
        out = {}
        for name, expression in assignments.items():
            column = self.updatable_column(name)
            if not isinstance(expression, str):
                raise InvalidInputError(f"the value for {name!r} must be a SQL expression string")
            out[column] = expression
        return out

    def _buckets(self, rows: pa.Table) -> npt.NDArray[np.int32]:
        return bucket_of_rows(self.statement_target(), rows)

    def _component(self, partition: str, operation: Operation, write_id: int,
                   written: Sequence[WrittenDirectory | None], *, inserted: int = 0,
                   deleted: int = 0) -> WriteComponent:
        done = [w for w in written if w is not None]
        return WriteComponent(self.name, partition, operation, write_id,
                              tuple(w.path for w in done), rows_inserted=inserted,
                              rows_deleted=deleted, files=sum(len(w.files) for w in done),
                              bytes=sum(w.bytes for w in done),
                              metadata_version=self.info.metadata_version,
                              bucket_files=tuple(f for w in done for f in w.bucket_files))

    def _write_rows(self, txn: Transaction, rows: pa.Table, operation: Operation,
                    parts: Sequence[PartitionData]) -> WriteResult:
        write_id = txn.write_id(self.name)
        statement = txn.next_statement_id(self.name)
        kind: Literal["base", "delta"] = "base" if operation == "overwrite" else "delta"
        user = [f.name for f in self.info.schema]
        names = []
        for part in parts:
            name = base_name(write_id) if kind == "base" else delta_name(write_id, write_id,
                                                                         statement)
            txn.will_write(WriteComponent(self.name, part.path, operation, write_id,
                                          (afs.join(part.path, name) if part.path else name,)))
            data = part.rows.select(user)
            written = write_inserts(self._warehouse.filesystem, self.location, part.path, data,
                                    self._buckets(data), write_id=write_id,
                                    statement_id=statement, schema=self.info.schema, kind=kind,
                                    compression=self.compression, threads=INSERT_THREADS)
            txn.wrote(self._component(part.path, operation, write_id, [written],
                                      inserted=data.num_rows))
            names.append(part.path)
        return WriteResult(txn.txn_id, write_id, operation, rows_inserted=rows.num_rows,
                           partitions=tuple(names))


    # --- DELETE, UPDATE and MERGE through the statement core (shared with Spark) ---

    def statement_target(self) -> StatementTarget:
        """This table as the picklable values a statement's units write to."""
        info = self.info
        return StatementTarget(self._warehouse.filesystem, self.location, self.name,
                               info.schema, info.partition_schema, tuple(info.bucket_by),
                               info.buckets, self.compression)

    def plan_change(self, txn: Transaction, kind: ChangeKind, predicate: Predicate | None,
                    assignments: Mapping[str, str] | None = None,
                    merge: MergeSpec | None = None) -> list[ChangeUnit]:
        """Plan a DELETE, UPDATE or MERGE at ``txn``'s snapshot into units any engine can run,
        and register the directories they may write (before any file exists). No units, and
        no write id taken, when no file can hold a matching row."""
        target = self.statement_target()
        # under Serializable every partition a statement read is a conflict scope (a later
        # append there could be a phantom), so it reads them whole; pruning buckets could
        # leave a partition unread
        serializable = self.isolation_level == "Serializable"
        scan = self._scan(txn.snapshot, txn.write_ids(self.name), columns=[],
                          filter=predicate, with_row_id=True,
                          buckets=None if serializable else pinned_buckets(target, predicate))
        planned = list(scan.planned)
        if not planned:
            return []
        write_id = txn.write_id(self.name)
        statement = txn.next_statement_id(self.name)
        if kind != "delete":
            txn.next_statement_id(self.name)  # the new rows' (Hive 4: delete events s, rows s+1)
        return self._register(txn, plan_units(
            target, scan, kind, write_id=write_id, statement=statement,
            predicate=predicate, assignments=assignments, merge=merge, planned=planned))

    def plan_merge_inserts(self, txn: Transaction, spec: MergeSpec,
                           outcomes: Sequence[UnitOutcome]) -> list[ChangeUnit]:
        """The "insert" units of a MERGE's WHEN NOT MATCHED clauses, over the source rows no
        unit of the MERGE matched (their statement id follows the units')."""
        matched = [o.matched_source for o in outcomes if o.matched_source is not None]
        target = self.statement_target()
        evaluator = SqlEvaluator()
        try:
            rows = not_matched_rows(spec, np.concatenate(matched) if matched else
                                    np.zeros(0, np.int64), target.full_schema, evaluator)
        finally:
            evaluator.close()
        return self.plan_insert_units(txn, rows)

    def plan_insert_units(self, txn: Transaction, rows: pa.Table, *,
                          partitions_only: bool = False) -> list[ChangeUnit]:
        """The "insert" units for ``rows`` (every column, partition ones included), one per
        partition, with the statement id after the statement's others, their directories
        registered. ``partitions_only``: ``rows`` holds just the partition columns, one row
        per partition, for an engine that computes the rows elsewhere and plans the same
        units again where they are (``plan_inserts``); the units then carry no rows."""
        if not rows.num_rows:
            return []
        plan = partition_inserts if partitions_only else plan_inserts
        write_id = txn.write_id(self.name)
        return self._register(txn, plan(
            self.statement_target(), rows, txns=txn.snapshot,
            write_ids=txn.write_ids(self.name), write_id=write_id,
            statement=txn.next_statement_id(self.name)))

    def _register(self, txn: Transaction, units: list[ChangeUnit]) -> list[ChangeUnit]:
        """Record the directories ``units`` may write with ``txn`` (a crash then leaves a
        record to clean), and mark units of partitions ``txn`` overwrote as refused."""
        if not units:
            return units
        write_id = units[0].write_id
        for partition, directories in planned_directories(units).items():
            if txn.overwrote(self.name, partition, write_id) is None:
                txn.will_write(WriteComponent(self.name, partition, operation_of(units[0].kind),
                                              write_id, directories))
        return [dataclasses.replace(u, refuse=txn.overwrote(self.name, u.partition, write_id))
                for u in units]

    def publish_change(self, txn: Transaction, kind: ChangeKind, units: Sequence[ChangeUnit],
                       outcomes: Sequence[UnitOutcome], *, source_rows: int = 0
                       ) -> WriteResult:
        """Register the units' outcomes with ``txn`` (``acidstore.engine.publish``)."""
        return publish_change(self, txn, kind, units, outcomes, source_rows=source_rows)

    def run_statement(self, txn: Transaction, kind: ChangeKind, *,
                      predicate: Predicate | None = None,
                      assignments: Mapping[str, str] | None = None,
                      merge: MergeSpec | None = None, run: Executor = run_units
                      ) -> WriteResult:
        """Plan, execute (``run``: this process, or an engine's tasks) and publish one DELETE,
        UPDATE or MERGE in ``txn``: the one statement path of both engines."""
        units = self.plan_change(txn, kind, predicate, assignments, merge)
        outcomes = run(units)
        if merge is not None:
            inserts = self.plan_merge_inserts(txn, merge, outcomes)
            units, outcomes = [*units, *inserts], [*outcomes, *run(inserts)]
        return self.publish_change(txn, kind, units, outcomes,
                                   source_rows=merge.source.num_rows if merge else 0)

    def _delete(self, txn: Transaction, predicate: Predicate) -> WriteResult:
        return self.run_statement(txn, "delete", predicate=predicate)

    def _update(self, txn: Transaction, predicate: Predicate, assignments: dict[str, str]
                ) -> WriteResult:
        return self.run_statement(txn, "update", predicate=predicate, assignments=assignments)
