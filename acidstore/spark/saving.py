"""``df.write.format("acidstore")...save(...)`` the way delta-spark users write.

Spark accepts only ``append`` and ``overwrite`` from a Python data source, refuses
``partitionBy`` on an existing one and ``bucketBy`` on ``save()``, all in the JVM before the
source sees the write. So importing ``acidstore.spark`` wraps ``DataFrameWriter.save``; for
format ``acidstore`` (any other format goes straight through) it applies Delta's rules first:

- no ``.mode()`` is Delta's default ``errorifexists``: a table that does not exist is created
  from the DataFrame's schema and written; an existing one is a ``TableExistsError``.
  ``ignore`` writes nothing to an existing table.
- a table that does not exist is created by any mode, with the DataFrame's columns (nullable),
  ``partitionBy(...)`` as its partition columns and ``bucketBy(n, ...)`` as its buckets. It
  must be named (``save("db.table")`` with the ``warehouse`` option) in a warehouse that
  exists; if the write fails, the table it created is dropped again.
- on an existing table ``partitionBy``/``bucketBy`` may repeat the table's layout (Delta
  allows that too) and anything else is refused with the table's layout in the message.

Then the rows go through the data source with ``append`` or ``overwrite``, in a transaction
this driver process opens, keeps alive and, if the job fails, aborts; a failure is raised as
acidstore's typed error (``acidstore.spark.typed_errors.spark_write``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
from pyspark import SparkContext
from pyspark.sql import DataFrame, DataFrameWriter
from pyspark.sql.datasource import CaseInsensitiveDict

from acidstore.api.connect import connect
from acidstore.engine import idempotent
from acidstore.engine.core import core_of
from acidstore.engine.task_writes import remove_staging_of
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import (
    AcidStoreError,
    InvalidInputError,
    TableExistsError,
    TableNotFoundError,
)
from acidstore.spark.options import Target, open_target, target_of
from acidstore.spark.read_tasks import (
    DRIVER_TXN_OPTIONS,
    merge_schema,
    replaces_whole_table,
    write_app,
)
from acidstore.spark.schema_mapping import arrow_schema
from acidstore.spark.settle import settled_jobs
from acidstore.spark.typed_errors import spark_write

__all__ = ["Layout", "check_layout", "hook_save", "option_list", "prepare_table", "scala_map"]

FORMAT = "acidstore"
_MARK = "__acidstore_hook__"
#: Spark's SaveMode names (``curmode``) -> what the data source is asked to do
_MODES = {"ErrorIfExists": "errorifexists", "Ignore": "ignore", "Append": "append",
          "Overwrite": "overwrite"}


@dataclass(frozen=True)
class Layout:
    """The ``partitionBy``/``bucketBy`` a writer was given (empty: none)."""

    partition_by: list[str]
    bucket_by: list[str]
    buckets: int

    def given(self) -> bool:
        return bool(self.partition_by or self.bucket_by)


def _java(value: Any) -> Any:
    """A Scala collection as its Java view (which py4j iterates like a list or dict)."""
    jvm = SparkContext._jvm
    assert jvm is not None, "a SparkContext is running"
    return jvm.scala.jdk.javaapi.CollectionConverters.asJava(value)


def scala_map(value: Any) -> dict[str, str]:
    """A Scala ``Map[String, String]`` as a Python dict."""
    return {str(k): str(v) for k, v in _java(value).items()}


def option_list(value: Any) -> list[str]:
    """A Scala ``Option[Seq[String]]`` as a Python list."""
    return [str(v) for v in _java(value.get())] if value.isDefined() else []


def _writer_state(writer: DataFrameWriter) -> tuple[str, str, dict[str, str], Layout]:
    """Format, mode, options and layout a PySpark writer holds (in its JVM half)."""
    jwrite = writer._jwrite
    source = str(jwrite.source())
    mode = _MODES.get(str(jwrite.curmode().toString()), "errorifexists")
    options = scala_map(jwrite.extraOptions().originalMap())
    if jwrite.sortColumnNames().isDefined():
        raise InvalidInputError("sortBy is not supported by format('acidstore'): Hive's ACID "
                                "files are ordered by ROW__ID")
    buckets = int(jwrite.numBuckets().get()) if jwrite.numBuckets().isDefined() else 0
    layout = Layout(option_list(jwrite.partitioningColumns()),
                    option_list(jwrite.bucketColumnNames()), buckets)
    return source, mode, options, layout


def check_layout(target: Target, layout: Layout) -> Layout:
    """The existing table's layout, after checking that ``layout`` repeats it."""
    wh, table = open_target(target)
    try:
        info = table.info
        have = Layout(list(info.partition_schema.names), list(info.bucket_by), info.buckets)
    finally:
        wh.close()
    if not layout.given():
        return have
    same = [c.lower() for c in layout.partition_by] == [c.lower() for c in have.partition_by] \
        and (not layout.bucket_by or (
            [c.lower() for c in layout.bucket_by] == [c.lower() for c in have.bucket_by]
            and layout.buckets == have.buckets))
    if not same:
        raise InvalidInputError(
            f"table {target.describe()} is partitioned by {have.partition_by} and bucketed by "
            f"{have.bucket_by} into {have.buckets} buckets; the write asks for partitionBy "
            f"{layout.partition_by} and bucketBy {layout.bucket_by} ({layout.buckets}): a "
            "table's layout cannot change (leave partitionBy/bucketBy out to write as it is)")
    return have


