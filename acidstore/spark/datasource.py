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
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from acidstore.engine import idempotent
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.task_writes import TaskPlan, TaskResult, task_plan
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import InvalidInputError, SchemaMismatchError, UnsupportedOperationError
from acidstore.format.writeids import ValidTxnList
from acidstore.metastore import Operation
from acidstore.spark.leases import leased_plan
from acidstore.spark.options import Target, open_target, target_of
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
from acidstore.spark.staged_writes import abort_staged, commit_staged, write_staged
from acidstore.spark.stream_options import (
    is_stream_read,
    refuse_stream_options,
    stream_read_options,
)
from acidstore.spark.stream_sink import AcidStreamWriter
from acidstore.spark.stream_source import AcidStreamReader, stream_schema
from acidstore.spark.typed_errors import reported_errors
from acidstore.spark.write_columns import add_new_columns, check_columns

__all__ = ["FORMAT", "SQL_ACCESS", "AcidDataSource", "refuse_catalog_table"]

FORMAT = "acidstore"


class AcidDataSource(DataSource):
    """``format("acidstore")``: options name the table (see README, "Spark options")."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        """The table's columns as a read gives them (Spark asks batch and stream reads
        alike: a stream read's own options give its columns)."""
        with reported_errors():
            refuse_catalog_table(self.options)
            # a bad option fails before anything opens
            streamed = stream_read_options(self.options) if is_stream_read(self.options) \
                else None
            options = read_options(self.options) if streamed is None else None
            wh, table = open_target(target_of(self.options))
            try:
                if streamed is not None:
                    return stream_schema(table, streamed)
                assert options is not None
                return read_schema(table, options)
            finally:
                wh.close()

    def reader(self, schema: StructType) -> DataSourceReader:
        with reported_errors():
            refuse_catalog_table(self.options)
            refuse_stream_options(self.options, target_of(self.options).describe())
            return AcidReader(dict(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        """``spark.readStream.format("acidstore")`` (``stream_source``)."""
        with reported_errors():
            refuse_catalog_table(self.options)
            options = stream_read_options(self.options)
            wh, table = open_target(target_of(self.options))
            try:
                emitted = stream_schema(table, options)
            finally:
                wh.close()
            if schema != emitted:
                raise SchemaMismatchError(
                    f"a stream of {table.name} emits {emitted.simpleString()}, not the given "
                    f"{schema.simpleString()}: leave .schema() out (select columns from the "
                    "stream's DataFrame instead)")
            return AcidStreamReader(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool  # noqa: N802
                     ) -> DataSourceStreamArrowWriter:
        """``df.writeStream.format("acidstore")`` (``stream_sink``): append only."""
        with reported_errors():
            refuse_catalog_table(self.options)
            if overwrite:
                raise UnsupportedOperationError(
                    f"outputMode('complete') into {target_of(self.options).describe()}: a "
                    "streaming write to an acidstore table appends each micro-batch "
                    "(outputMode('append')); for upserts, use foreachBatch with "
                    "AcidTable.merge (docs/streaming.md)")
            return AcidStreamWriter(self.options, schema)

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
    """A fresh snapshot's read tasks, each with a lease of its own (``leases.leased_plan``)."""
    ttl = options.lease_seconds
    planned = leased_plan(table, options.as_of, ttl,
                          lambda snapshot: plan_read(table, options, schema, snapshot)[0])
    return [dataclasses.replace(task, target=target, table=table.name, lease=lease,
                                lease_seconds=ttl) for task, lease in planned]


class _Message(WriterCommitMessage):
    def __init__(self, output: TaskResult) -> None:
        self.output = output


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
        return AcidWriter(target, plan)
    finally:
        wh.close()


class AcidWriter(DataSourceArrowWriter):
    """Executors write into staging; the driver-side commit worker publishes and commits
    (``staged_writes``)."""

    def __init__(self, target: Target, plan: TaskPlan) -> None:
        self._target = target
        self._plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        freeze_long_lived()
        with reported_errors():
            return _Message(write_staged(self._target, self._plan, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        with reported_errors():
            commit_staged(self._target, self._plan,
                          [m.output for m in messages if isinstance(m, _Message)])

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        with reported_errors():
            abort_staged(self._target, self._plan, "the Spark job failed")


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
