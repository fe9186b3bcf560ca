"""Spark reads release their snapshot leases when the read is over (issue 15), so a finished
job no longer keeps the cleaner from removing what a compaction replaced for an hour.

``format("acidstore")``: one lease per read task, released by the task once it has read;
``AcidTable.toDF()``: the driver's lease, released when the session stops (the subprocess
tests of test_spark_session.py stop a real session; here ``release_held`` is what ``stop``
calls, since the suite shares one session). None of these lease calls waits for a writer
holding the metastore's write lock."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from lock_holders import writer_locks_held
from spark_support import TABLE, arrow_rows, make_rows, new_table, spark_rows

from acidstore import Table, Warehouse
from acidstore.spark import AcidTable, register
from acidstore.spark import leases as spark_leases
from compaction import Cleaner, compact

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def compacted(wh: Warehouse) -> Table:
    """A table whose deltas a major compaction replaced: a cleaner pass has work to do
    unless a live snapshot still reads them."""
    t = new_table(wh)
    for start in (0, 10, 20):
        t.insert(make_rows(range(start, start + 6)))
    return t


def read(spark: SparkSession, wh: Warehouse) -> DataFrame:
    register(spark)
    return spark.read.format("acidstore").option("warehouse", str(wh.location)).load(TABLE)


def test_a_finished_read_leaves_no_lease(spark: SparkSession, wh: Warehouse) -> None:
    t = compacted(wh)
    df = read(spark, wh)
    planned = df.rdd.getNumPartitions()  # planning: one lease per read task, none read yet
    assert planned >= 2 and len(wh.metastore.active_leases(TABLE)) == planned
    assert spark_rows(df) == arrow_rows(t.to_arrow())
    assert wh.metastore.active_leases(TABLE) == []  # released as each task finished
    df = read(spark, wh)
    assert spark_rows(df) == arrow_rows(t.to_arrow())  # planned and read by one action
    assert wh.metastore.active_leases(TABLE) == []
    assert compact(t, "major").compacted
    # Spark reuses the DataFrame's plan: a second action reads the same snapshot, leases it
    # again while its tasks read, and releases it
    assert spark_rows(df) == arrow_rows(t.to_arrow())
    assert wh.metastore.active_leases(TABLE) == []
    assert Cleaner(wh, retention_seconds=0).run().removed != []  # nothing blocks it


def test_a_failed_read_task_keeps_its_lease(spark: SparkSession, wh: Warehouse) -> None:
    """A read task that fails keeps its lease for Spark's retry (it expires after
    ``leaseSeconds``): a snapshot is never left unprotected while it may still be read."""
    t = compacted(wh)
    df = read(spark, wh)
    planned = df.rdd.getNumPartitions()  # the plan (and its leases) exist now
    victim = next(Path(t.location).rglob("bucket_*"))
    victim.unlink()  # the task that reads it fails
    with pytest.raises(Exception, match="bucket_"):
        df.collect()
    kept = wh.metastore.active_leases(TABLE)
    assert 1 <= len(kept) <= planned


def test_to_df_holds_its_lease_until_the_session_stops(spark: SparkSession,
                                                       wh: Warehouse) -> None:
    t = compacted(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    df = at.toDF()
    assert compact(t, "major").compacted
    assert Cleaner(wh, retention_seconds=0).run().removed == []  # toDF's snapshot is held
    assert spark_rows(df) == arrow_rows(t.to_arrow())
    assert len(wh.metastore.active_leases(TABLE)) == 1
    assert spark_leases.release_held() >= 1  # what SparkSession.stop() runs first
    assert wh.metastore.active_leases(TABLE) == []
    assert Cleaner(wh, retention_seconds=0).run().removed != []


def test_spark_reads_complete_while_a_writer_holds_the_metastore(spark: SparkSession,
                                                                 wh: Warehouse) -> None:
    """The driver-side planning of ``format("acidstore")`` (snapshot, its lease, one lease
    per task), its tasks' lease checks and releases, and ``toDF()``'s driver lease all end
    while another process holds SQLite's write lock for minutes: before, each lease waited
    for the 30 s busy timeout and failed the read."""
    t = compacted(wh)
    expected = arrow_rows(t.to_arrow())
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    assert spark_rows(at.toDF()) == expected  # warm: the session and the Java reader are up
    spark_leases.release_held()
    with writer_locks_held(str(wh.location)):
        frames: list[Callable[[], DataFrame]] = [lambda: read(spark, wh), at.toDF]
        for frame in frames:
            start = time.monotonic()
            assert spark_rows(frame()) == expected
            assert time.monotonic() - start < 20  # a liveness bound, not a benchmark
        assert len(wh.metastore.active_leases(TABLE)) == 1  # toDF's, recorded meanwhile
    assert spark_leases.release_held() == 1
