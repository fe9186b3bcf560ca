"""``AcidTable.toDF()`` on Spark's own ORC reader (``acidstore.spark.native``).

ORC-Java maps the top two levels of an ACID file's read schema by position, so a pruned read
schema would fail in the task or, inside ``row``, read one column's values as another's. These
tests read every single column alone, in every order, on a table whose columns have different
types and values, and check the values against the embedded reader; they also pin what the
native path must not take (it falls back to the Python data source there, with the same
rows), that a DataFrame reads the snapshot taken when it was made, and that missing files
stop the read with a typed error instead of fewer rows.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import arrow_rows, reads_natively, reads_on_jvm, spark_rows

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.errors import MissingDataError
from acidstore.spark import AcidTable
from acidstore.spark.jvm_read import JVM_READ_CONF
from acidstore.spark.native import NATIVE_READ_CONF

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("price", pa.decimal128(9, 2)),
                    ("day", pa.date32()), ("ok", pa.bool_()), ("score", pa.float64()),
                    ("part", pa.string())])


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({
        "id": list(ids), "name": [f"{tag}{i}" for i in ids],
        "price": [Decimal(i) / 4 for i in ids],
        "day": [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in ids],
        "ok": [i % 2 == 0 for i in ids], "score": [i * 1.5 for i in ids],
        "part": ["p" if i % 3 else "q" for i in ids]}, schema=SCHEMA)


@pytest.fixture(autouse=True)
def native_on(spark: SparkSession) -> Iterator[None]:
    """The native path is opt-in (``spark.acidstore.nativeRead``), and the Java reader, when
    it can read, comes first: it is turned off here."""
    spark.conf.set(NATIVE_READ_CONF, "true")
    spark.conf.set(JVM_READ_CONF, "false")
    yield
    spark.conf.unset(NATIVE_READ_CONF)
    spark.conf.unset(JVM_READ_CONF)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    """Partitioned and bucketed; inserts, an update, deletes in both partitions (the ROW__IDs
    of the two partitions coincide: each partition's deltas number rows from 0)."""
    with acidstore.connect(tmp_path_factory.mktemp("native") / "wh") as wh:
        t = wh.create_table("db.n", SCHEMA, partition_by=["part"], bucket_by=["id"],
                            buckets=2)
        t.insert(_rows(range(0, 30), "a"))
        t.insert(_rows(range(30, 45), "b"))
        t.update("id % 5 = 0", {"score": "score + 1000", "name": "upper(name)"})
        t.delete("id IN (1, 2, 31)")
        yield t


def _at(spark: SparkSession, t: Table) -> AcidTable:
    return AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))


def test_every_column_alone_reads_its_own_values(spark: SparkSession, table: Table) -> None:
    """A pruned ``row`` would be mapped by position: ``score`` alone would read ``id``."""
    df = _at(spark, table).toDF(with_row_id=True)
    assert reads_natively(df)
    expected = table.to_arrow(with_row_id=True)
    for name in expected.column_names:
        assert spark_rows(df.select(name)) == arrow_rows(expected.select([name])), name
    for names in (["score", "id"], ["part", "day", "name"], ["ok", "row__id", "price"]):
        assert spark_rows(df.select(*names)) == arrow_rows(expected.select(names)), names
    assert df.count() == expected.num_rows
    assert df.filter(F.col("score") >= 1000).count() == 9  # the updated ids 0, 5, ..., 40
    assert spark_rows(df.filter("part = 'q' AND ok").select("id")) == arrow_rows(
        table.to_arrow(columns=["id"], filter="part = 'q' AND ok"))


def test_columns_and_as_of_on_the_native_path(spark: SparkSession, table: Table) -> None:
    at = _at(spark, table)
    for as_of in (1, 2, 3, 4):
        df = at.toDF(columns=["name", "part"], as_of=as_of, with_row_id=True)
        assert reads_natively(df)
        assert spark_rows(df) == arrow_rows(table.to_arrow(
            columns=["name", "part"], as_of=as_of, with_row_id=True)), as_of


def test_what_the_native_path_does_not_take_reads_the_same_rows(spark: SparkSession,
                                                                table: Table) -> None:
    at = _at(spark, table)
    filtered = at.toDF(filter="score > 20")  # the embedded engine's SQL: the Python path
    assert not reads_natively(filtered)
    assert spark_rows(filtered) == arrow_rows(table.to_arrow(filter="score > 20"))
    spark.conf.set(NATIVE_READ_CONF, "false")
    off = at.toDF(with_row_id=True)
    spark.conf.set(NATIVE_READ_CONF, "true")
    assert not reads_natively(off)
    assert spark_rows(off) == spark_rows(at.toDF(with_row_id=True))


