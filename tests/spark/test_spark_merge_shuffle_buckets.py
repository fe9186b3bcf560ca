"""The shuffled MERGE by bucket (``merge_shuffle_buckets``): a source above
``spark.acidstore.merge.maxSourceBytes`` whose ON condition equates the bucketing column is
shuffled to the units of its bucket, and must change the table exactly as the broadcast MERGE
and the embedded one do: the same rows with the same ROW__IDs (its inserts too: they are
written in the broadcast MERGE's order), the same counts and history, the same errors. Each
case runs the MERGE three times, on three copies of one table: through Spark over the limit,
through Spark under it, and embedded."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import TABLE, arrow_rows, make_rows, new_table, staging_files, table_files

import acidstore
from acidstore import Table
from acidstore.errors import MergeCardinalityError
from acidstore.spark import AcidTable, merge_shuffle, merge_shuffle_buckets
from acidstore.spark.merge_shuffle_tags import partition_keys

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acidstore.spark.merge_statement import AcidMergeBuilder

LIMIT = "spark.acidstore.merge.maxSourceBytes"
HISTORY = ["write_id", "operation", "rows_inserted", "rows_updated", "rows_deleted",
           "partitions"]
Build = Callable[["AcidMergeBuilder"], "AcidMergeBuilder"]
Embedded = Callable[[Any], Any]


@dataclass
class Three:
    """One table in three warehouses: shuffled by bucket, broadcast, embedded."""

    spark: SparkSession
    shuffled: Table
    broadcast: Table
    embedded: Table
    #: one entry per MERGE that took the bucket path
    routed: list[int]

    def at(self, table: Table) -> AcidTable:
        return AcidTable.forName(self.spark, TABLE, warehouse=str(Path(table.location)
                                                                   .parents[1]))

    def merge(self, source: pa.Table, on: str, spark_side: Build, embedded_side: Embedded,
              frame: Callable[[], DataFrame] | None = None) -> None:
        """The MERGE on all three (``frame``: how Spark gets ``source``, in its order); their
        results, rows, ROW__IDs and history must agree."""
        frame = frame or (lambda: self.spark.createDataFrame(source))
        before = len(self.routed)
        self.spark.conf.set(LIMIT, "0")
        try:
            shuffled = spark_side(self.at(self.shuffled).alias("t").merge(
                frame().alias("s"), on)).execute()
        finally:
            self.spark.conf.unset(LIMIT)
        assert len(self.routed) == before + 1, "the MERGE did not take the bucket path"
        broadcast = spark_side(self.at(self.broadcast).alias("t").merge(
            frame().alias("s"), on)).execute()
        assert len(self.routed) == before + 1, "the broadcast MERGE took the bucket path"
        embedded = embedded_side(self.embedded.merge(source, on)).execute()
        assert shuffled.metrics == broadcast.metrics == embedded.metrics
        self.check_same()

    def check_same(self) -> list[tuple[Any, ...]]:
        expected = arrow_rows(self.embedded.to_arrow(with_row_id=True))
        for table in (self.shuffled, self.broadcast):
            assert arrow_rows(table.to_arrow(with_row_id=True)) == expected
            assert table.history().select(HISTORY).to_pylist() == \
                self.embedded.history().select(HISTORY).to_pylist()
            assert staging_files(table) == []
        return expected


@contextmanager
def three(spark: SparkSession, tmp_path: Path, rows: pa.Table, *, partitioned: bool = True,
          make: Callable[[acidstore.Warehouse], Table] | None = None) -> Iterator[Three]:
    routed: list[int] = []
    real = merge_shuffle_buckets.bucket_merge

    def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            done = real(*args, **kwargs)
        except Exception:  # a failed job (typed by the caller): it took the path
            routed.append(1)
            raise
        if done is not None:
            routed.append(1)
        return done

    with pytest.MonkeyPatch.context() as patch, \
            acidstore.connect(tmp_path / "shuffled") as a, \
            acidstore.connect(tmp_path / "broadcast") as b, \
            acidstore.connect(tmp_path / "embedded") as c:
        # merge_shuffle calls it by the name it imported
        patch.setattr(merge_shuffle, "bucket_merge", counted)
        shuffled, broadcast, embedded = (make(wh) if make else new_table(
            wh, partitioned=partitioned) for wh in (a, b, c))
        for t in (shuffled, broadcast, embedded):
            t.insert(rows)
        yield Three(spark, shuffled, broadcast, embedded, routed)


START = make_rows(range(30), dts=("a", "b", "c"))


def test_every_kind_of_clause_on_a_partitioned_table(spark: SparkSession,
                                                     tmp_path: Path) -> None:
    # conditions on every clause, two WHEN NOT MATCHED clauses that take different rows
    # (their rows are written clause by clause, as the broadcast MERGE writes them), new
    # partitions, a NULL key (matches nothing, inserted) and WHEN NOT MATCHED BY SOURCE
    source = pa.concat_tables([
        make_rows([1, 2, 5, 8, 13, 21, 34, 55, 89], name="s", dts=("a", "new", None)),
        pa.table({"id": pa.array([None], pa.int64()), "name": ["nul"], "amount": [7],
                  "dt": ["b"]})])
    with three(spark, tmp_path, START) as t:
        t.merge(source, "t.id = s.id",
                lambda m: m.whenMatchedDelete(condition="s.id = 13")
                .whenMatchedUpdate(condition="t.amount > 40",
                                   set={"name": "concat(t.name, s.name)"})
                .whenNotMatchedInsertAll(condition="s.id > 50")
                .whenNotMatchedInsert(values={"id": "s.id", "name": "'second'",
                                              "amount": "s.amount + 1", "dt": "s.dt"})
                .whenNotMatchedBySourceUpdate(condition="t.id % 4 = 0",
                                              set={"amount": "t.amount * 2"})
                .whenNotMatchedBySourceDelete(condition="t.id % 7 = 0"),
                lambda m: m.when_matched_delete(condition="s.id = 13")
                .when_matched_update({"name": "concat(t.name, s.name)"},
                                     condition="t.amount > 40")
                .when_not_matched_insert_all(condition="s.id > 50")
                .when_not_matched_insert({"id": "s.id", "name": "'second'",
                                          "amount": "s.amount + 1", "dt": "s.dt"})
                .when_not_matched_by_source_update({"amount": "t.amount * 2"},
                                                   condition="t.id % 4 = 0")
                .when_not_matched_by_source_delete(condition="t.id % 7 = 0"))
        rows = {r[0]: r for r in t.check_same()}
        assert rows[21][1] == "n21s21" and 13 not in rows  # updated, deleted
        assert rows[89][1] == "s89" and rows[34][1] == rows[None][1] == "second"


def test_unpartitioned_inserts_written_by_the_units_tasks(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    # INSERT * of the key: each task writes its own buckets' inserts (one job); a source of
    # three Spark partitions (in the source's order), rows out of key order, a NULL key
    ids = [*range(100, 140), 3, 7, None, 11, *range(60, 40, -1)]
    source = pa.table({"id": pa.array(ids, pa.int64()),
                       "name": [f"u{i}" for i in range(len(ids))],
                       "amount": pa.array(range(len(ids)), pa.int64())})
    rows = START.drop_columns(["dt"])
    with three(spark, tmp_path, rows, partitioned=False) as t:
        t.merge(source, "t.id = s.id",
                lambda m: m.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
                lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
                frame=lambda: functools.reduce(DataFrame.union, (
                    spark.createDataFrame(source.slice(i, 22)) for i in (0, 22, 44))))
        assert len(t.check_same()) == 30 + len(ids) - 3


def test_string_keys(spark: SparkSession, tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])

    def make(wh: acidstore.Warehouse) -> Table:
        return wh.create_table(TABLE, schema, bucket_by=["k"], buckets=4)

    start = pa.table({"k": [f"key{i}" for i in range(40)], "v": list(range(40))},
                     schema=schema)
    source = pa.table({"k": ["key3", "key17", "nouveau", "ünï", "key39"],
                       "v": [300, 1700, 1, 2, 3900]}, schema=schema)
    with three(spark, tmp_path, start, make=make) as t:
        t.merge(source, "t.k = s.k",
                lambda m: m.whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll(),
                lambda m: m.when_matched_update({"v": "s.v"}).when_not_matched_insert_all())


def test_a_target_row_matched_twice_fails_and_writes_nothing(spark: SparkSession,
                                                            tmp_path: Path) -> None:
    source = pa.concat_tables([make_rows([4, 9]), make_rows([9], name="again")])
    with three(spark, tmp_path, START) as t:
        files = table_files(t.shuffled)
        spark.conf.set(LIMIT, "0")
        try:
            with pytest.raises(MergeCardinalityError, match="more than one source row"):
                t.at(t.shuffled).alias("t").merge(spark.createDataFrame(source).alias("s"),
                                                  "t.id = s.id") \
                    .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        finally:
            spark.conf.unset(LIMIT)
        assert t.routed == [1]
        with pytest.raises(MergeCardinalityError):
            t.embedded.merge(source, "t.id = s.id").when_matched_update_all() \
                .when_not_matched_insert_all().execute()
        assert table_files(t.shuffled) == files
        t.check_same()


def test_a_non_deterministic_source_is_read_once(spark: SparkSession, tmp_path: Path) -> None:
    """Each source row's key is drawn by a non-deterministic UDF: an existing id (an update) or
    that id + 1000 (an insert). Read once, every source row is either: exactly one of the two
    happens per id. A second read of the source would draw again, and a row could be matched
    in one read and inserted in the other."""
    # a lambda: PySpark reads a function's type hints as a request for a pandas UDF
    key = F.udf(lambda i: i + (1000 if random.random() < 0.5 else 0), "bigint") \
        .asNondeterministic()
    source = spark.range(30).select(key(F.col("id")).alias("id"),
                                    F.lit("drawn").alias("name"),
                                    F.col("id").alias("amount"), F.lit("a").alias("dt"))
    with three(spark, tmp_path, START) as t:
        spark.conf.set(LIMIT, "0")
        try:
            got = t.at(t.shuffled).alias("t").merge(source.alias("s"), "t.id = s.id") \
                .whenMatchedUpdate(set={"name": "s.name"}).whenNotMatchedInsertAll().execute()
        finally:
            spark.conf.unset(LIMIT)
        assert t.routed == [1]
        rows = {r["id"]: r for r in t.shuffled.to_arrow().to_pylist()}
        assert got.rows_updated + got.rows_inserted == got.metrics["num_source_rows"] == 30
        for i in range(30):
            assert (rows[i]["name"] == "drawn") != (i + 1000 in rows), i


def test_partition_keys_give_each_task_its_own_partition(spark: SparkSession) -> None:
    for count in (1, 2, 3, 4, 7):
        keys = partition_keys(count)
        frame = spark.createDataFrame([(k,) for k in keys], "k int").repartition(count, "k")
        placed = frame.select("k", F.spark_partition_id().alias("p")).collect()
        assert sorted((r["p"], r["k"]) for r in placed) == list(enumerate(keys))
