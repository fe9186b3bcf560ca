"""Every query shape Spark users write on an acidstore DataFrame returns what the embedded
reader returns.

The DataFrame comes from ``AcidTable.toDF`` or ``spark.read.format("acidstore")``; the table is
partitioned (NULL partition included) and bucketed, holds pre-ACID original files (write id 0)
and inserts, updates and deletes. Each shape is run by Spark and, as the same SQL, by DuckDB
over ``Table.to_arrow`` of the same snapshot: counts, projections of only the partition column,
filters on data, partition and ``row__id`` columns (which PySpark never pushes to the source:
see tests/spark/test_spark_pushdown_guard.py), aggregates, self joins and joins with other
DataFrames, joins of two snapshots (as-of reads), Spark SQL over a temporary view, ordered
limits. Shapes that drop every column (``count()``) or keep only the partition column are the
ones a reader on Spark's own ORC path would break on (issue 11), so they are pinned here
before such a path exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import (
    Row,
    add_originals,
    arrow_rows,
    make_rows,
    new_table,
    reads_natively,
    reads_on_jvm,
    spark_rows,
)

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.spark import AcidTable
from acidstore.spark.jvm_read import JVM_READ_CONF
from acidstore.spark.native import NATIVE_READ_CONF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: another DataFrame to join with: some ids of the table, one it does not hold
OTHER = pa.table({"id": pa.array([1, 3, 12, 14, 31, 99], pa.int64()),
                  "tag": ["x", "y", "z", "w", "v", "u"]})


@pytest.fixture(scope="module", params=["originals", "acid"])
def table(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Table]:
    """Write 0: originals (ids 0-5; only in the "originals" table, which ``toDF`` reads
    through the Python data source: the "acid" one it reads with the Java reader, or Spark's
    own ORC reader when that is off);
    1: insert 10-21 (dt a, b, NULL); 2: update of every third id; 3: delete of 1 and 11;
    4: insert 30-33."""
    with acidstore.connect(tmp_path_factory.mktemp("shapes") / "wh") as wh:
        t = new_table(wh, buckets=2)
        if request.param == "originals":
            add_originals(t, make_rows(range(6)), buckets=2)
        t.insert(make_rows(range(10, 22), dts=("a", "b", None)))
        t.update("id % 3 = 0", {"amount": "amount + 1000", "name": "upper(name)"})
        t.delete("id IN (1, 11)")
        t.insert(make_rows(range(30, 34), name="m"))
        yield t


def frame(spark: SparkSession, t: Table, how: str, as_of: int | None = None) -> DataFrame:
    """The table (with ``row__id``) as the user asks for it."""
    if how == "toDF":
        at = AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))
        return at.toDF(as_of=as_of, with_row_id=True)
    reader = spark.read.format("acidstore").option("warehouse", str(handle_of(t).core.location)) \
        .option("withRowId", "true")
    if as_of is not None:
        reader = reader.option("asOf", str(as_of))
    return reader.load(t.name)


def duck(sql: str, t: Table) -> list[Row]:
    """``sql`` over the embedded reader's rows: ``t`` now, ``t1`` as of write 1, ``other``."""
    con = duckdb.connect()
    try:
        con.register("t", t.to_arrow(with_row_id=True))
        con.register("t1", t.to_arrow(with_row_id=True, as_of=1))
        con.register("other", OTHER)
        return arrow_rows(con.sql(sql).to_arrow_table())
    finally:
        con.close()


@pytest.fixture(autouse=True)
def native_on(spark: SparkSession) -> Iterator[None]:
    """``toDF()`` takes Spark's ORC reader where it can (opt-in: ``spark.acidstore.nativeRead``),
    so every shape runs on both read paths."""
    spark.conf.set(NATIVE_READ_CONF, "true")
    yield
    spark.conf.unset(NATIVE_READ_CONF)


Query = Callable[["DataFrame", "SparkSession", Table], "DataFrame"]

