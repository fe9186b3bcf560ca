"""The ``acidstore`` Spark data source (PySpark's Python Data Source API).

``spark.read.format("acidstore")`` plans a snapshot read on the driver and streams Arrow
batches from executors; ``df.write.format("acidstore").mode("append" | "overwrite")`` opens a
transaction on the driver, lets executors write bucket files into staging, and commits once.

Spark runs these hooks in separate Python worker processes (planning the write, the tasks, the
commit), so the transaction is carried between them by id: the commit worker attaches to it.
Filters are not taken through ``pushFilters``: in PySpark 4.x a DataFrame may reuse a plan
whose pushed filters belonged to another query, so pushed filters could drop rows; the
``filter`` option (and ``AcidTable.toDF(filter=...)``) is the pushdown that is always safe.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from acidstore import idempotent
from acidstore.errors import InvalidInputError, SchemaMismatchError
from acidstore.metastore import Operation
from acidstore.spark.locate import Target, heartbeat, open_target, target_of
from acidstore.spark.reading import (
    ReadTask,
    plan_read,
    read_options,
    read_schema,
    read_snapshot,
    run_read,
    write_app,
)
from acidstore.spark.writing import (
    TaskOutput,
    WriteJob,
    publish,
    remove_staging,
    run_write,
    write_job,
)
from acidstore.transaction import Transaction
from acidstore.writeids import ValidTxnList

__all__ = ["AcidDataSource", "check_columns", "register"]

FORMAT = "acidstore"


class AcidDataSource(DataSource):
    """``format("acidstore")``: options name the table (see README, "Spark options")."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        options = read_options(self.options)  # a bad option fails before anything is opened
        wh, table = open_target(target_of(self.options))
        try:
            return read_schema(table, options)
        finally:
            wh.close()

    def reader(self, schema: StructType) -> DataSourceReader:
        return AcidReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        app = write_app(self.options)
        return _open_writer(target_of(self.options), schema, overwrite, app)


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
        options = read_options(self._options)
        wh, table = open_target(target_of(self._options))
        try:
            if options.snapshot is None:
                # leased before planning, so nothing planned can be cleaned away; the lease
                # outlives this worker (Spark may run the plan any time later), so it
                # expires instead of being released (option leaseSeconds)
                txns, write_ids, _ = table.leased_snapshot(
                    options.as_of, ttl_seconds=options.lease_seconds)
            else:
                txns, write_ids = read_snapshot(table, options)
            tasks, _ = plan_read(table, options, self._schema, (txns, write_ids))
        finally:
            wh.close()
        return [_ReadPartition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task: ReadTask = partition.value
        yield from run_read(task)


class _Message(WriterCommitMessage):
    def __init__(self, output: TaskOutput) -> None:
        self.output = output


def check_columns(table_schema: pa.Schema, schema: StructType, where: str) -> None:
    """Refuse a DataFrame whose columns are not the table's (by name, any case), before any
    task runs: the same SchemaMismatchError an embedded insert raises."""
    wanted = {n.lower() for n in table_schema.names}
    given = [f.name for f in schema.fields]
    unknown = [n for n in given if n.lower() not in wanted]
    missing = [n for n in table_schema.names if n.lower() not in {g.lower() for g in given}]
    if unknown or missing:
        raise SchemaMismatchError(
            f"the DataFrame does not match {where}: unknown column(s) {unknown}, missing "
            f"column(s) {missing} (the table has {table_schema.names})")


def _open_writer(target: Target, schema: StructType, overwrite: bool,
                 app: idempotent.AppWrite | None) -> DataSourceArrowWriter:
    wh, table = open_target(target)
    try:
        check_columns(table.schema, schema, table.name)
        if overwrite and table.info.bucket_by:
            raise InvalidInputError(
                f"mode('overwrite') of bucketed table {table.name} through df.write cannot "
                "route each bucket to one task; use AcidTable.insert(df, overwrite=True)")
        operation: Operation = "overwrite" if overwrite else "insert"
        if idempotent.skipped(wh.metastore, table.name, app, operation) is not None:
            return _SkippedWriter()
        txn = Transaction(wh, heartbeat_interval=None)
        try:
            idempotent.claim(txn, table.name, app)
            job = write_job(table, txn, (operation,))
        except BaseException:
            txn.abort("planning the Spark write failed")
            raise
        return AcidWriter(target, job, str(txn.snapshot))
    finally:
        wh.close()


class AcidWriter(DataSourceArrowWriter):
    """Executors write into staging; the driver-side commit worker publishes and commits."""

    def __init__(self, target: Target, job: WriteJob, snapshot: str) -> None:
        self._target = target
        self._job = job
        self._snapshot = snapshot

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        attempt = context.taskAttemptId() if context is not None else os.getpid()
        batches = _kept_alive(iterator, lambda: heartbeat(self._target, self._job.txn_id))
        return _Message(run_write(self._job, batches, task, attempt))

    def _attached(self) -> tuple[Any, Transaction]:
        wh, _ = open_target(self._target)
        return wh, Transaction.attach(wh, self._job.txn_id,
                                      ValidTxnList.parse(self._snapshot))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        wh, txn = self._attached()
        try:
            outputs = [m.output for m in messages if isinstance(m, _Message)]
            try:
                publish(txn, self._job, outputs)
                txn.commit()
            except BaseException as exc:
                if txn.state == "open":
                    txn.abort(f"Spark commit failed: {type(exc).__name__}: {exc}")
                remove_staging(self._job)
                raise
        finally:
            wh.close()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        wh, txn = self._attached()
        try:
            txn.abort("the Spark job failed")
        finally:
            remove_staging(self._job)
            wh.close()


class _SkippedWriter(DataSourceArrowWriter):
    """The write of an application version (``txnAppId``/``txnVersion``) the table already
    holds: its tasks drop their rows; there is no transaction to commit or abort."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        return None

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        return None


HEARTBEAT_SECONDS = 60.0


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


def register(spark: SparkSession) -> None:
    """Make ``format("acidstore")`` available on ``spark`` (idempotent)."""
    spark.dataSource.register(AcidDataSource)

