"""The ``acidstore`` Spark data source (PySpark's Python Data Source API).

``spark.read.format("acidstore")`` plans a snapshot read on the driver and streams Arrow
batches from executors; ``df.write.format("acidstore").mode("append" | "overwrite")`` opens a
transaction on the driver, lets executors write bucket files into staging, and commits once.

Spark runs these hooks in separate Python worker processes (planning the write, the tasks, the
commit), so the transaction is carried between them by id: the commit worker attaches to it.
A ``save()`` in a driver that imported ``acidstore.spark`` (its hook, ``saving``) opens that
transaction in the user's driver process, which keeps it alive while the job runs and, if the
job fails, makes sure it is aborted and its staging area removed; the planning worker attaches
to it. Without the hook the planning worker opens it. Every hook runs inside
``reported_errors``, so that ``acidstore.spark.typed_error`` rebuilds an acidstore error it
raised from the text Spark hands the driver.
Filters are not taken through ``pushFilters``: in PySpark 4.x a DataFrame may reuse a plan
whose pushed filters belonged to another query, so pushed filters could drop rows; the
``filter`` option (and ``AcidTable.toDF(filter=...)``) is the pushdown that is always safe.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from acidstore.config import SPARK_HEARTBEAT_SECONDS
from acidstore.engine import idempotent
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.schema_change import add_columns
from acidstore.engine.task_writes import (
    TaskPlan,
    TaskResult,
    publish_tasks,
    remove_staging_of,
    task_plan,
    write_task,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import InvalidInputError, SchemaMismatchError, UnsupportedOperationError
from acidstore.format.writeids import ValidTxnList
from acidstore.metastore import Operation
from acidstore.spark.options import Target, heartbeat, open_target, target_of
from acidstore.spark.read_tasks import (
    ReadOptions,
    ReadTask,
    driver_transaction,
    merge_schema,
    plan_read,
    read_options,
    read_schema,
    read_snapshot,
    replaces_whole_table,
    run_read,
    write_app,
)
from acidstore.spark.schema_mapping import arrow_schema
from acidstore.spark.typed_errors import reported_errors
from acidstore.write.conform import omittable

__all__ = ["FORMAT", "SQL_ACCESS", "AcidDataSource", "add_new_columns", "check_columns",
           "refuse_catalog_table"]

FORMAT = "acidstore"


class AcidDataSource(DataSource):
    """``format("acidstore")``: options name the table (see README, "Spark options")."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        with reported_errors():
            refuse_catalog_table(self.options)
            options = read_options(self.options)  # a bad option fails before anything opens
            wh, table = open_target(target_of(self.options))
            try:
                return read_schema(table, options)
            finally:
                wh.close()

    def reader(self, schema: StructType) -> DataSourceReader:
        with reported_errors():
            refuse_catalog_table(self.options)
            return AcidReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        with reported_errors():
            refuse_catalog_table(self.options)
            app = write_app(self.options)
            target = target_of(self.options)
            if merge_schema(self.options):
                add_new_columns(target, schema)
            return _open_writer(target, schema, overwrite, app,
                                overwrite and replaces_whole_table(self.options),
                                owned=driver_transaction(self.options))


#: the table properties Spark adds when ``CREATE TABLE ... USING acidstore`` asks the source
#: for its schema (the user's options come twice: as given and as ``option.<name>``)
_CATALOG_PROPERTIES = ("provider", "owner")
SQL_ACCESS = ("CREATE TEMPORARY VIEW name USING acidstore OPTIONS (warehouse '...', "
              "table 'db.table' [, versionAsOf 'N'])")


