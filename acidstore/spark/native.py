"""Spark's own ORC reader on the event files: the fast path of ``AcidTable.toDF()``.

The Python data source sends every row through a Python worker and Arrow to the JVM, which
alone costs about twice Spark's native ORC read. Here the driver plans the snapshot exactly as
an embedded scan does (lease, directory selection, recorded-writes check) and hands the chosen
bucket files to Spark's ORC reader; delete events are removed with a left anti-join on the
ROW__ID inside each partition (ROW__IDs are unique per partition only).

ORC-Java recognises a file with Hive's event schema and maps the top two levels of the read
schema *by position*. Any read schema Spark prunes (a ``count()``, one column, a filter that
names some event columns) would then fail in the task, or worse, map a pruned ``row`` field to
the wrong column. So every scan sits under a guard filter that names all six event columns,
``row`` as a whole (``isnotnull(row)``: Spark's nested pruning keeps the full struct for it),
and the optimizer cannot fold away (none of the columns is known to be non-null).
tests/spark/test_spark_native_read.py pins that with every query shape, values checked.

The fields of ``row`` are matched by name, though: after a column is renamed, files written
before read NULL for it, and a dropped column's values would come back under a name re-added
later. So a table with a renamed or dropped column (``TableInfo.file_schema`` set) is read on
the other paths, which map every field by position
(tests/spark/test_spark_column_changes.py).

What the guard cannot make safe falls back to the Python data source (``native_plan`` returns
None): pre-ACID original files (synthetic ROW__IDs), streaming deltas with side files, deltas
the snapshot accepts only partly (per-row write-id checks), filesystems other than local
disk, a ``filter`` option (evaluated by the embedded engine's SQL, whose semantics the Python
path keeps; a DataFrame ``.filter`` is pushed into ORC on this path), and column types whose
Spark reading differs from the Python path's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from acidstore.config import SPARK_NATIVE_READ_CONF
from acidstore.engine.handle import TableHandle
from acidstore.format.orc.schema import ROW_ID_COLUMN
from acidstore.format.writeids import RangeResponse, ValidTxnList, ValidWriteIdList
from acidstore.read.scan import PartitionDir, Scan
from acidstore.spark.conf import temporary_conf
from acidstore.spark.read_tasks import ReadOptions, read_schema
from acidstore.spark.schema_mapping import flat, spark_schema

__all__ = ["NATIVE_READ_CONF", "NativePartition", "native_frame", "native_plan", "native_read"]

#: Spark conf that turns the native path on ("true"; off by default: on the S1 table, after
#: W2-W4's many small deltas, it measured 3.8x Spark's plain read against the Python path's
#: 2.1x, and rebuilding timestamps cost another 2.5x; README "Spark (S1, S2)")
NATIVE_READ_CONF = SPARK_NATIVE_READ_CONF

_EVENT_COLUMNS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction")
_KEY = ["originalTransaction", "bucket", "rowId"]
@dataclass(frozen=True)
class NativePartition:
    """One partition's files, as URIs the JVM opens: insert events and delete events."""

    partition: PartitionDir
    inserts: tuple[str, ...]
    deletes: tuple[str, ...]


def _jvm_uri(fs: pafs.FileSystem, path: str) -> str | None:
    """The URI Spark opens for ``path``; None where the JVM would not see the same file."""
    if isinstance(fs, pafs.LocalFileSystem) and path.startswith("/"):
        return "file://" + path
    return None


def native_plan(scan: Scan, fs: pafs.FileSystem, user_schema: pa.Schema
                ) -> list[NativePartition] | None:
    """The files of ``scan`` grouped by partition, or None when Spark's ORC reader cannot
    read them exactly as acidstore does (see the module docstring)."""
    if not flat(spark_schema(user_schema)):
        return None
    write_ids = scan.write_ids
    inserts: dict[PartitionDir, list[str]] = defaultdict(list)
    deletes: dict[PartitionDir, dict[str, None]] = defaultdict(dict)
    for partition, split in scan.planned:
        uri = _jvm_uri(fs, split.path)
        if uri is None or split.synthetic is not None or split.logical_length is not None \
                or not split.rows_valid:
            return None
        inserts[partition].append(uri)
        for delete in split.deletes:
            delete_uri = _jvm_uri(fs, delete.path)
            if delete_uri is None or write_ids.is_write_id_range_valid(
                    delete.min_write_id, delete.max_write_id) != RangeResponse.ALL:
                return None
            deletes[partition][delete_uri] = None
    return [NativePartition(p, tuple(paths), tuple(deletes[p])) for p, paths in inserts.items()]


def _wall_clock(name: str) -> Column:
    """A Hive TIMESTAMP column as Spark's ``timestamp_ntz``. Spark reads an ORC timestamp only
    as an instant, whose UTC wall clock is the stored date-time; casting it would apply the
    session time zone (and fold the hour a DST change repeats), so the value is rebuilt from
    its UTC microseconds added to the zone-less epoch (``timestampadd`` by microseconds is
    plain integer arithmetic; an earlier day-plus-decimal-seconds form cost ~4x more)."""
    return F.expr(f"timestampadd(MICROSECOND, unix_micros(row.`{name}`), "
                  "TIMESTAMP_NTZ'1970-01-01 00:00:00')")


