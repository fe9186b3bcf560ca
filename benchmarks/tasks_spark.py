"""Spark workloads S1 (read after W2-W4) and S2 (UPDATE / DELETE / MERGE), as harness tasks.

Each child process runs one SparkSession (``local[2]``, UI off, few shuffle partitions), started
before the clock, and reused by the harness's in-process warm-up run (Python workers, page
cache) and the timed run. The JVM's JIT needs more than one run (at 2M rows the second scan is
still about twice the fifth, for both readers), so an engine's first task in a process also
runs a few untimed warm-ups (``SCAN_WARMUPS``, ``CHANGE_WARMUPS``; arg ``warmups``). The
peers are plain Spark on plain ORC files of the same rows:

- S1: Spark's native ORC reader on ``limit_after`` (the rows of ``acid_after`` as ten plain ORC
  files). Both sides time building the DataFrame plus the same action,
  ``write.format("noop")``, which pulls every row with every column through the plan.
- S2: the "Spark rewrite" on ``limit_loaded`` (the rows of ``acid_loaded``): read the whole
  table, apply the change with DataFrame operations, write the whole table to a new directory
  and swap it in (Spark cannot overwrite the path it reads), once per statement.

Peak RSS (VmHWM) is that of the Python driver; the JVM and Spark's Python workers are other
processes, so each task also reports the JVM's peak and the largest Python worker's peak.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)

import acidstore
from acidstore.spark import AcidTable
from acidstore.spark.jobs import IN_DRIVER_ON_LOCAL
from benchmarks.tasks_write import (
    DELETE_PREDICATE,
    MERGE_CONDITION,
    TABLE,
    UPDATES,
    digest,
    fresh,
    read_arrow,
)
from compaction import compact

#: Spark's ORC codec option for the codec of acidstore's and the limit's files
ORC_CODEC = "zstd"


def session() -> SparkSession:
    """The active session (a test's), else this process's one benchmark session."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    spark = (SparkSession.builder.master("local[2]").appName("acidstore-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _hwm_mb(process: psutil.Process) -> float:
    try:
        with open(f"/proc/{process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def spark_memory(spark: SparkSession) -> dict[str, float]:
    """Peak RSS of the JVM and of the largest of its Python workers (0 if not local)."""
    jvm_view = spark.sparkContext._jvm
    assert jvm_view is not None, "a classic (not Spark Connect) session"
    pid = int(jvm_view.java.lang.ProcessHandle.current().pid())
    try:
        jvm = psutil.Process(pid)
        workers = [p for p in jvm.children(recursive=True) if "python" in p.name().lower()]
    except psutil.Error:
        return {"jvm_rss_mb": 0.0, "worker_rss_mb": 0.0}
    return {"jvm_rss_mb": _hwm_mb(jvm),
            "worker_rss_mb": max((_hwm_mb(w) for w in workers), default=0.0)}


def _table_bytes(root: str) -> int:
    return sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())


# --- S1 -------------------------------------------------------------------------------------------

#: untimed runs of an S1 scan before the first timed one in a process: the JVM's JIT needs
#: several (at 2M rows the 2nd run is still ~2x the 5th for both readers), one is not enough
SCAN_WARMUPS = 3
_warmed: set[tuple[str, bool, str | None]] = set()


def spark_scan(args: dict[str, Any]) -> dict[str, Any]:
    """S1: a full scan after W2-W4 (``engine`` acid: ``AcidTable.toDF()``; native:
    ``spark.read.orc`` of ``limit_after``), every column pulled by a ``noop`` write; both time
    building the DataFrame and the action. ``split_by_cores``: the Python data source
    (``format("acidstore")``) with ``maxPartitionBytes`` set to the table's bytes / cores (one
    task per core), for comparison with ``toDF()``, which reads with acidstore's Java reader.
    ``where``: a filter both apply with ``DataFrame.where`` (Spark pushes it into either scan:
    partition pruning and stripe skipping in acidstore's, row-group skipping in Spark's)."""
    spark = session()
    engine, split = args["engine"], bool(args.get("split_by_cores"))
    where: str | None = args.get("where")
    if engine == "acid":
        table = AcidTable.forName(spark, TABLE, warehouse=args["acid_after"])
        per_core = _table_bytes(args["acid_after"]) // spark.sparkContext.defaultParallelism + 1
        reader = (spark.read.format("acidstore").option("warehouse", args["acid_after"])
                  .option("maxPartitionBytes", str(per_core)))

        def frame() -> DataFrame:
            return reader.load(TABLE) if split else table.toDF()
    else:
        def frame() -> DataFrame:
            return spark.read.orc(args["limit_after"])

    def scan() -> float:
        start = time.perf_counter()
        df = frame()
        (df if where is None else df.where(where)).write.format("noop").mode(
            "overwrite").save()
        return time.perf_counter() - start

    if (engine, split, where) not in _warmed:
        _warmed.add((engine, split, where))
        for _ in range(int(args.get("warmups", SCAN_WARMUPS))):
            scan()
    seconds = scan()
    return {"seconds": seconds, "rows": int(args["after_rows"]), **spark_memory(spark)}


# --- S2 -------------------------------------------------------------------------------------------

MAX_SOURCE_BYTES = "spark.acidstore.merge.maxSourceBytes"


def _source(spark: SparkSession, rows: pa.Table, like: DataFrame) -> DataFrame:
    """W4's source as a DataFrame in the column types of ``like`` (the target as read)."""
    types = {f.name: f.dataType for f in like.schema.fields}
    df = spark.createDataFrame(rows)
    return df.select(*[F.col(f.name).cast(types[f.name]) for f in df.schema.fields])


def acid_change(spark: SparkSession, table: AcidTable, op: str, source: DataFrame | None) -> int:
    """W2 (10 updates), W3 or W4 through ``AcidTable``; returns the rows changed."""
    if op == "update":
        return sum(table.update(f"id % 1000 = {r}", set={"v1": "v1 + 1"}).rows_updated
                   for r in range(UPDATES))
    if op == "delete":
        return table.delete(DELETE_PREDICATE).rows_deleted
    assert source is not None
    result = (table.alias("t").merge(source.alias("s"), MERGE_CONDITION)
              .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    return result.rows_updated + result.rows_inserted


def rewrite(spark: SparkSession, root: Path, change: Callable[[DataFrame], DataFrame]) -> None:
    """Read the whole plain ORC table at ``root``, change it, write it all to a new directory
    and swap that in: a table update without ACID."""
    new = root.with_name(root.name + ".new")
    change(spark.read.orc(str(root))).write.mode("overwrite").option(
        "compression", ORC_CODEC).orc(str(new))
    shutil.rmtree(root)
    os.rename(new, root)


def _bump_v1(condition: Column) -> Callable[[DataFrame], DataFrame]:
    return lambda df: df.withColumn("v1", F.when(condition, F.col("v1") + 1)
                                    .otherwise(F.col("v1")))


def rewrite_change(spark: SparkSession, root: Path, op: str, source: DataFrame | None) -> None:
    """The same statements as ``acid_change``, each one a full rewrite."""
    if op == "update":
        for r in range(UPDATES):
            rewrite(spark, root, _bump_v1(F.expr(f"id % 1000 = {r}")))
    elif op == "delete":
        rewrite(spark, root, lambda df: df.filter(~F.expr(DELETE_PREDICATE)))
    else:
        # WHEN MATCHED UPDATE ALL + WHEN NOT MATCHED INSERT ALL: the target rows whose id is
        # not in the source, then every source row
        assert source is not None
        src = source
        rewrite(spark, root, lambda df: df.join(src, "id", "left_anti").unionByName(src))


def _change_once(spark: SparkSession, args: dict[str, Any], engine: str, op: str,
                 with_digest: bool) -> dict[str, Any]:
    source_rows = read_arrow(args["merge_source"]) if op == "merge" else None
    key = "acid_loaded" if engine == "acid" else "limit_loaded"
    out: dict[str, Any] = {}
    with fresh(args, key) as root:
        if engine == "acid":
            acid = AcidTable.forName(spark, TABLE, warehouse=str(root))
            source = (_source(spark, source_rows, acid.toDF())
                      if source_rows is not None else None)
            # "shuffle": every source counts as too large to broadcast (the shuffled MERGE)
            if args.get("shuffle"):
                spark.conf.set(MAX_SOURCE_BYTES, "0")
            try:
                start = time.perf_counter()
                out["rows"] = acid_change(spark, acid, op, source)
                out["seconds"] = time.perf_counter() - start
            finally:
                spark.conf.unset(MAX_SOURCE_BYTES)
            if with_digest:
                with acidstore.connect(root) as wh:
                    out.update(digest(wh.table(TABLE).to_arrow(columns=["id", "v1"])))
        else:
            source = (_source(spark, source_rows, spark.read.orc(str(root)))
                      if source_rows is not None else None)
            start = time.perf_counter()
            rewrite_change(spark, root, op, source)
            out["seconds"] = time.perf_counter() - start
            out["rows"] = spark.read.orc(str(root)).count()  # not timed: the rows rewritten
            if with_digest:
                out.update(digest(spark.read.orc(str(root)).select("id", "v1").toArrow()))
    return out


#: untimed DELETE runs (each a full read and write on either side) that warm the JVM before
#: an engine's first S2 task in a process; they cost a fraction of a 10-statement warm-up
CHANGE_WARMUPS = 2
_warmed_engines: set[str] = set()


def spark_change(args: dict[str, Any]) -> dict[str, Any]:
    """S2: W2 (``op`` update), W3 (delete) or W4 (merge) on a fresh copy of the loaded table,
    ``engine`` acid (``AcidTable``) or rewrite. Opening the table and building the merge
    source DataFrame are not timed. Rows: those changed (acid), those of the table rewritten
    (rewrite). ``digest``: also return a digest of the resulting table."""
    spark = session()
    engine = args["engine"]
    # S2's opt-in row: the statement core's units in the driver (local mode only)
    spark.conf.set(IN_DRIVER_ON_LOCAL, "true" if args.get("in_driver") else "false")
    if engine not in _warmed_engines:
        _warmed_engines.add(engine)
        for _ in range(int(args.get("warmups", CHANGE_WARMUPS))):
            _change_once(spark, args, engine, "delete", False)
    out = _change_once(spark, args, engine, args["op"], bool(args.get("digest")))
    return {**out, **spark_memory(spark)}


# --- S3 -------------------------------------------------------------------------------------------

def _compact_once(spark: SparkSession, args: dict[str, Any], engine: str,
                  with_digest: bool) -> dict[str, Any]:
    """One S3 run; what it reads back afterwards (not timed) is the row count, or with
    ``with_digest`` the ``id`` and ``v1`` columns (kept out of the measured runs: they would
    add to the driver's peak RSS)."""
    out: dict[str, Any] = {}
    columns = ["id", "v1"] if with_digest else ["id"]
    with fresh(args, "acid_after" if engine == "acid" else "limit_after") as root:
        if engine == "acid":
            with acidstore.connect(root) as wh:
                table = wh.table(TABLE)
                start = time.perf_counter()
                result = compact(table, "major", engine="spark", spark=spark)
                out["seconds"] = time.perf_counter() - start
                if not result.compacted:
                    raise RuntimeError(f"the major compaction did nothing: {result}")
                after = table.to_arrow(columns=columns)
            out["rows"] = after.num_rows
        else:
            start = time.perf_counter()
            rewrite(spark, root, lambda df: df)
            out["seconds"] = time.perf_counter() - start
            frame = spark.read.orc(str(root))
            after = frame.select(*columns).toArrow() if with_digest else None
            out["rows"] = after.num_rows if after is not None else frame.count()
    if out["rows"] != int(args["after_rows"]):
        raise RuntimeError(f"S3 {engine}: {out['rows']} rows, not {args['after_rows']}")
    if with_digest:
        assert after is not None
        out.update(digest(after))
    return out


def spark_compact(args: dict[str, Any]) -> dict[str, Any]:
    """S3: a major compaction of a fresh copy of ``acid_after`` on Spark (one task per
    bucket), or (``engine`` rewrite) Spark reading ``limit_after`` and writing it all again.
    Both warm up on an untimed run of their own in this JVM first. Rows: the table's rows
    afterwards (checked against ``after_rows``); ``digest``: also a digest of them."""
    spark = session()
    engine = args["engine"]
    for _ in range(int(args.get("warmups", 1))):
        _compact_once(spark, args, engine, False)
    return {**_compact_once(spark, args, engine, bool(args.get("digest"))),
            **spark_memory(spark)}


SPARK_TASKS = {"spark_scan": spark_scan, "spark_change": spark_change,
               "spark_compact": spark_compact}