def refuse_catalog_table(options: Mapping[str, str]) -> None:
    """Refuse a Spark SQL catalog table over the source where Spark defines it.

    PySpark 4.3 gives a Python data source the options of ``CREATE TABLE ... USING`` only
    while defining the table; its later reads and writes come with none, so the source could
    not tell which acidstore table they mean. A temporary view defined with ``USING`` keeps
    its options, and is the SQL access that works (README, "Spark SQL")."""
    if any(key.lower() in _CATALOG_PROPERTIES for key in options):
        raise UnsupportedOperationError(
            "CREATE TABLE ... USING acidstore is not supported: PySpark passes a Python data "
            "source's reads and writes of a catalog table without its options, so no query "
            f"of it could find the acidstore table. Define a view instead: {SQL_ACCESS}, or "
            "acidstore.spark.register_views(spark, warehouse)")
    if not options:
        raise UnsupportedOperationError(
            "format('acidstore') was given no options: name the table with .load('db.table') "
            "or .save('db.table') and .option('warehouse', ...), or give its directory. A "
            "table defined by CREATE TABLE ... USING acidstore (with a column list) reaches "
            "the source this way and cannot be read or written; drop it and define a view: "
            f"{SQL_ACCESS}")


class _ReadPartition(InputPartition):
    def __init__(self, task: ReadTask) -> None:
        super().__init__(task)
        self.task = task