@pytest.mark.parametrize("java", [False, True])
def test_timestamps_read_natively_as_the_stored_wall_clock(spark: SparkSession,
                                                          tmp_path: Path, java: bool) -> None:
    """Hive's TIMESTAMP is a date-time without a zone: whatever the session's time zone, both
    JVM readers return the stored value, also in the hour a DST change repeats or skips,
    before 1970 and near the ends of the range ORC readers can decode, with a deleted row
    among them (moved out in place by the Java reader)."""
    if java:
        spark.conf.set(JVM_READ_CONF, "true")  # the fixture turns it off again
    schema = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us"))])
    values = [dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(2026, 11, 23, 12, 0, 0, 5),
              dt.datetime(2026, 3, 8, 2, 30), dt.datetime(2026, 11, 1, 1, 30, 0, 999999),
              dt.datetime(1900, 1, 1), dt.datetime(2262, 4, 10, 23, 59, 59, 999999),
              dt.datetime(1677, 9, 22), None]
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        with acidstore.connect(tmp_path / "wh") as wh:
            t = wh.create_table("db.ts", schema)
            t.insert(pa.table({"id": range(len(values)), "at": values}, schema=schema))
            t.delete("id = 1")
            df = _at(spark, t).toDF()
            assert reads_on_jvm(df) if java else reads_natively(df)
            assert spark_rows(df) == arrow_rows(t.to_arrow())
            assert spark_rows(df.select("at")) == arrow_rows(t.to_arrow(columns=["at"]))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.parametrize("native", ["true", "false"])
def test_a_dataframe_reads_the_snapshot_it_was_made_at(spark: SparkSession, tmp_path: Path,
                                                       native: str) -> None:
    """On both paths (the Python one pins the snapshot ``toDF()`` leased)."""
    spark.conf.set(NATIVE_READ_CONF, native)
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.s", SCHEMA, bucket_by=["id"], buckets=2)
        t.insert(_rows(range(10), "a"))
        df = _at(spark, t).toDF()
        filtered = _at(spark, t).toDF(filter="id >= 0")
        assert df.count() == filtered.count() == 10
        assert reads_natively(df) == (native == "true")
        t.insert(_rows(range(10, 15), "b"))
        t.delete("id < 3")
        assert df.count() == filtered.count() == 10  # every action: toDF()'s snapshot
        assert _at(spark, t).toDF().count() == 12


def test_a_missing_committed_directory_is_an_error_not_fewer_rows(spark: SparkSession,
                                                                 tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.m", SCHEMA, bucket_by=["id"], buckets=2)
        t.insert(_rows(range(10), "a"))
        t.delete("id < 3")
        deletes = next(Path(t.location).glob("delete_delta_*"))
        shutil.rmtree(deletes)
        with pytest.raises(MissingDataError, match="delete_delta"):
            _at(spark, t).toDF()


@pytest.mark.parametrize("java", [False, True])
def test_files_written_before_add_columns_read_nulls_natively(spark: SparkSession,
                                                               tmp_path: Path, java: bool) -> None:
    """ORC-Java maps ``row`` by position: files with fewer fields give NULL for the rest, on
    Spark's ORC reader and on acidstore's Java reader."""
    if java:
        spark.conf.set(JVM_READ_CONF, "true")  # the fixture turns it off again
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.e", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                            bucket_by=["id"], buckets=2)
        t.insert(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
        t.add_columns(pa.schema([("score", pa.float64()), ("day", pa.date32())]))
        t.insert(pa.table({"id": [4], "name": ["d"], "score": [0.5],
                           "day": [dt.date(2026, 11, 23)]}))
        t.delete("id = 2")
        df = _at(spark, t).toDF(with_row_id=True)
        assert reads_on_jvm(df) if java else reads_natively(df)
        assert spark_rows(df) == arrow_rows(t.to_arrow(with_row_id=True))
        assert spark_rows(df.select("day")) == arrow_rows(t.to_arrow(columns=["day"]))


def test_the_native_read_lists_its_files_in_the_driver(spark: SparkSession,
                                                       table: Table) -> None:
    """Spark lists more than ``parallelPartitionDiscovery.threshold`` paths in a job of its
    own (one task per path: most of the native read's tasks on S1's table); the plan already
    names every file, so the reads list them in the driver, and the setting comes back."""
    threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    spark.conf.set(threshold, "1")  # every partition here has more files than that
    sc = spark.sparkContext
    try:
        sc.setJobGroup("native-listing", "toDF() plans the native read")
        df = _at(spark, table).toDF(with_row_id=True)
        assert sc.statusTracker().getJobIdsForGroup("native-listing") == []
        assert spark.conf.get(threshold) == "1"
        assert reads_natively(df)
        assert spark_rows(df) == arrow_rows(table.to_arrow(with_row_id=True))
    finally:
        sc._jsc.clearJobGroup()
        spark.conf.unset(threshold)