#: (name, the shape on Spark, the same in SQL); ``t1`` is the table as of write 1
SHAPES: list[tuple[str, Query, str]] = [
    ("select *", lambda df, s, t: df, "SELECT * FROM t"),
    ("only the partition column", lambda df, s, t: df.select("dt"), "SELECT dt FROM t"),
    ("distinct partitions", lambda df, s, t: df.select("dt").distinct(),
     "SELECT DISTINCT dt FROM t"),
    ("count per partition", lambda df, s, t: df.groupBy("dt").count(),
     "SELECT dt, count(*) FROM t GROUP BY dt"),
    ("filter on the partition", lambda df, s, t: df.filter(F.col("dt") == "a"),
     "SELECT * FROM t WHERE dt = 'a'"),
    ("the NULL partition, one column", lambda df, s, t: df.where("dt IS NULL").select("id"),
     "SELECT id FROM t WHERE dt IS NULL"),
    ("filter on data, projection", lambda df, s, t: df.filter("amount > 100 AND name LIKE 'N%'")
     .select("name", "id"), "SELECT name, id FROM t WHERE amount > 100 AND name LIKE 'N%'"),
    ("filter on row__id", lambda df, s, t: df.filter(F.col("row__id.writeid") == 2)
     .select("id", "row__id"), "SELECT id, row__id FROM t WHERE row__id.writeid = 2"),
    ("the original rows", lambda df, s, t: df.where("row__id.writeid = 0").select("id", "dt"),
     "SELECT id, dt FROM t WHERE row__id.writeid = 0"),
    ("row__id fields of a partition", lambda df, s, t: df.where("dt = 'b'").select(
        "row__id.bucketid", "row__id.rowid"),
     "SELECT row__id.bucketid, row__id.rowid FROM t WHERE dt = 'b'"),
    ("only row__id", lambda df, s, t: df.select("row__id"), "SELECT row__id FROM t"),
    ("aggregates", lambda df, s, t: df.agg(F.sum("amount"), F.max("row__id.writeid"),
                                           F.count_distinct(F.struct("dt", "row__id"))),
     "SELECT sum(amount)::BIGINT, max(row__id.writeid), count(DISTINCT (dt, row__id)) "
     "FROM t"),
    ("self join", lambda df, s, t: df.alias("a").join(df.alias("b"), F.col("a.id") == F.col(
        "b.id")).select("a.id", "a.dt", "b.row__id"),
     "SELECT a.id, a.dt, b.row__id FROM t a JOIN t b ON a.id = b.id"),
    ("join another DataFrame", lambda df, s, t: df.join(s.createDataFrame(OTHER), "id", "left")
     .select("id", "tag", "amount"),
     "SELECT t.id, tag, amount FROM t LEFT JOIN other ON t.id = other.id"),
    ("rows changed since write 1",
     lambda df, s, t: df.join(frame(s, t, "toDF", as_of=1), ["dt", "row__id"], "left_anti")
     .select("id", "row__id"),
     "SELECT id, row__id FROM t ANTI JOIN t1 USING (dt, row__id)"),
    ("ordered limit", lambda df, s, t: df.orderBy(
        F.col("dt").asc_nulls_first(), "row__id.writeid", "row__id.bucketid", "row__id.rowid")
     .limit(5).select("id"),
     "SELECT id FROM t ORDER BY dt NULLS FIRST, row__id.writeid, row__id.bucketid, "
     "row__id.rowid LIMIT 5"),
]
SQL_SHAPES = [  # Spark SQL over a temporary view of the DataFrame
    "SELECT dt, CAST(sum(amount) AS BIGINT), count(*) FROM v WHERE id > 3 GROUP BY dt",
    "SELECT count(*) FROM v",
    "SELECT row__id.writeid, count(*) FROM v GROUP BY row__id.writeid",
]


@pytest.fixture(params=["jvm", "native"])
def read_path(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """Which reader ``toDF()`` takes where it can: the Java one (the default) or, with that
    turned off, Spark's own ORC reader."""
    if request.param == "native":
        spark.conf.set(JVM_READ_CONF, "false")
    yield request.param
    spark.conf.unset(JVM_READ_CONF)


@pytest.mark.parametrize("how", ["toDF", "format"])
def test_read_shapes_return_what_embedded_returns(spark: SparkSession, table: Table,
                                                  how: str, read_path: str) -> None:
    if how == "format" and read_path == "native":
        pytest.skip("format('acidstore') is the Python data source whatever toDF takes")
    df = frame(spark, table, how)
    has_originals = any(r["writeid"] == 0
                        for r in table.to_arrow(with_row_id=True)["row__id"].to_pylist())
    fast = how == "toDF" and not has_originals
    assert reads_on_jvm(df) == (fast and read_path == "jvm")
    assert reads_natively(df) == (fast and read_path == "native")
    for name, query, sql in SHAPES:
        assert spark_rows(query(df, spark, table)) == duck(sql, table), name
    df.createOrReplaceTempView("v")
    for sql in SQL_SHAPES:
        assert spark_rows(spark.sql(sql)) == duck(sql.replace(" v", " t"), table), sql


def test_counts_and_projections_of_nothing_but_partitions(spark: SparkSession,
                                                          table: Table) -> None:
    """``count()`` reads no column and ``select("dt")`` only the partition column: Spark
    prunes nothing in a Python data source, but these are the shapes a pruning reader breaks
    on, at every snapshot and through every way of asking for the table."""
    at = AcidTable.forName(spark, table.name, warehouse=str(handle_of(table).core.location))
    for as_of in (None, 1, 2, 3):
        expected = table.to_arrow(columns=["dt"], as_of=as_of)
        for df in (frame(spark, table, "format", as_of=as_of),
                   at.toDF(columns=["dt"], as_of=as_of)):
            assert df.count() == expected.num_rows, as_of
            assert spark_rows(df.select("dt")) == arrow_rows(expected), as_of
    assert at.toDF(columns=[]).count() == table.to_arrow().num_rows
    assert at.toDF(filter="dt = 'a'").count() == table.to_arrow(filter="dt = 'a'").num_rows


def test_a_filter_never_leaks_into_other_queries_of_the_dataframe(spark: SparkSession,
                                                                  table: Table) -> None:
    """PySpark keeps a pushed filter with the DataFrame's plan (see the pushdown guard), so a
    source that dropped rows by pushed filters would answer a later ``select``/``count`` of
    the same DataFrame with the earlier query's rows; acidstore's must not."""
    expected: dict[str, Any] = {"rows": table.to_arrow().num_rows,
                                "ids": arrow_rows(table.to_arrow(columns=["id"]))}
    for how in ("toDF", "format"):
        df = frame(spark, table, how)
        assert df.filter("amount > 100").count() < expected["rows"]
        assert df.filter(F.col("dt") == "a").select("id").count() < expected["rows"]
        assert spark_rows(df.select("id")) == expected["ids"], how
        assert df.count() == expected["rows"], how


def test_time_travel_reads_of_every_write(spark: SparkSession, table: Table) -> None:
    """An as-of read through either entry point equals the embedded as-of read, with
    ROW__IDs, for each write id (the originals alone: 0 is no write id, so write 1 on)."""
    for as_of in (1, 2, 3, 4):
        expected = arrow_rows(table.to_arrow(as_of=as_of, with_row_id=True))
        for how in ("toDF", "format"):
            assert spark_rows(frame(spark, table, how, as_of=as_of)) == expected, (how, as_of)

