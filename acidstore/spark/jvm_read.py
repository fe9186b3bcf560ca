"""``AcidTable.toDF()`` through acidstore's own Java reader (the default where it can read).

The Python data source sends every row through a Python worker and Arrow into the JVM, which
alone costs about 1.25x Spark's native ORC read; Spark's own ORC reader on the event files
(``spark.acidstore.nativeRead``) applies deletes with a join that grows with the deleted ids.
Here the driver plans the snapshot exactly as an embedded scan does (lease, directory
selection, recorded-writes check, each file's valid delete events cut to the write ids its
rows can carry) and writes the plan to a file the Java reader (``acidstore/spark/java``,
``acidstore.jvm.AcidSource``) loads when the DataFrame is made; the file is deleted then.
Each Spark task decodes only the requested columns of its files with ORC-Java and drops the
planned ROW__IDs in place, so Spark gets columnar batches with no Python in between.

What the Java reader does not read exactly makes ``jvm_read`` return None, and the caller
takes the next path: pre-ACID original files (synthetic ROW__IDs), streaming deltas with
``_flush_length`` side files, deltas the snapshot accepts only partly (per-row write-id
checks), files not on local disk, more delete events than a registry holds, a ``filter``
option (SQL the embedded engine evaluates) and column types outside
``spark.schema.FLAT_TYPES`` (partition columns: no decimals either).
tests/spark/test_spark_jvm_read.py and tests/spark/test_spark_read_shapes.py hold every read
shape to the embedded reader's rows.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DecimalType

from acidstore.config import SPARK_JVM_READ_CONF
from acidstore.engine.handle import TableHandle
from acidstore.format.orc.schema import cast_to
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.read.keys import KeyArrays
from acidstore.read.ranges import MIN_RANGE_BYTES, divide
from acidstore.read.registry import DeleteCache, load_registry
from acidstore.read.scan import PartitionDir, Scan
from acidstore.read.splits import Split
from acidstore.spark import jvm_jar
from acidstore.spark.packing import SMALL_OPEN_COST_BYTES, pack, split_bytes, task_count
from acidstore.spark.read_tasks import ReadOptions, read_schema
from acidstore.spark.schema_mapping import FLAT_TYPES, flat, spark_schema

__all__ = ["JVM_READ_CONF", "jvm_read"]

#: Spark conf: "false" keeps ``toDF()`` off the Java reader (on by default where it loads)
JVM_READ_CONF = SPARK_JVM_READ_CONF
#: Spark conf the task sizes follow, as for Spark's own file reads
_PARTITION_BYTES_CONF = "spark.sql.files.maxPartitionBytes"
_MAGIC = 0x41434A32  # "ACJ2"
#: partition columns are constants the plan carries as longs, doubles or bytes: no decimals
_PARTITION_TYPES = tuple(t for t in FLAT_TYPES if t is not DecimalType)


@dataclass(frozen=True)
class _File:
    """One event file for the Java reader, with the ROW__IDs deleted among its rows."""

    partition: PartitionDir
    split: Split
    deleted: KeyArrays


def _readable(scan: Scan, table: TableHandle) -> bool:
    if not isinstance(table.filesystem, pafs.LocalFileSystem):
        return False
    if not flat(spark_schema(table.info.schema)) \
            or not flat(spark_schema(table.info.partition_schema), _PARTITION_TYPES):
        return False
    return all(s.synthetic is None and s.logical_length is None and s.rows_valid
               and s.size is not None and s.path.startswith("/") for _, s in scan.planned)


def _length(split: Split) -> int:
    """The file length the Java reader may trust (it reads the ORC tail there), or -1 (it
    asks the filesystem): a plan from the metastore's record knows a file's bytes where the
    record names them (``recorded_size``); a compaction output of several files records
    their total only, and its planned ``size`` is then a share for weighting."""
    if split.recorded_size is not None:
        return split.recorded_size
    return -1 if split.expected_rows is not None else split.size or 0


def _partition_value(value: str | None, field: pa.Field, where: str) -> bytes:
    """A partition directory's value in Spark's internal form, tagged as ``Plan.java`` reads
    it; converted as the Python path converts it (``cast_to``: a bad value is the same typed
    error, raised here when the DataFrame is made)."""
    if value is None:
        return b"\x00"
    array = cast_to(pa.array([value], pa.string()), field.type,
                    f"partition value {value!r} of {field.name!r} is not a {field.type} "
                    f"({where})")
    kind = field.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        data = value.encode()
        return b"\x03" + struct.pack(">i", len(data)) + data
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        data = bytes(array[0].as_py())
        return b"\x03" + struct.pack(">i", len(data)) + data
    if pa.types.is_floating(kind):
        return b"\x02" + struct.pack(">d", array[0].as_py())
    if pa.types.is_boolean(kind):
        return b"\x01" + struct.pack(">q", int(array[0].as_py()))
    if pa.types.is_date(kind):
        array = array.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_timestamp(kind):
        # Spark holds microseconds: a nanosecond value is truncated, as a nanosecond column
        # is by the readers and the Python data source (a safe cast raised ArrowInvalid)
        array = pc.cast(array, pa.timestamp("us"), safe=False).cast(pa.int64())
    return b"\x01" + struct.pack(">q", array[0].as_py())


def _files(scan: Scan, fs: pafs.FileSystem) -> list[_File] | None:
    """Every split with its delete events, or None where a split has more than a registry
    holds (the Python path merges those instead)."""
    cache = DeleteCache()
    out = []
    for partition, split in scan.planned:
        deleted = KeyArrays.empty()
        if split.deletes:
            registry = load_registry(fs, split, scan.write_ids, cache=cache)
            if registry is None:
                return None
            deleted = registry.sorted_keys(split.min_write_id, split.max_write_id)
        out.append(_File(partition, split, deleted))
    return out


def _ranged(fs: pafs.FileSystem, files: list[_File], limit: int) -> list[tuple[_File, int]]:
    """Each file with its bytes, a file larger than a task's ``limit`` cut into stripe ranges
    (``read.ranges.divide``, at most one per ``MIN_RANGE_BYTES``) with their share of its
    bytes: one large file (the compacted base of an unbucketed table) is then read by several
    tasks, as Spark splits its own files. Every range carries the file's delete keys."""
    out: list[tuple[_File, int]] = []
    for f in files:
        size = f.split.size or 0
        parts = min(math.ceil(size / limit), size // MIN_RANGE_BYTES) if size > limit else 1
        pieces = divide(fs, f.split, parts) if parts > 1 else [f.split]
        out.extend((dataclasses.replace(f, split=piece), size // len(pieces)) for piece in pieces)
    return out


def _tasks(spark: SparkSession, fs: pafs.FileSystem, files: list[_File]) -> list[list[_File]]:
    """Files (or stripe ranges of large ones) in tasks as the Python path packs them
    (``acidstore.spark.packing``): a bucket's files together, balanced by bytes over a
    multiple of the cores."""
    cores = spark.sparkContext.defaultParallelism
    partition_bytes = int(spark.conf.get(_PARTITION_BYTES_CONF, str(128 << 20)) or 128 << 20)
    limit = split_bytes(partition_bytes, cores,
                        [(f.split.size or 0) + SMALL_OPEN_COST_BYTES for f in files])
    ranged = _ranged(fs, files, limit)
    costs = [size + SMALL_OPEN_COST_BYTES for _, size in ranged]
    count = task_count(costs, limit, cores, len(ranged))
    return pack([f for f, _ in ranged], costs, count,
                keys=[(f.partition, f.split.bucket_id) for f, _ in ranged],
                bundle_limit=limit // 2)


def _names(names: Sequence[str]) -> bytes:
    data = [n.encode() for n in names]
    return struct.pack(">i", len(data)) + b"".join(struct.pack(">i", len(d)) + d for d in data)


def _plan_bytes(table: TableHandle, tasks: list[list[_File]]) -> bytes:
    """The plan ``Plan.java`` reads (big-endian; its docstring has the layout)."""
    partitioning = table.info.partition_schema
    parts = [struct.pack(">i", _MAGIC), _names(table.info.row_schema.names),
             _names(partitioning.names), struct.pack(">i", len(tasks))]
    values: dict[PartitionDir, bytes] = {}
    for task in tasks:
        parts.append(struct.pack(">i", len(task)))
        for f in task:
            if f.partition not in values:
                given = dict(f.partition.values)
                values[f.partition] = b"".join(
                    _partition_value(given.get(field.name), field, f.partition.path)
                    for field in partitioning)
            name = f.split.path.encode()
            first, stop = f.split.stripes if f.split.stripes is not None else (-1, -1)
            expected = f.split.expected_rows if f.split.expected_rows is not None else -1
            parts.append(struct.pack(">i", len(name)) + name)
            parts.append(struct.pack(">qiiq", _length(f.split), first, stop, expected))
            parts.append(values[f.partition])
            parts.append(struct.pack(">i", len(f.deleted)))
            parts.append(f.deleted.write_id.astype(">i8").tobytes())
            parts.append(f.deleted.bucket.astype(">i4").tobytes())
            parts.append(f.deleted.row_id.astype(">i8").tobytes())
    return b"".join(parts)


def jvm_read(spark: SparkSession, table: TableHandle,
             snapshot: tuple[ValidTxnList, ValidWriteIdList], columns: Sequence[str] | None,
             with_row_id: bool) -> DataFrame | None:
    """``table`` at ``snapshot`` (leased by the caller before this lists anything) through the
    Java reader, or None when the session or the snapshot needs another path."""
    if (spark.conf.get(JVM_READ_CONF, "true") or "").strip().lower() == "false" \
            or not jvm_jar.install(spark):
        return None
    scan = table.scan(None, None, None, with_row_id, snapshot=snapshot)
    if not _readable(scan, table):
        return None
    files = _files(scan, table.filesystem)
    if files is None:
        return None
    schema = read_schema(table, ReadOptions(with_row_id=with_row_id))
    output = read_schema(table, ReadOptions(  # checks the names as every path does
        columns=tuple(columns) if columns is not None else None, with_row_id=with_row_id))
    handle, plan = tempfile.mkstemp(prefix="acidstore-plan-", suffix=".bin")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(_plan_bytes(table, _tasks(spark, table.filesystem, files)))
        # load() reads the plan: every action on the frame runs these tasks
        frame = spark.read.format(jvm_jar.SOURCE_CLASS).schema(schema).option("plan", plan).load()
    finally:
        os.unlink(plan)
    return frame if columns is None else frame.select(*output.fieldNames())