def _event_schema(user: StructType) -> StructType:
    """Hive's event schema with ``user`` as ``row`` (ORC-Java maps it by position), zone-less
    timestamps as the instants Spark's ORC reader returns (see ``_wall_clock``)."""
    user = StructType([StructField(f.name, TimestampType()) if isinstance(
        f.dataType, TimestampNTZType) else f for f in user.fields])
    return StructType([StructField("operation", IntegerType()),
                       StructField("originalTransaction", LongType()),
                       StructField("bucket", IntegerType()),
                       StructField("rowId", LongType()),
                       StructField("currentTransaction", LongType()),
                       StructField("row", user)])


def _guard(inserts: bool) -> Column:
    """Names every event column and ``row`` whole, so no projection Spark derives from a
    query prunes the ACID shape ORC-Java needs (see the module docstring). An insert event
    always has its row; in a delete delta every event counts, whatever its row holds."""
    row = F.col("row").isNotNull() if inserts else \
        F.col("row").isNull() | F.col("row").isNotNull()
    return reduce(lambda a, b: a & b, [F.col(c).isNotNull() for c in _EVENT_COLUMNS], row)


@dataclass(frozen=True)
class _Shape:
    """What every partition's frame reads (``events``) and returns (the rest)."""

    events: StructType
    user: StructType
    partition_schema: StructType
    columns: tuple[str, ...]
    with_row_id: bool


def _partition_frame(spark: SparkSession, part: NativePartition, shape: _Shape) -> DataFrame:
    rows = spark.read.schema(shape.events).orc(list(part.inserts)).where(_guard(True))
    if part.deletes:
        deleted = (spark.read.schema(shape.events).orc(list(part.deletes))
                   .where(_guard(False)).select(*_KEY))
        rows = rows.join(deleted, _KEY, "left_anti")
    values = dict(part.partition.values)
    user = {f.name: f.dataType for f in shape.user.fields}
    out: list[Column] = []
    for name in shape.columns:
        if isinstance(user.get(name), TimestampNTZType):
            out.append(_wall_clock(name).alias(name))
        elif name in user:
            out.append(F.col("row").getField(name).alias(name))
        else:
            field = shape.partition_schema[name]
            out.append(F.lit(values.get(name)).cast(field.dataType).alias(name))
    if shape.with_row_id:
        out.append(F.struct(F.col("originalTransaction").alias("writeid"),
                            F.col("bucket").alias("bucketid"),
                            F.col("rowId").alias("rowid")).alias(ROW_ID_COLUMN))
    return rows.select(*out)


#: Spark conf: above this many paths a read lists them in a Spark job of its own
LISTING_THRESHOLD_CONF = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@contextmanager
def _listed_in_driver(spark: SparkSession, paths: int) -> Iterator[None]:
    """Let the reads made inside list up to ``paths`` file paths in the driver. Given more
    paths than ``parallelPartitionDiscovery.threshold`` (32), Spark lists them in a job of
    their own, one task per path: on S1's table at 1M rows 248 of the native read's 259
    tasks, to stat files whose paths and sizes the snapshot's plan already listed. A read
    lists its paths when it is made, so the setting is restored before any action runs."""
    old = spark.conf.get(LISTING_THRESHOLD_CONF, None)
    if old is not None and int(old) >= paths:
        yield
        return
    with temporary_conf(spark, LISTING_THRESHOLD_CONF, str(paths)):
        yield


def native_frame(spark: SparkSession, plan: Sequence[NativePartition], user_schema: pa.Schema,
                 partition_schema: pa.Schema, output: StructType) -> DataFrame:
    """The snapshot's rows as a DataFrame over Spark's ORC reader, in ``output``'s columns
    (a subset of the table's, then ``row__id`` when asked for)."""
    user = spark_schema(user_schema)
    shape = _Shape(_event_schema(user), user, spark_schema(partition_schema),
                   tuple(f.name for f in output.fields if f.name != ROW_ID_COLUMN),
                   ROW_ID_COLUMN in output.fieldNames())
    most = max((max(len(p.inserts), len(p.deletes)) for p in plan), default=0)
    with _listed_in_driver(spark, most):
        frames = [_partition_frame(spark, part, shape) for part in plan]
    if not frames:
        return spark.createDataFrame([], output)
    return reduce(DataFrame.unionAll, frames)


def native_read(spark: SparkSession, table: TableHandle,
                snapshot: tuple[ValidTxnList, ValidWriteIdList], columns: Sequence[str] | None,
                with_row_id: bool) -> DataFrame | None:
    """``table`` at ``snapshot`` (leased by the caller before this lists anything) on the
    native path, or None when the snapshot needs the Python path."""
    if (spark.conf.get(NATIVE_READ_CONF, "false") or "").strip().lower() != "true":
        return None
    output = read_schema(table, ReadOptions(
        columns=tuple(columns) if columns is not None else None, with_row_id=with_row_id))
    if table.info.file_schema is not None:
        # a renamed or dropped column: Spark's ORC reader maps the row's fields by name, and
        # files written before the change hold other names there (or a dropped column's)
        return None
    scan = table.scan(None, None, None, with_row_id, snapshot=snapshot)
    plan = native_plan(scan, table.filesystem, table.info.row_schema)
    if plan is None:
        return None
    return native_frame(spark, plan, table.info.row_schema, table.info.partition_schema, output)