class AcidReader(DataSourceReader):
    """Plans on the driver (``partitions``), reads on executors (``read``)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self._options = options
        self._schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        with reported_errors():
            options = read_options(self._options)
            target = target_of(self._options)
            wh, table = open_target(target)
            try:
                if options.snapshot is not None:  # pinned: its owner holds the lease
                    tasks, _ = plan_read(table, options, self._schema,
                                         read_snapshot(table, options))
                else:
                    tasks = _leased_tasks(target, table, options, self._schema)
            finally:
                wh.close()
        return [_ReadPartition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        task: ReadTask = partition.value
        with reported_errors():
            yield from run_read(task)


def _leased_tasks(target: Target, table: TableHandle, options: ReadOptions, schema: StructType
                  ) -> list[ReadTask]:
    """Plan a fresh snapshot's read tasks, each with a lease of its own that the task releases
    when it has read (``acidstore.spark.leases``). The snapshot is leased before anything is
    listed, so nothing planned can be cleaned away; that planning lease goes once the tasks'
    leases hold the snapshot."""
    metastore = table.metastore
    ttl = options.lease_seconds
    txns, write_ids, planning = table.leased_snapshot(options.as_of, ttl_seconds=ttl)
    taken: list[int] = []
    try:
        tasks, _ = plan_read(table, options, schema, (txns, write_ids))
        for _ in tasks:
            taken.append(metastore.acquire_lease(table.name, txns, write_ids, ttl))
    except BaseException:
        for lease in taken:
            metastore.release_lease(lease)
        raise
    finally:
        metastore.release_lease(planning)
    return [dataclasses.replace(task, target=target, table=table.name, lease=lease,
                                lease_seconds=ttl) for task, lease in zip(tasks, taken,
                                                                           strict=True)]


class _Message(WriterCommitMessage):
    def __init__(self, output: TaskResult) -> None:
        self.output = output


def check_columns(table_schema: pa.Schema, schema: StructType, where: str,
                  partition_columns: Sequence[str]) -> None:
    """Refuse a DataFrame whose columns are not the table's (by name, any case), before any
    task runs: the same SchemaMismatchError an embedded insert raises. Nullable columns that
    are not partition columns may be left out (the tasks write NULL, ``conform``)."""
    wanted = {n.lower() for n in table_schema.names}
    given = [f.name for f in schema.fields]
    unknown = [n for n in given if n.lower() not in wanted]
    optional = omittable(table_schema, partition_columns)
    missing = [n for n in table_schema.names
               if n.lower() not in {g.lower() for g in given} and n not in optional]
    if unknown or missing:
        raise SchemaMismatchError(
            f"the DataFrame does not match {where}: unknown column(s) {unknown}, missing "
            f"column(s) {missing} (the table has {table_schema.names}; only nullable columns "
            "that are not partition columns may be left out)"
            + ("; the write option mergeSchema=true adds the unknown columns to the table"
               if unknown else ""))


def add_new_columns(target: Target, schema: StructType) -> list[str]:
    """``mergeSchema``: add the columns of ``schema`` that the table lacks (any case), nullable
    and in the DataFrame's order, through ``engine.schema_change.add_columns`` (so writers
    that planned against the old schema fail with MetadataChangedError). Returns their
    names."""
    wh, table = open_target(target)
    try:
        have = {name.lower() for name in table.schema.names}
        new = [field for field in schema.fields if field.name.lower() not in have]
        if new:
            add_columns(table, pa.schema([f.with_nullable(True) for f in arrow_schema(
                StructType(new))]))
        return [field.name for field in new]
    finally:
        wh.close()


def _open_writer(target: Target, schema: StructType, overwrite: bool,
                 app: idempotent.AppWrite | None, whole_table: bool = False, *,
                 owned: tuple[int, ValidTxnList] | None = None) -> DataSourceArrowWriter:
    """The writer of one ``df.write``, in the transaction the driver opened for it
    (``owned``) or else in one opened here."""
    wh, table = open_target(target)
    try:
        check_columns(table.schema, schema, table.name, table.info.partition_schema.names)
        if overwrite and table.info.bucket_by:
            raise InvalidInputError(
                f"mode('overwrite') of bucketed table {table.name} through df.write cannot "
                "route each bucket to one task; use AcidTable.insert(df, overwrite=True)")
        operation: Operation = "overwrite" if overwrite else "insert"
        if idempotent.skipped(wh.metastore, table.name, app, operation) is not None:
            return _SkippedWriter()
        txn = TransactionCore.attach(core_of(wh), *owned) if owned is not None else \
            TransactionCore(core_of(wh), heartbeat_interval=None)
        try:
            idempotent.claim(txn, table.name, app)
            plan = task_plan(table, txn, operation, emptied=wh.metastore.list_partitions(
                table.name) if whole_table else ())
        except BaseException:
            txn.abort("planning the Spark write failed")
            raise
        return AcidWriter(target, plan, str(txn.snapshot))
    finally:
        wh.close()


class AcidWriter(DataSourceArrowWriter):
    """Executors write into staging; the driver-side commit worker publishes and commits."""

    def __init__(self, target: Target, plan: TaskPlan, snapshot: str) -> None:
        self._target = target
        self._plan = plan
        self._snapshot = snapshot

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        freeze_long_lived()
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        attempt = context.taskAttemptId() if context is not None else os.getpid()
        batches = _kept_alive(iterator, lambda: heartbeat(self._target, self._plan.txn_id))
        with reported_errors():
            return _Message(write_task(self._plan, batches, task, attempt))

    def _attached(self) -> tuple[Any, TableHandle, TransactionCore]:
        wh, table = open_target(self._target)
        txn = TransactionCore.attach(core_of(wh), self._plan.txn_id,
                                     ValidTxnList.parse(self._snapshot))
        return wh, TableHandle(table.core, table.info, txn), txn

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        with reported_errors():
            self._commit(messages)

    def _commit(self, messages: list[WriterCommitMessage | None]) -> None:
        wh, table, txn = self._attached()
        try:
            results = [m.output for m in messages if isinstance(m, _Message)]
            try:
                publish_tasks(table, txn, self._plan, results)
                txn.commit()
            except BaseException as exc:
                if txn.state == "open":
                    txn.abort(f"Spark commit failed: {type(exc).__name__}: {exc}")
                raise
            finally:  # what is left there never becomes visible: failed attempts' files
                self._remove_staging()
        finally:
            wh.close()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        with reported_errors():
            wh, _, txn = self._attached()
            try:
                txn.abort("the Spark job failed")
            finally:
                self._remove_staging()
                wh.close()

    def _remove_staging(self) -> None:
        target = self._plan.target
        remove_staging_of(target.filesystem, target.location, self._plan.txn_id)


class _SkippedWriter(DataSourceArrowWriter):
    """The write of an application version (``txnAppId``/``txnVersion``) the table already
    holds: its tasks drop their rows; there is no transaction to commit or abort."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        freeze_long_lived()
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        return None

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        return None


HEARTBEAT_SECONDS = SPARK_HEARTBEAT_SECONDS


def _kept_alive(batches: Iterator[pa.RecordBatch], beat: Callable[[], None]
                ) -> Iterator[pa.RecordBatch]:
    """``batches``, heartbeating the transaction at the start and then every minute (well
    inside the 300 s default timeout) while Spark feeds the task."""
    beat()
    last = time.monotonic()
    for batch in batches:
        if time.monotonic() - last > HEARTBEAT_SECONDS:
            beat()
            last = time.monotonic()
        yield batch

