"""acidstore's tasks freeze their Python worker's long-lived objects
(``acidstore.engine.worker_gc``)
so that PySpark's full collection after every task skips them; the statements they run
still write what the embedded engine writes. Every kind of task does it: a statement's units,
a compaction's buckets (the ``compaction`` package, which may import acidstore's L1-L4 only),
the shuffled MERGE's jobs and ``df.write``'s writers (tested here where a probe task can reach
the same pool of workers)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pyarrow as pa
from spark_support import make_rows, new_table, to_spark

import acidstore
from acidstore.engine.handle import handle_of
from acidstore.engine.worker_gc import freeze_long_lived, thaw
from acidstore.spark import AcidTable
from compaction import compact

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acidstore import Table

START = make_rows(range(30), dts=("a", "b"))
Pool = Literal["rdd", "sql"]
#: the session's task slots (conftest: ``local[2]``)
SLOTS = 2


def _workers_frozen(spark: SparkSession, pool: Pool, *, unfreeze: bool = False) -> list[int]:
    """Each reusable Python worker's freeze count (``unfreeze``: after thawing it, so that only
    a later task can freeze it again). PySpark keeps apart the workers of RDD functions and
    those of SQL's (``mapInArrow``, Python data sources): ``pool`` says which to probe. One
    task per slot, each held long enough that the slots' tasks run side by side, so every
    idle worker of the pool is reached (lambdas, pickled by value: the workers cannot import
    this test module)."""
    def probe() -> tuple[int, int]:
        import gc
        import os
        import time

        if unfreeze:
            from acidstore.engine.worker_gc import thaw

            thaw()
        time.sleep(0.5)
        return os.getpid(), gc.get_freeze_count()

    def probe_sql(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        pid, count = probe()
        yield pa.RecordBatch.from_pydict({"pid": [pid], "frozen": [count]})

    if pool == "rdd":
        found = spark.sparkContext.parallelize(range(SLOTS), SLOTS).map(lambda _: probe())
        return list(dict(found.collect()).values())
    rows = spark.range(0, SLOTS, 1, SLOTS).mapInArrow(probe_sql, "pid long, frozen long")
    return list({r.pid: r.frozen for r in rows.collect()}.values())


def _thawed(spark: SparkSession, pool: Pool) -> None:
    assert max(_workers_frozen(spark, pool, unfreeze=True)) == 0


def _collected(thing: object) -> bool:
    """Whether ``thing`` is in one of the collector's generations, i.e. not frozen:
    ``gc.get_objects()`` leaves out the permanent generation."""
    return any(o is thing for o in gc.get_objects())


def test_freezes_once_per_process() -> None:
    assert gc.get_freeze_count() == 0, "nothing froze the test process before"
    try:
        freeze_long_lived()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        later = [[n] for n in range(1000)]  # new tracked objects: a second freeze would take them
        freeze_long_lived()
        # frozen objects that die meanwhile leave the count (CI saw it drop by 3), so the count may
        # only fall; that ``later`` is still with the collector is the real check
        assert gc.get_freeze_count() <= frozen
        assert _collected(later)
        gc.unfreeze()  # behind its back: the process is still taken as frozen, nothing asked
        freeze_long_lived()
        assert gc.get_freeze_count() == 0
        thaw()
        freeze_long_lived()
        assert not _collected(later), "after thaw the next freeze takes what came since"
        del later
    finally:
        thaw()


def _two_tables(spark: SparkSession, tmp_path: Path) -> tuple[Table, Table, AcidTable]:
    """START in two warehouses: one changed embedded, one through Spark (and its AcidTable)."""
    tables = []
    for name in ("embedded", "spark"):
        wh = acidstore.connect(tmp_path / name)
        table = new_table(wh)
        table.insert(START)
        tables.append(table)
    embedded, on_spark = tables
    return embedded, on_spark, AcidTable.forName(
        spark, on_spark.name, warehouse=str(handle_of(on_spark).core.location))


def test_units_task_freezes_its_worker_and_writes_what_embedded_does(
        spark: SparkSession, tmp_path: Path) -> None:
    embedded, on_spark, at = _two_tables(spark, tmp_path)
    embedded.update("id % 4 = 1", {"amount": "amount + 1"})
    _thawed(spark, "rdd")
    at.update("id % 4 = 1", {"amount": "amount + 1"})

    assert on_spark.to_arrow(with_row_id=True).sort_by("id") == \
        embedded.to_arrow(with_row_id=True).sort_by("id")
    assert max(_workers_frozen(spark, "rdd")) > 0


def test_compaction_tasks_freeze_their_workers(spark: SparkSession, tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    table = new_table(wh)
    table.insert(START)
    table.delete("id % 3 = 0")
    before = table.to_arrow(with_row_id=True).sort_by("id")
    _thawed(spark, "rdd")
    compact(table, "major", engine="spark", spark=spark)
    assert max(_workers_frozen(spark, "rdd")) > 0
    assert table.to_arrow(with_row_id=True).sort_by("id") == before


def test_shuffled_merge_tasks_freeze_their_workers(spark: SparkSession, tmp_path: Path) -> None:
    embedded, on_spark, at = _two_tables(spark, tmp_path)
    source = make_rows(range(20, 40), name="s", dts=("a", "b"))
    embedded.merge(source, "t.id = s.id").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    _thawed(spark, "sql")
    spark.conf.set("spark.acidstore.merge.maxSourceBytes", "0")  # the shuffled MERGE
    try:
        at.alias("t").merge(to_spark(spark, source).alias("s"), "t.id = s.id") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    finally:
        spark.conf.unset("spark.acidstore.merge.maxSourceBytes")
    assert max(_workers_frozen(spark, "sql")) > 0
    assert on_spark.to_arrow().sort_by("id") == embedded.to_arrow().sort_by("id")

