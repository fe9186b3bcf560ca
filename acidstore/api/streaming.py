"""Streaming ingest for many small writers: the shape of Hive's streaming API v2
(``HiveStreamingConnection``, ``TransactionBatch``; spec §15).

A connection opens its transactions in batches: one metastore call opens ``batch_size``
transactions and allocates their write ids on the table (contiguous), and one heartbeat call
keeps every still-open one alive. The writer then runs them one at a time (``begin``,
``write``..., ``commit``); a used-up batch is followed by a new one, and ``close`` aborts what
the batch did not use, as Hive does. A writer that dies stops heartbeating, so its open
transactions time out and abort like any other, and the cleaner removes their files.

On disk each transaction is an ordinary ``delta_w_w_0000``: Hive's batch-size-1 shape, whatever
the batch size. Hive writes a batch of more than one transaction into one
``delta_<first>_<last>`` and marks each commit's end in a ``bucket_N_flush_length`` side file,
which needs ORC's intermediate footers; pyarrow cannot write those, and a file without them
is unreadable to Hive while it grows. Rows of a transaction are held until ``commit`` and
written then, so an aborted transaction leaves no file at all. More deltas than Hive's shape
is what the scheduled compaction (``acidstore compact --auto``) is for: its delta-count
threshold turns them into one.

Exactly-once: with ``app_id``, each commit carries a ``version`` and goes through the
idempotent-write machinery (``acidstore.engine.idempotent``): the version is recorded in
the commit's own metastore transaction, a version the table already holds (or a lower one)
is skipped, and a restarted writer resumes after ``last_version``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import pyarrow as pa

from acidstore.engine import writes
from acidstore.engine.core import WarehouseCore
from acidstore.engine.handle import TableHandle
from acidstore.engine.results import WriteResult
from acidstore.engine.transaction import TransactionCore, current_user
from acidstore.errors import (
    AcidStoreError,
    InvalidInputError,
    MetadataChangedError,
    TableNotFoundError,
    TransactionStateError,
)
from acidstore.format.partitions import partition_path
from acidstore.io.fs import storage_boundary
from acidstore.metastore import PlannedWrite, StatementSummary, TxnInfo
from acidstore.metastore.records import MAX_OPEN_BATCH
from acidstore.metastore.validate import check_app_version
from acidstore.write.conform import (
    canonical_partition_values,
    conform,
    omittable,
    refuse_zone_drop,
    split_partitions,
    to_arrow_table,
)

__all__ = ["STREAMING_INSERT", "StreamingConnection"]

#: what ``history()`` calls a streaming connection's commit: rows appended, as by ``insert``,
#: through Hive's streaming ingest (Delta calls its streaming writes "STREAMING UPDATE")
STREAMING_INSERT = "streaming_insert"


@storage_boundary
class StreamingConnection:
    """One writer's stream of small transactions into one table (``Warehouse.
    streaming_connection``); use it as a context manager, which closes it."""

    def __init__(self, warehouse: WarehouseCore, table: str, *, app_id: str | None = None,
                 batch_size: int = 10, partition: Mapping[str, str | None] | None = None
                 ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not (
                1 <= batch_size <= MAX_OPEN_BATCH):
            raise InvalidInputError(f"batch_size must be an int from 1 to {MAX_OPEN_BATCH} "
                                    f"(hive.txn.max.open.batch), got {batch_size!r}")
        if app_id is not None:
            app_id = check_app_version(app_id, 0)[0]
        self._warehouse = warehouse
        self._table = TableHandle.open(warehouse, table)
        self.table: str = self._table.name
        self.app_id = app_id
        self.batch_size = batch_size
        self._static_values: dict[str, str | None] = {}
        self._static = self._static_partition(partition)
        # a fixed partition (or none) is known up front: the batch records every txn's
        # directory as it opens, so a commit is the only metastore write of a transaction
        # without app_id (with it, the version is recorded first)
        self._writes = () if self._static is None else (
            PlannedWrite(self.table, (self._static,), "insert"),)
        self._unused: list[TxnInfo] = []
        self._current: TransactionCore | None = None
        self._pending: list[pa.Table] = []
        self._closed = False
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat,
                                           args=(warehouse.heartbeat_interval,),
                                           name=f"acidstore-stream-{self.table}", daemon=True)
        self._heartbeat.start()

    # --- the writer's calls --------------------------------------------------------------------

    @property
    def txn_id(self) -> int | None:
        """The transaction ``begin`` started, until it commits or aborts."""
        return None if self._current is None else self._current.txn_id

    @property
    def remaining(self) -> int:
        """Transactions of the current batch not begun yet (a new batch opens at zero)."""
        return len(self._unused)

    @property
    def last_version(self) -> int | None:
        """The newest version of ``app_id`` committed to the table (None: none yet): where a
        restarted writer resumes."""
        if self.app_id is None:
            raise InvalidInputError(f"the connection to {self.table} has no app_id")
        done = self._warehouse.metastore.app_versions(self.table, self.app_id)
        return done[0].version if done else None

    def begin(self) -> int:
        """Start the batch's next transaction (opening a new batch when this one is used
        up); returns its txn id."""
        self._check_usable()
        if self._current is not None:
            raise TransactionStateError(
                f"transaction {self._current.txn_id} on {self.table} is still open: commit or "
                "abort it before the next begin()")
        if not self._unused:
            opened = self._warehouse.metastore.open_transaction_batch(
                self.batch_size, user=current_user(), host=socket.gethostname(),
                writes=self._writes)
            with self._guard:
                self._unused = opened
        # the schema this transaction's rows are checked against (``write``) and written
        # with: another client's add_columns since the last begin() is taken now
        self._table.check_exists()
        with self._guard:
            info = self._unused.pop(0)
        self._current = TransactionCore.of_batch(self._warehouse, info, self._writes)
        return info.txn_id

    def write(self, rows: Any) -> None:
        """Add rows (a pyarrow Table or RecordBatch, a pandas DataFrame) to the open
        transaction. They are checked against the table's schema now and written at
        ``commit``; partitioned tables route them by their partition columns as ``insert``
        does (with ``partition=``, the columns may be left out)."""
        self._require_txn()
        where = f"table {self.table}"
        table = self._with_static_columns(to_arrow_table(rows, where))
        refuse_zone_drop(table, self._table.schema, where=where)
        table = conform(table, self._table.schema, where=where, omitted=omittable(
            self._table.schema, self._partition_names()))
        if self._static is not None:
            strays = [p.path for p in split_partitions(table, self._partition_names())
                      if p.path != self._static]
            if strays:
                raise InvalidInputError(
                    f"rows for partition(s) {strays} of {self.table} written to a streaming "
                    f"connection of partition {self._static!r}")
        self._pending.append(table)

    def commit(self, *, version: int | None = None) -> WriteResult:
        """Write the transaction's rows (one ``delta_w_w_0000`` per partition) and commit.
        With ``app_id``, ``version`` is required: a version the table holds already (or a
        lower one) is skipped, the transaction aborted and nothing written
        (``skipped=True``, its ``txn_id`` the transaction that committed the version)."""
        txn = self._require_txn()
        if (self.app_id is None) != (version is None):
            raise InvalidInputError(
                f"a commit on {self.table} takes a version exactly when the connection has "
                f"an app_id (app_id={self.app_id!r}, version={version!r})")
        if self.app_id is not None:
            # refused while the transaction and its rows are still the caller's to commit
            check_app_version(self.app_id, version)
        rows = pa.concat_tables(self._pending) if self._pending else \
            self._table.schema.empty_table()
        self._current, self._pending = None, []
        if rows.num_rows == 0 and self.app_id is None:
            txn.ran(StatementSummary(self.table, STREAMING_INSERT))
            info = txn.commit()
            return WriteResult(txn.txn_id, info.write_ids.get(self.table), "insert",
                               committed=True)
        target = TableHandle.open(self._warehouse, self.table, txn)
        self._refuse_changed_metadata(txn, target)
        result = writes.insert(target, rows, "insert", app_id=self.app_id, version=version,
                               statement=STREAMING_INSERT)
        if result.skipped:
            txn.abort(f"version {version} of app_id {self.app_id!r} is already committed")
            return result
        txn.commit()
        return dataclasses.replace(result, committed=True)

    def abort(self) -> None:
        """Abort the open transaction: none of its rows is written."""
        txn = self._require_txn()
        self._current, self._pending = None, []
        txn.abort("aborted by the streaming writer")

    def close(self) -> None:
        """Abort the open transaction and the batch's unused ones (as Hive's close does),
        and stop heartbeating. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._heartbeat.join(timeout=5)
        failures: list[AcidStoreError] = []
        if self._current is not None:
            txn, self._current, self._pending = self._current, None, []
            try:
                txn.abort("the streaming connection closed")
            except AcidStoreError as exc:
                failures.append(exc)
        with self._guard:
            unused, self._unused = self._unused, []
        for info in unused:
            try:
                self._warehouse.metastore.abort(info.txn_id, "unused: the streaming "
                                                "connection closed")
            except AcidStoreError as exc:  # it times out instead, as a killed writer's does
                failures.append(exc)
        if failures:
            raise failures[0]

    def __enter__(self) -> StreamingConnection:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            with contextlib.suppress(AcidStoreError):  # the caller's exception matters more
                self.close()

    # --- internals -----------------------------------------------------------------------------

    def _beat(self, interval: float) -> None:
        """Keep the batch's open transactions alive (one metastore call for all of them);
        one that timed out anyway fails at its commit, which is where the writer learns."""
        while not self._stop.wait(interval):
            with self._guard:
                ids = [info.txn_id for info in self._unused]
            current = self._current
            if current is not None:
                ids.append(current.txn_id)
            if ids:
                with contextlib.suppress(AcidStoreError):
                    self._warehouse.metastore.heartbeat_batch(ids)

    def _refuse_changed_metadata(self, txn: TransactionCore, target: TableHandle) -> None:
        """Abort ``txn`` when the table changed since its ``begin`` (``target``: the table as
        the commit finds it). Its rows were checked against the schema of its begin; the
        insert would check them against today's and fail on a column another client added
        (``SchemaMismatchError``, as if the writer had sent wrong rows). It is the conflict
        every statement planned against an older schema gets, ``MetadataChangedError``:
        nothing landed, and the next transaction takes the new schema."""
        began = self._table.info
        now = target.info
        if (now.table_id, now.metadata_version) == (began.table_id, began.metadata_version):
            return
        error: AcidStoreError
        if now.table_id != began.table_id:
            error = TableNotFoundError(f"table {self.table} was dropped (and re-created) "
                                       f"since transaction {txn.txn_id} began")
        else:
            error = MetadataChangedError(
                f"txnid:{txn.txn_id} checked its rows against {self.table} as of metadata "
                f"version {began.metadata_version}, but its metadata changed since (now "
                f"version {now.metadata_version}: columns were added, renamed or dropped); "
                "nothing was "
                "committed: write the rows again in the next transaction",
                txn_id=txn.txn_id, table=self.table)
        txn.abort(str(error))
        raise error

    def _check_usable(self) -> None:
        if self._closed:
            raise TransactionStateError(f"the streaming connection to {self.table} is closed")

    def _require_txn(self) -> TransactionCore:
        self._check_usable()
        if self._current is None:
            raise TransactionStateError(
                f"no transaction is open on the streaming connection to {self.table}: call "
                "begin() first")
        return self._current

    def _partition_names(self) -> list[str]:
        return list(self._table.info.partition_schema.names)

    def _static_partition(self, partition: Mapping[str, str | None] | None) -> str | None:
        """The relative directory of the connection's fixed partition ("" for an
        unpartitioned table), or None when rows are routed by their values."""
        names = self._partition_names()
        if not names:
            if partition:
                raise InvalidInputError(f"{self.table} is not partitioned; partition must "
                                        "be None")
            return ""
        if partition is None:
            return None
        if not isinstance(partition, Mapping):
            raise InvalidInputError(f"partition must be a mapping of {names} to values, got "
                                    f"{partition!r}")
        lowered = {str(k).lower(): v for k, v in partition.items()}
        if set(lowered) != {n.lower() for n in names}:
            raise InvalidInputError(
                f"partition {dict(partition)} must give exactly {names} of {self.table}")
        self._static_values = {n: lowered[n.lower()] for n in names}
        # the directory the rows' own values route to (``p=1`` for {"p": "01"}), which the
        # rows are checked against: spelled otherwise, every row was refused as a stray
        return partition_path(names, list(canonical_partition_values(
            self._table.info.partition_schema, names, [lowered[n.lower()] for n in names],
            where=f"streaming connection to {self.table}")))

    def _with_static_columns(self, rows: pa.Table) -> pa.Table:
        """Rows of a fixed partition may leave its columns out: they are filled in."""
        if not self._static:
            return rows
        present = {n.lower() for n in rows.column_names}
        for field in self._table.info.partition_schema:
            if field.name.lower() not in present:
                value = self._static_values[field.name]
                column = pa.array([value] * rows.num_rows, pa.string())
                rows = rows.append_column(field.name, column.cast(field.type))
        return rows