def prepare_table(target: Target, schema: pa.Schema, mode: str, layout: Layout
                  ) -> tuple[str | None, bool, Layout]:
    """What a ``save`` in ``mode`` does: the mode to write with (None: nothing, ``ignore`` on
    an existing table), whether this call created the table, and the table's layout."""
    try:
        have = check_layout(target, layout)
    except TableNotFoundError:
        if target.name is None:
            raise TableNotFoundError(
                f"no acidstore table at {target.path}: a first write creates a table by name, "
                "save('db.table') with .option('warehouse', ...)") from None
    else:
        if mode == "errorifexists":
            raise TableExistsError(
                f"table {target.describe()} exists; df.write without .mode() creates a table "
                "(Delta's default mode, errorifexists): use .mode('append') or "
                ".mode('overwrite') to write into it")
        return (None if mode == "ignore" else mode), False, have
    assert target.name is not None and target.warehouse is not None
    columns = pa.schema([field.with_nullable(True) for field in schema])
    with connect(target.warehouse, metastore=target.metastore, create=False) as wh:
        wh.create_table(target.name, columns, partition_by=layout.partition_by,
                        bucket_by=layout.bucket_by, buckets=layout.buckets)
    return "append", True, layout  # a new table: nothing to replace


def _drop(target: Target) -> None:
    assert target.name is not None and target.warehouse is not None
    with contextlib.suppress(AcidStoreError, OSError), connect(
            target.warehouse, metastore=target.metastore, create=False) as wh:
        wh.drop_table(target.name)


def _save(writer: DataFrameWriter, path: str | None, original: Callable[..., None]) -> None:
    _, mode, options, layout = _writer_state(writer)
    if path is not None:
        options["path"] = path
    target = target_of(cast("Mapping[str, str]", CaseInsensitiveDict(options)))
    df = writer._df
    write_mode, created, have = prepare_table(target, arrow_schema(df.schema), mode, layout)
    if write_mode is None:
        return
    if write_mode == "overwrite" and have.bucket_by:
        _overwrite_bucketed(df, target, options)
        return
    fresh = df.write.format(FORMAT).options(**options).mode(write_mode)
    try:
        _write_in_driver_transaction(df, fresh, target, options,
                                     overwrite=write_mode == "overwrite", original=original)
    except BaseException:
        if created:
            _drop(target)
        raise


def _write_in_driver_transaction(df: DataFrame, fresh: DataFrameWriter, target: Target,
                                 options: Mapping[str, str], *, overwrite: bool,
                                 original: Callable[..., None]) -> None:
    """Spark's own ``save`` of ``fresh``, in a transaction that this process (the user's
    driver) opens and the data source's workers attach to (``source``). Its heartbeat runs
    here for as long as the job does, so a long write does not time out where executors
    cannot reach the metastore. If the job fails, the transaction is aborted here (a no-op
    when the data source's abort did it already), then its staging area is removed once no
    task of the job runs any more (``settled_jobs``), and the error is typed
    (``spark_write``: a lost worker or executor is a ``SparkJobFailedError``)."""
    app = write_app(options)  # a bad option fails before a transaction opens
    what = f"df.write to {target.describe()}"
    wh, table = open_target(target)
    try:
        if idempotent.skipped(wh.metastore, table.name, app,
                              "overwrite" if overwrite else "insert") is not None:
            return  # the table holds this version of the application's write: no job
        with spark_write(what, table.name) as attempt:
            txn = TransactionCore.begin(core_of(wh))
            attempt.txn = txn
            owned = fresh.option(DRIVER_TXN_OPTIONS[0], str(txn.txn_id)) \
                .option(DRIVER_TXN_OPTIONS[1], str(txn.snapshot))
            try:
                with settled_jobs(df.sparkSession, what):
                    original(owned)
            except BaseException as exc:
                with contextlib.suppress(AcidStoreError):  # "unknown": the timeout aborts it
                    txn.abort(f"the Spark job failed: {type(exc).__name__}")
                remove_staging_of(table.filesystem, table.location, txn.txn_id)
                raise
            # Spark's commit worker committed the transaction, or wrote nothing (it found
            # the application's version in the table meanwhile). ``abort`` settles this
            # process's handle with the metastore either way: it aborts a transaction that
            # wrote nothing, refuses a committed one (TransactionStateError, having marked
            # it committed), and stops the heartbeat.
            with contextlib.suppress(AcidStoreError):
                txn.abort("the df.write committed nothing: its application version was "
                          "written meanwhile")
    finally:
        wh.close()


def _overwrite_bucketed(df: DataFrame, target: Target, options: Mapping[str, str]) -> None:
    """An overwrite of a bucketed table, which Spark's writer cannot route (one task must write
    each bucket of a ``base_w``): ``AcidTable.insert`` shuffles the rows by bucket first."""
    from acidstore.spark.statements import insert_frame

    wh, table = open_target(target)
    try:
        insert_frame(df.sparkSession, wh, target, table.name, df, overwrite=True,
                     app=write_app(options), merge_schema=merge_schema(options),
                     partition_overwrite_mode="static" if replaces_whole_table(options)
                     else "dynamic")
    finally:
        wh.close()


def hook_save() -> None:
    """Wrap ``DataFrameWriter.save`` once (see the module docstring)."""
    original = DataFrameWriter.save
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def save(self: DataFrameWriter, path: str | None = None, format: str | None = None,
             mode: str | None = None, partitionBy: str | list[str] | None = None,  # noqa: N803
             **options: Any) -> None:
        # the arguments, applied as PySpark's own save applies them
        self.mode(mode)
        self.options(**options)
        if partitionBy is not None:
            self.partitionBy(partitionBy)
        if format is not None:
            self.format(format)
        if str(self._jwrite.source()).lower() != FORMAT:
            original(self, path)
            return
        _save(self, path, original)

    setattr(save, _MARK, True)
    DataFrameWriter.save = save  # type: ignore[method-assign]
