"""Spike (issue 11): plan an acidstore snapshot for the JVM reader in ``jvm/`` (not part of
the package, nothing imports it).

The Python driver does all the ACID planning, exactly as an embedded scan: the snapshot's
splits (``Table.scan``), each split's valid delete events (``load_registry``, limited to the
write ids the split's rows can carry), and the packing of splits into Spark tasks (a bucket's
files in one task, tasks balanced by bytes). The JVM then only decodes the files and drops
the listed ROW__IDs. What the prototype cannot read exactly (pre-ACID originals, streaming
deltas with ``_flush_length`` side files, per-row write-id checks, partitions, non-local
files, over-limit deletes) raises ``UnsupportedOperationError``; a product would fall back
to the Python path there, as ``spark/native.py`` does.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow.fs as pafs
from pyspark.sql import DataFrame, SparkSession

from acidstore.errors import UnsupportedOperationError as Unsupported
from acidstore.read.plan import Split
from acidstore.read.registry import DeleteCache, load_registry
from acidstore.read.scan import Scan
from acidstore.spark.reading import ReadOptions, read_schema
from acidstore.table import Table

SOURCE = "acidstore.jvm.AcidSource"
_MAGIC = 0x41434A31


@dataclass(frozen=True)
class FileTask:
    """One event file and the ROW__IDs deleted among its rows, sorted as the file is."""

    path: str
    size: int
    stripes: tuple[int, int] | None
    write_ids: npt.NDArray[np.int64]
    buckets: npt.NDArray[np.int32]
    row_ids: npt.NDArray[np.int64]


def _deleted(fs: pafs.FileSystem, scan: Scan, split: Split, cache: DeleteCache
             ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64))
    if not split.deletes:
        return empty
    registry = load_registry(fs, split, scan.write_ids, cache=cache)
    if registry is None:
        raise Unsupported(f"{split.path}: more delete events than the registry holds")
    # the registry's runs (writeId, bucket) over one sorted rowId array, expanded per event
    ends = registry._run_end.astype(np.int64)
    counts = np.diff(np.r_[0, ends])
    w = np.repeat(registry._run_write_id, counts)
    b = np.repeat(registry._run_bucket, counts)
    r = registry._row_ids
    mine = (w >= split.min_write_id) & (w <= split.max_write_id)
    return w[mine], b[mine], r[mine]


def plan_tasks(table: Table, tasks: int, scan: Scan | None = None, *,
               ignore_deletes: bool = False) -> list[list[FileTask]]:
    """The snapshot's files as ``tasks`` groups (a bucket's files together, LPT by bytes).
    ``ignore_deletes`` (measurements only: wrong rows) plans no delete keys."""
    scan = scan if scan is not None else table.scan()
    fs = table.filesystem
    if not isinstance(fs, pafs.LocalFileSystem):
        raise Unsupported(f"{table.name}: the JVM reader reads only local files")
    cache = DeleteCache()
    by_bucket: dict[int, list[FileTask]] = defaultdict(list)
    for partition, split in scan.planned:
        if partition.values:
            raise Unsupported(f"{partition.path}: the JVM reader reads no partitioned tables")
        if split.synthetic is not None or split.logical_length is not None \
                or not split.rows_valid or split.size is None:
            raise Unsupported(f"{split.path}: the JVM reader reads no original files, "
                              "_flush_length side files or per-row write-id checks")
        w, b, r = _deleted(fs, scan, dataclasses.replace(split, deletes=())
                           if ignore_deletes else split, cache)
        by_bucket[split.bucket_id].append(FileTask(split.path, split.size, split.stripes, w, b, r))
    groups: list[list[FileTask]] = [[] for _ in range(tasks)]
    load = [0] * tasks
    for _, files in sorted(by_bucket.items(), key=lambda kv: -sum(f.size for f in kv[1])):
        at = load.index(min(load))
        groups[at].extend(files)
        load[at] += sum(f.size for f in files)
    return [g for g in groups if g]


def write_plan(groups: list[list[FileTask]], path: str) -> None:
    """The binary plan ``jvm/src/acidstore/jvm/Plan.java`` reads."""
    with open(path, "wb") as out:
        out.write(struct.pack(">ii", _MAGIC, len(groups)))
        for group in groups:
            out.write(struct.pack(">i", len(group)))
            for f in group:
                name = f.path.encode()
                first, stop = f.stripes if f.stripes is not None else (-1, -1)
                out.write(struct.pack(">i", len(name)) + name)
                out.write(struct.pack(">qiii", f.size, first, stop, len(f.row_ids)))
                out.write(f.write_ids.astype(">i8").tobytes())
                out.write(f.buckets.astype(">i4").tobytes())
                out.write(f.row_ids.astype(">i8").tobytes())


def jvm_frame(spark: SparkSession, table: Table, plan_path: str, *, tasks: int,
              with_row_id: bool = False, ignore_deletes: bool = False) -> DataFrame:
    """The table's current snapshot through the JVM reader (``spark.jars`` must hold it)."""
    write_plan(plan_tasks(table, tasks, ignore_deletes=ignore_deletes), plan_path)
    schema = read_schema(table, ReadOptions(with_row_id=with_row_id))
    user = [f.name for f in table.info.schema]
    return (spark.read.format(SOURCE).schema(schema).option("plan", plan_path)
            .option("columns", ",".join(user)).option("schema", json.dumps(schema.jsonValue()))
            .load())
