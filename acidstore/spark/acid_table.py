"""``AcidTable``: a table for Spark, shaped like delta-spark's ``DeltaTable``.

Reads are DataFrames over the ``acidstore`` data source. Writes run in a transaction that this
(driver) process owns: the rows a DELETE, UPDATE or MERGE changes are read at the
transaction's snapshot with their ROW__IDs, Spark computes the delete events and new rows,
executors write them (one statement id per task), and the driver publishes and commits once,
with the same row-level conflict rules as the embedded tables.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)

from acidstore.api.pairing import chosen_metastore
from acidstore.api.warehouse import Warehouse
from acidstore.engine import idempotent, writes
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_match import MergeSpec
from acidstore.engine.publish import publish_change
from acidstore.engine.restore import run_restore
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import ChangeKind
from acidstore.engine.task_writes import (
    DELETE_COLUMN,
    INSERT_COLUMN,
    TaskPlan,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import InvalidInputError, required_condition
from acidstore.format.orc.schema import ROW_ID_COLUMN
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read.changes import changes as change_feed
from acidstore.spark import leases, merge_shuffle
from acidstore.spark.conditions import Condition, condition_column, referenced_columns, sql_text
from acidstore.spark.datasource import FORMAT
from acidstore.spark.jobs import run_units
from acidstore.spark.jvm_read import jvm_read
from acidstore.spark.native import native_read
from acidstore.spark.options import Target, open_target, table_path
from acidstore.spark.read_tasks import DEFAULT_LEASE_SECONDS
from acidstore.spark.schema_mapping import spark_schema
from acidstore.spark.session import register
from acidstore.spark.settle import settled_jobs
from acidstore.spark.statements import insert_frame, task_statement
from acidstore.spark.typed_errors import spark_errors, spark_write

if TYPE_CHECKING:
    from acidstore.spark.merge_statement import AcidMergeBuilder

__all__ = ["AcidTable"]

class _Held:
    """The warehouse connection of an ``AcidTable`` and its aliases (``alias`` copies the
    table, not the connection), closed once none of them is left."""

    def __init__(self, wh: Warehouse) -> None:
        self.wh = wh
        weakref.finalize(self, wh.close)


class AcidTable:
    """An acidstore table seen from Spark. Build with ``forName`` or ``forPath``."""

    def __init__(self, spark: SparkSession, target: Target, alias: str | None = None) -> None:
        register(spark)
        self._spark = spark
        self._target = target
        self._alias = alias
        # one connection for the table's life, shared with its aliases and closed when the
        # last of them is collected: each call takes a fresh handle from it, so a drop or
        # another client's add_columns is seen, without connecting again
        wh, handle = open_target(target)  # TableNotFoundError now if there is none
        self._held = _Held(wh)
        self.name = handle.name

    @property
    def _wh(self) -> Warehouse:
        return self._held.wh

    @classmethod
    def forName(cls, spark: SparkSession, name: str, *, warehouse: str,  # noqa: N802
                metastore: str | None = None) -> AcidTable:
        """The table ``db.name`` of ``warehouse`` (TableNotFoundError if there is none)."""
        return cls(spark, Target(str(warehouse), chosen_metastore(metastore), name, None))

    @classmethod
    def forPath(cls, spark: SparkSession, path: str, *,  # noqa: N802
                warehouse: str | None = None, metastore: str | None = None) -> AcidTable:
        """The table whose directory is ``path`` (its warehouse is found above it)."""
        return cls(spark, Target(str(warehouse) if warehouse else None,
                                 chosen_metastore(metastore), None,
                                 table_path(str(path))))

    @contextmanager
    def _table(self) -> Iterator[TableHandle]:
        """The table's current handle on this AcidTable's connection."""
        yield TableHandle.open(core_of(self._wh), self.name)

    def alias(self, alias: str) -> AcidTable:
        """This table under an alias, for the conditions of ``merge``."""
        copy = object.__new__(AcidTable)
        copy.__dict__.update(self.__dict__)
        copy._alias = alias
        return copy

    # --- reads ---------------------------------------------------------------------------------

    def _reader(self, options: Mapping[str, str]) -> DataFrame:
        reader = self._spark.read.format(FORMAT).option(
            "minPartitions", str(self._spark.sparkContext.defaultParallelism))
        for key, value in {**self._target.options(), **options}.items():
            if key != "path":
                reader = reader.option(key, value)
        return reader.load(self._target.options()["path"])

    def toDF(self, columns: Sequence[str] | None = None,  # noqa: N802
             filter: str | None = None, as_of: int | datetime | None = None,
             with_row_id: bool = False) -> DataFrame:
        """The table at a snapshot taken now (or ``as_of`` a write id or time); every action
        on the DataFrame reads that snapshot. acidstore's Java reader reads the event files
        when it can (``acidstore.spark.jvm_read``), else Spark's own ORC reader if
        ``spark.acidstore.nativeRead`` is on (``acidstore.spark.native``); otherwise, and with
        ``filter`` (SQL the embedded engine evaluates; partitions it rules out are never
        opened), the acidstore data source reads them in Python workers."""
        with spark_errors(f"read of {self.name}"), self._table() as table:
            # leased before anything is listed and held by this process (Spark may run the
            # plan any time later): released when the session stops, else it expires
            txns, write_ids, lease = table.leased_snapshot(
                as_of, ttl_seconds=DEFAULT_LEASE_SECONDS)
            try:
                df = None
                if filter is None:
                    df = jvm_read(self._spark, table, (txns, write_ids), columns,
                                  with_row_id) or native_read(
                        self._spark, table, (txns, write_ids), columns, with_row_id)
            except BaseException:
                table.metastore.release_lease(lease)
                raise
            leases.hold(self._target, lease)  # released at spark.stop() or process exit
        if df is None:
            options = {"snapshotTxns": str(txns), "snapshotWriteIds": str(write_ids)}
            if columns is not None:
                options["columns"] = ",".join(columns)
            if filter is not None:
                options["filter"] = filter
            if with_row_id:
                options["withRowId"] = "true"
            with spark_errors(f"read of {self.name}"):
                df = self._reader(options)
        return df.alias(self._alias) if self._alias else df

    def snapshot(self) -> ValidWriteIdList:
        """The ValidWriteIdList a read would take now."""
        with self._table() as table:
            return table.snapshot()[1]

    def history(self) -> DataFrame:
        """One row per committed write id and per compaction (as ``Table.history``; a
        compaction's ``write_id`` is null)."""
        with self._table() as table:
            history = table.history()
        return self._spark.createDataFrame(history, schema=spark_schema(history.schema))

    def changes(self, start_write_id: int, end_write_id: int) -> DataFrame:
        """The change feed of write ids ``start..end`` (as ``Table.changes``). Read on the
        driver, from the event files of that range only, then handed to Spark: a feed is the
        rows a few writes changed, not the table."""
        with self._table() as table:
            feed = change_feed(table, start_write_id, end_write_id)
        return self._spark.createDataFrame(feed, schema=spark_schema(feed.schema))

    # --- writes --------------------------------------------------------------------------------

    def _snapshot_rows(self, txn: TransactionCore, table: TableHandle,
                       columns: Sequence[str] | None = None) -> DataFrame:
        """The table at ``txn``'s snapshot with ROW__IDs: the rows a statement may change
        (only ``columns`` of them decoded, when given)."""
        options = {"snapshotTxns": str(txn.snapshot),
                   "snapshotWriteIds": str(txn.write_ids(table.name)), "withRowId": "true"}
        if columns is not None:
            options["columns"] = ",".join(columns)
        return self._reader(options)

    def _statement(self, kind: ChangeKind,
                   changes: Callable[[TransactionCore, TableHandle, TaskPlan], DataFrame],
                   *, source_rows: int = 0) -> WriteResult:
        """One statement whose rows Spark computes (``statements.task_statement``)."""
        return task_statement(self._spark, self._wh, self.name, kind, changes,
                              source_rows=source_rows)

    def insert(self, data: DataFrame, *, overwrite: bool = False, app_id: str | None = None,
               version: int | None = None, merge_schema: bool = False,
               partition_overwrite_mode: Literal["dynamic", "static"] = "dynamic"
               ) -> WriteResult:
        """Append ``data`` (or, with ``overwrite``, replace the partitions it holds, the whole
        table if unpartitioned or with ``partition_overwrite_mode="static"``), written by
        Spark's executors in one transaction. With ``app_id`` and ``version``, idempotent as
        ``Table.insert``: a version the table holds (or a lower one) runs no Spark job and
        returns a result that says ``skipped``. With ``merge_schema`` (Delta's
        ``mergeSchema``), columns of ``data`` the table lacks are added to it first
        (``Table.add_columns``: rows written before read them as NULL)."""
        return insert_frame(self._spark, self._wh, self._target, self.name, data,
                            overwrite=overwrite,
                            app=idempotent.requested(app_id, version),
                            merge_schema=merge_schema,
                            partition_overwrite_mode=partition_overwrite_mode)

    def _core_statement(self, kind: ChangeKind, condition: str | None = None,
                        assignments: Mapping[str, str] | None = None,
                        merge: MergeSpec | None = None) -> WriteResult:
        """DELETE, UPDATE or MERGE through the statement core: the driver plans units at the
        transaction's snapshot, each Spark task runs its share in a Python worker (decoding only
        the columns the statement needs and writing its buckets' files), and only counts,
        directories, deleted ROW__IDs (and a MERGE's matched source rows) come back to
        commit. No table data enters the JVM."""
        return self._committed(f"{kind.upper()} of {self.name}", lambda txn, table: (
            writes.run_statement(table, txn, kind, predicate=condition, assignments=assignments,
                                merge=merge, run=lambda units: run_units(self._spark, units))))

    def _shuffled_merge(self, spec: MergeSpec, source: DataFrame, on: Column) -> WriteResult:
        """A MERGE whose source is too large to broadcast: planned and published as
        ``_core_statement`` does, the join done by Spark (``merge_shuffle``)."""
        def body(txn: TransactionCore, table: TableHandle) -> WriteResult:
            planned = writes.plan_change(table, txn, "merge", None, merge=spec)
            units, outcomes, count = merge_shuffle.shuffled_merge(
                self._spark, txn, table, spec, source=source, on=on, units=planned)
            return publish_change(table, txn, "merge", units, outcomes, source_rows=count)

        return self._committed(f"MERGE into {self.name}", body)

    def _committed(self, what: str, body: Callable[[TransactionCore, TableHandle], WriteResult]
                   ) -> WriteResult:
        """``body`` in a transaction of its own, committed when it returns: its Spark jobs
        end before a failure aborts the transaction (``settle``), Spark's errors typed (a
        failed job as ``SparkJobFailedError``, once the transaction is aborted)."""
        core = core_of(self._wh)
        # the transaction's block ends (aborting it) before spark_write types the error
        with spark_write(what, self.name) as attempt, TransactionCore.begin(core) as txn:
            attempt.txn = txn
            table = TableHandle.open(core, self.name, txn)
            with settled_jobs(self._spark, what), spark_errors(what):
                result = body(txn, table)
        return dataclasses.replace(result, committed=True)

    def delete(self, condition: Condition | None = None) -> WriteResult:
        """Delete the rows matching ``condition`` (``"true"`` for every row: a forgotten
        condition is refused, not read as "all"). A SQL string, or a Column that says the same
        in SQL (``acidstore.spark.columns``), runs through the statement core as embedded; any
        other Column through Spark's DataFrames."""
        required_condition(condition, f"DELETE from {self.name}")
        text = sql_text(condition)
        if text is not None:
            return self._core_statement("delete", text)
        where = f"DELETE from {self.name}"
        assert condition is not None
        predicate = condition_column(condition, where, {})

        def changes(txn: TransactionCore, table: TableHandle, plan: TaskPlan) -> DataFrame:
            # a delete event needs the ROW__ID and partition: decode only what the condition
            # reads besides (Python data sources get no column pruning from Spark)
            parts = list(table.info.partition_schema.names)
            wanted = referenced_columns(condition, table.schema.names) if predicate is not None \
                else []
            rows = self._snapshot_rows(txn, table, None if wanted is None else sorted(
                {*wanted, *parts}, key=table.schema.names.index))
            if predicate is not None:
                rows = rows.filter(predicate)
            return rows.select(*[F.col(p) for p in parts],
                               F.col(ROW_ID_COLUMN).alias(DELETE_COLUMN))

        return self._statement("delete", changes)

    def update(self, condition: Condition | None = None,
               set: Mapping[str, Condition] | None = None, *,
               new_values: Mapping[str, Any] | None = None) -> WriteResult:
        """Set columns of the rows matching ``condition`` (``"true"`` for every row): ``set``
        to SQL expressions (or Columns) of the old row, ``new_values`` to Python values (no
        SQL quoting, as the embedded ``Table.update``)."""
        where = f"UPDATE of {self.name}"
        required_condition(condition, where)
        with self._table() as table:
            clause = writes.set_clause(table, set, new_values, "update")
            if not clause:
                raise InvalidInputError("update needs at least one column to set")
            given = {writes.updatable_column(table, name): value
                     for name, value in clause.items()}
            scope = {"": table.schema}
        texts = {name: sql_text(value) for name, value in given.items()}
        predicate_text = sql_text(condition)
        if predicate_text is not None and all(t is not None for t in texts.values()):
            return self._core_statement("update", predicate_text,
                                        {name: str(t) for name, t in texts.items()})
        assert condition is not None
        values = {name: condition_column(value, where, scope) for name, value in given.items()}
        predicate = condition_column(condition, where, scope)

        def changes(txn: TransactionCore, table: TableHandle, plan: TaskPlan) -> DataFrame:
            rows = self._snapshot_rows(txn, table)
            if predicate is not None:
                rows = rows.filter(predicate)
            return rows.select(*[values[c].alias(c) if c in values else F.col(c)
                                 for c in table.schema.names],
                               F.col(ROW_ID_COLUMN).alias(DELETE_COLUMN),
                               F.lit(True).alias(INSERT_COLUMN))

        return self._statement("update", changes)

    def restore(self, version: int | datetime) -> WriteResult:
        """Delta's RESTORE: the rows become those of ``version`` (a committed write id, or a
        moment), as ``toDF(as_of=version)`` reads them, in a new commit; as
        ``Table.restore``, its units run as Spark tasks."""
        return self._committed(f"RESTORE of {self.name}", lambda txn, table: run_restore(
            table, txn, version, run=lambda units: run_units(self._spark, units)))

    def restoreToVersion(self, version: int) -> WriteResult:  # noqa: N802
        """delta-spark's name for ``restore(version)`` with a write id."""
        return self.restore(version)

    def restoreToTimestamp(self, timestamp: datetime | str) -> WriteResult:  # noqa: N802
        """delta-spark's name for ``restore`` with a moment: a datetime, or an ISO date-time
        string (without a zone: local time, as ``asOf`` reads it)."""
        if isinstance(timestamp, str):
            try:
                timestamp = datetime.fromisoformat(timestamp)
            except ValueError:
                raise InvalidInputError(
                    f"restoreToTimestamp of {self.name}: {timestamp!r} is not an ISO "
                    "date-time (e.g. '2026-11-22 10:00:00')") from None
        return self.restore(timestamp)

    def merge(self, source: DataFrame, condition: Condition) -> AcidMergeBuilder:
        """Start a MERGE of ``source`` into this table (alias both for the condition)."""
        from acidstore.spark.merge_statement import AcidMergeBuilder

        return AcidMergeBuilder(self, source, condition)

    # --- used by the merge builder ---------------------------------------------------------------

    def _merge_statement(self, changes: Callable[[DataFrame, TableHandle], DataFrame],
                         source_rows: int) -> WriteResult:
        def body(txn: TransactionCore, table: TableHandle, plan: TaskPlan) -> DataFrame:
            target = self._snapshot_rows(txn, table)
            return changes(target.alias(self._alias) if self._alias else target, table)

        return self._statement("merge", body, source_rows=source_rows)

    def __repr__(self) -> str:
        return f"AcidTable({self.name!r})"
