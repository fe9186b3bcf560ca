"""WHEN NOT MATCHED BY SOURCE through ``AcidTable`` (delta-spark's ``whenNotMatchedBySource
Update``/``Delete``) changes a table exactly as the same MERGE embedded, on each of Spark's
ways to run a MERGE: the broadcast one (the statement core's units, each given the source),
the shuffled one (Spark joins the source to the target's keys; every unit also reads its own
rows, and the units no pair reached run as one more job) and Spark's DataFrames (a Column
with no SQL form: a full outer join). Rows, counts, history and ROW__IDs must agree with the
embedded engine's; a clause that names the source is refused as embedded, naming it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from merge_by_source_support import (
    SCHEMA,
    SHAPES,
    Plan,
    Shape,
    embedded_merge,
    initial_rows,
    plans,
    spark_merge,
)
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import arrow_rows, spark_rows, staging_files, to_spark

import acidstore
from acidstore import Table
from acidstore.errors import InvalidExpressionError, InvalidInputError, MergeCardinalityError
from acidstore.spark import AcidTable, merge_shuffle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: examples per path: a tenth of the profile's (ci and dev 4)
EXAMPLES = max(2, settings().max_examples // 10)
LIMIT = "spark.acidstore.merge.maxSourceBytes"
HISTORY = ["write_id", "operation", "rows_inserted", "rows_updated", "rows_deleted",
           "partitions"]


@contextmanager
def twins(shape: Shape, rows: list[dict[str, Any]]) -> Iterator[tuple[Table, Table]]:
    """The same table in two warehouses: the first changed through Spark, the second
    embedded."""
    with tempfile.TemporaryDirectory() as root, \
            acidstore.connect(Path(root) / "spark") as s_wh, \
            acidstore.connect(Path(root) / "embedded") as e_wh:
        tables = (shape.create(s_wh, "db.t"), shape.create(e_wh, "db.t"))
        for t in tables:
            t.insert(pa.Table.from_pylist(rows, schema=SCHEMA))
        yield tables


@contextmanager
def path(spark: SparkSession, shuffled: bool) -> Iterator[list[int]]:
    """Every MERGE inside takes the shuffled path (``shuffled``) or the broadcast one;
    yields one entry per shuffled MERGE."""
    calls: list[int] = []
    real = merge_shuffle.shuffled_merge

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(merge_shuffle, "shuffled_merge", counted)
        if shuffled:
            spark.conf.set(LIMIT, "0")
        try:
            yield calls
        finally:
            spark.conf.unset(LIMIT)


def check_same(on_spark: Table, embedded: Table, at: AcidTable, *, exact: bool = True) -> None:
    """Rows (``exact``: with their ROW__IDs), through both readers, and history."""
    expected = arrow_rows(embedded.to_arrow(with_row_id=exact))
    assert arrow_rows(on_spark.to_arrow(with_row_id=exact)) == expected
    assert spark_rows(at.toDF(with_row_id=exact)) == expected
    assert on_spark.history().select(HISTORY).to_pylist() == \
        embedded.history().select(HISTORY).to_pylist()
    assert staging_files(on_spark) == []


@pytest.mark.parametrize("shuffled", [False, True], ids=["broadcast", "shuffled"])
@settings(max_examples=EXAMPLES)
@given(shape=st.sampled_from(SHAPES), data=st.data())
def test_the_same_merges_as_embedded(spark: SparkSession, shuffled: bool, shape: Shape,
                                     data: st.DataObject) -> None:
    start = data.draw(initial_rows(), "rows")
    # the shuffled MERGE's workers compute its WHEN NOT MATCHED rows in no fixed order, so
    # the ROW__IDs of its inserts (and from then on, of rows whose order they change) are
    # its own; every other ROW__ID is the embedded engine's
    exact = True
    with twins(shape, start) as (on_spark, embedded), path(spark, shuffled) as calls:
        at = AcidTable.forName(spark, "db.t", warehouse=str(Path(on_spark.location).parents[1]))
        for _ in range(data.draw(st.integers(1, 2), "merges")):
            ids = embedded.to_arrow(columns=["id"]).column("id").to_pylist()
            plan: Plan = data.draw(plans(shape, ids), "plan")
            source = to_spark(spark, plan.source_table())
            try:
                expected = embedded_merge(embedded, plan)
            except MergeCardinalityError:
                with pytest.raises(MergeCardinalityError):
                    spark_merge(at, source, plan)
                continue
            before = len(calls)
            got = spark_merge(at, source, plan)
            assert got.metrics == expected.metrics
            if shuffled and plan.source:
                assert len(calls) == before + 1, "the MERGE did not take the shuffled path"
            exact = exact and not (shuffled and got.rows_inserted)
            check_same(on_spark, embedded, at, exact=exact)
        if not shuffled:
            assert not calls


def test_a_shuffled_insert_into_a_bucket_with_no_file_yet(spark: SparkSession) -> None:
    """A source row whose key hashes to a bucket no file holds yet has no unit to go to: the
    tagger sends it to task 0, which must write its insert as the one writer of that bucket
    (it once refused the row as outside its buckets)."""
    rows = [{"id": i, "name": None, "amount": None, "dt": "a"} for i in (0, 2, 3, 5, 6)]
    source = pa.Table.from_pylist([{"id": i, "name": "new", "amount": i, "dt": "a"}
                                   for i in (0, 1)], schema=SCHEMA)
    with twins(SHAPES[1], rows) as (on_spark, embedded), path(spark, True) as calls:
        location = Path(on_spark.location)
        held = {p.name for p in location.glob("*/bucket_*")}
        expected = embedded.merge(source, "t.id = s.id").when_not_matched_insert_all().execute()
        new_files = {p.name for p in Path(embedded.location).glob("*/bucket_*")} - held
        assert new_files, "the inserted key's bucket held a file already: not this case"
        at = AcidTable.forName(spark, "db.t", warehouse=str(location.parents[1]))
        got = at.alias("t").merge(to_spark(spark, source).alias("s"), "t.id = s.id") \
            .whenNotMatchedInsertAll().execute()
        assert calls, "the MERGE did not take the shuffled path"
        assert got.metrics == expected.metrics and got.rows_inserted == 1
        check_same(on_spark, embedded, at, exact=False)


def test_column_conditions_run_on_spark_dataframes(spark: SparkSession) -> None:
    # a cast has no SQL form the core runs: Spark's DataFrames run the MERGE, joining the
    # source to every target row (a full outer join)
    rows = [{"id": i, "name": f"n{i}", "amount": i, "dt": "abcd"[i % 4]} for i in range(16)]
    with twins(SHAPES[0], rows) as (on_spark, embedded):
        at = AcidTable.forName(spark, "db.t", warehouse=str(Path(on_spark.location).parents[1]))
        src = pa.Table.from_pylist([{"id": 3, "name": "x", "amount": 30, "dt": "d"},
                                    {"id": 40, "name": "new", "amount": 1, "dt": "a"}],
                                   schema=SCHEMA)
        got = at.alias("t").merge(to_spark(spark, src).alias("s"), "t.id = s.id") \
            .whenMatchedUpdate(set={"amount": "s.amount"}).whenNotMatchedInsertAll() \
            .whenNotMatchedBySourceUpdate(condition=F.col("t.amount").cast("int") > 11,
                                          set={"name": F.upper(F.col("t.name"))}) \
            .whenNotMatchedBySourceDelete(condition="t.dt = 'b'").execute()
        expected = embedded.merge(src, "t.id = s.id") \
            .when_matched_update({"amount": "s.amount"}).when_not_matched_insert_all() \
            .when_not_matched_by_source_update({"name": "upper(t.name)"},
                                               condition="t.amount > 11") \
            .when_not_matched_by_source_delete(condition="t.dt = 'b'").execute()
        assert got.metrics == expected.metrics == {
            "num_source_rows": 2, "num_target_rows_updated": 5, "num_target_rows_deleted": 3,
            "num_target_rows_inserted": 1}
        check_same(on_spark, embedded, at)


def test_clauses_that_name_the_source_are_refused(spark: SparkSession, tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = SHAPES[0].create(wh, "db.t")
        t.insert(pa.table({"id": [1, 2], "name": ["a", "b"], "amount": [1, 2],
                           "dt": ["a", "b"]}, schema=SCHEMA))
        at = AcidTable.forName(spark, "db.t", warehouse=str(wh.location)).alias("t")
        src = spark.createDataFrame([(1, "x", 5, "a")], "id bigint, name string, "
                                    "amount bigint, dt string").alias("s")
        with pytest.raises(InvalidInputError, match=r"clause 1 .*'s.amount > 1' refers to the"):
            at.merge(src, "t.id = s.id").whenNotMatchedBySourceDelete("s.amount > 1").execute()
        with pytest.raises(InvalidInputError, match=r"clause 1 .*has no condition but is not"):
            at.merge(src, "t.id = s.id").whenNotMatchedBySourceDelete() \
                .whenNotMatchedBySourceDelete("t.id = 2").execute()
        with pytest.raises(InvalidInputError, match="needs at least one column"):
            at.merge(src, "t.id = s.id").whenNotMatchedBySourceUpdate(set={})
        # a Column naming the source has no row to read: Spark's analysis over the target
        with pytest.raises(InvalidExpressionError, match="WHEN NOT MATCHED BY SOURCE clause 1"):
            at.merge(src, "t.id = s.id").whenNotMatchedBySourceUpdate(
                set={"name": F.upper(F.col("s.name"))}).execute()
        assert t.history().num_rows == 1
        assert sorted(t.to_arrow().column("name").to_pylist()) == ["a", "b"]
