"""The shuffled MERGE: a source above ``spark.acidstore.merge.maxSourceBytes`` stays in Spark,
joined to the target's join columns only, and must change the table exactly as the broadcast
MERGE and the embedded one do. The MERGE tests of ``test_spark_dml`` run here again with the
limit at 0 bytes (every source "too large"), beside cases of the shuffle's own: one source row
matching many target rows, an unpartitioned table, new partitions, and a failed job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from spark_support import make_rows, table_files
from test_spark_dml import (  # noqa: F401  (re-collected here, on the shuffled path)
    EVERY_CLAUSE_SOURCE,
    Pair,
    counts,
    make_pair,
    test_merge_cardinality_violation_writes_nothing,
    test_merge_matched_only_and_insert_only,
)

from acidstore.errors import MergeCardinalityError
from acidstore.spark import merge_shuffle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LIMIT = "spark.acidstore.merge.maxSourceBytes"


def count_shuffled(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets one entry per MERGE that takes the shuffled path."""
    calls: list[int] = []
    real = merge_shuffle.shuffled_merge

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(merge_shuffle, "shuffled_merge", counted)
    return calls


@pytest.fixture
def shuffled(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every MERGE of the test takes the shuffled path; yields one entry per shuffled MERGE
    (the test fails if none ran: the limit would not have applied)."""
    calls = count_shuffled(monkeypatch)
    spark.conf.set(LIMIT, "0")
    try:
        yield calls
    finally:
        spark.conf.unset(LIMIT)
    assert calls, "no MERGE took the shuffled path"


@pytest.fixture
def pair(spark: SparkSession, tmp_path: Path, shuffled: list[int]) -> Iterator[Pair]:
    with make_pair(spark, tmp_path) as made:
        yield made


def test_every_clause_first_match_wins(pair: Pair) -> None:
    # test_spark_dml's test of the same name, in SQL strings only (its Columns that have no
    # SQL form take Spark's DataFrame MERGE, not the shuffle)
    src = EVERY_CLAUSE_SOURCE
    inserted = {"id": "s.id", "amount": "s.amount * 10", "dt": "'pos'"}
    got = pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
        .whenMatchedDelete(condition="s.amount < 0") \
        .whenMatchedUpdate(condition="s.amount > t.amount",
                           set={"amount": "s.amount", "name": "concat(t.name, s.name)"}) \
        .whenMatchedUpdateAll(condition="s.amount <> 7") \
        .whenNotMatchedInsert(condition="s.amount > 0", values=inserted) \
        .whenNotMatchedInsertAll(condition="s.dt IS NOT NULL").execute()
    expected = pair.embedded.merge(src, "t.id = s.id") \
        .when_matched_delete(condition="s.amount < 0") \
        .when_matched_update({"amount": "s.amount", "name": "concat(t.name, s.name)"},
                             condition="s.amount > t.amount") \
        .when_matched_update_all(condition="s.amount <> 7") \
        .when_not_matched_insert(inserted, condition="s.amount > 0") \
        .when_not_matched_insert_all(condition="s.dt IS NOT NULL").execute()
    assert got.metrics == expected.metrics == {
        "num_source_rows": 18, "num_target_rows_updated": 6, "num_target_rows_deleted": 3,
        "num_target_rows_inserted": 5}
    assert counts(got) == counts(expected)
    by_id = {r[0]: r for r in pair.check_same()}
    assert by_id[1][1:3] == ("n1s1", 500) and by_id[107] == (107, None, 30, "pos")


def test_one_source_row_matching_many_target_rows(pair: Pair) -> None:
    # every source row matches several target rows (no cardinality violation: each target
    # row is matched once), across partitions and buckets
    src = pa.table({"k": pa.array([0, 1, 2], pa.int64()), "bonus": pa.array([5, 6, 7],
                                                                              pa.int64())})
    got = pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id % 3 = s.k") \
        .whenMatchedUpdate(condition="t.amount > 40", set={"amount": "t.amount + s.bonus"}) \
        .whenMatchedDelete(condition="t.id = 3").execute()
    expected = pair.embedded.merge(src, "t.id % 3 = s.k") \
        .when_matched_update({"amount": "t.amount + s.bonus"}, condition="t.amount > 40") \
        .when_matched_delete(condition="t.id = 3").execute()
    assert got.metrics == expected.metrics
    assert (got.rows_updated, got.rows_deleted) == (15, 1)
    pair.check_same()


def test_inserts_into_new_partitions_and_a_second_merge(pair: Pair) -> None:
    src = pa.concat_tables([make_rows(range(15, 40), name="x", dts=("b", "new", None))])
    for _ in range(2):  # the second run: the first one's rows are matched now
        got = pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
            .whenMatchedUpdate(set={"name": "s.name"}).whenNotMatchedInsertAll().execute()
        expected = pair.embedded.merge(src, "t.id = s.id") \
            .when_matched_update({"name": "s.name"}).when_not_matched_insert_all().execute()
        assert got.metrics == expected.metrics
        pair.check_same()
    assert {p.split("/")[0] for p in table_files(pair.spark)} >= {
        "dt=new", "dt=__HIVE_DEFAULT_PARTITION__"}


def test_unpartitioned_table(spark: SparkSession, tmp_path: Path, shuffled: list[int]) -> None:
    with make_pair(spark, tmp_path, partitioned=False) as made:
        src = make_rows(range(10, 30), name="u", partitioned=False)
        got = made.at.alias("t").merge(made.source(src).alias("s"), "t.id = s.id") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
        expected = made.embedded.merge(src, "t.id = s.id").when_matched_update_all() \
            .when_not_matched_insert_all().execute()
        assert got.metrics == expected.metrics == {
            "num_source_rows": 20, "num_target_rows_updated": 10,
            "num_target_rows_deleted": 0, "num_target_rows_inserted": 10}
        made.check_same()


def test_a_row_matched_twice_in_one_unit_fails_the_job(pair: Pair) -> None:
    files = table_files(pair.spark)
    src = pa.concat_tables([make_rows([7]), make_rows([7], name="again")])
    with pytest.raises(MergeCardinalityError, match="matched more than one source row"):
        pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert table_files(pair.spark) == files  # the aborted transaction's files are gone
    assert pair.spark.history().num_rows == 1
    pair.check_same()


def test_inserts_into_a_table_with_not_null_columns(spark: SparkSession, tmp_path: Path,
                                                    shuffled: list[int]) -> None:
    """The driver plans the insert units from partition values alone: a NOT NULL column
    must not make that planning fail (it once conformed a row of NULLs)."""
    import acidstore
    from acidstore.spark import AcidTable

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("name", pa.string()), pa.field("dt", pa.string())])
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.n", schema, partition_by=["dt"])
        t.insert(pa.table({"id": [1, 2], "name": ["a", "b"], "dt": ["x", "y"]}, schema=schema))
        src = spark.createDataFrame([(2, "B", "y"), (3, "c", "z")], "id long, name string, "
                                    "dt string")
        got = AcidTable.forName(spark, "db.n", warehouse=str(wh.location)).alias("t") \
            .merge(src.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"name": "s.name"}) \
            .whenNotMatchedInsertAll().execute()
        assert (got.rows_updated, got.rows_inserted) == (1, 1)
        assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
            {"id": 1, "name": "a", "dt": "x"}, {"id": 2, "name": "B", "dt": "y"},
            {"id": 3, "name": "c", "dt": "z"}]


def test_float_keys_match_as_sql_compares_them(spark: SparkSession, tmp_path: Path,
                                               shuffled: list[int]) -> None:
    """SQL's -0.0 = 0.0 (and Spark's NaN = NaN) hold in the shuffled MERGE as in the embedded
    one: the semi-join that sends Spark only the target rows whose key the source has must not
    drop a -0.0 row for a source 0.0 (Arrow's hash lookup tells the two zeros apart), which
    once turned the update of that row into the insert of a second one."""
    import acidstore
    from acidstore.spark import AcidTable

    schema = pa.schema([("k", pa.float64()), ("v", pa.string())])
    source = pa.table({"k": [0.0, float("nan"), 2.5], "v": ["new", "new", "new"]})
    with acidstore.connect(tmp_path / "wh") as wh, acidstore.connect(tmp_path / "e") as e_wh:
        t, e = wh.create_table("db.f", schema), e_wh.create_table("db.f", schema)
        for table in (t, e):
            table.insert(pa.table({"k": [-0.0, 1.5, float("nan")], "v": ["old"] * 3},
                                  schema=schema))
        got = AcidTable.forName(spark, "db.f", warehouse=str(wh.location)).alias("t") \
            .merge(spark.createDataFrame(source).alias("s"), "t.k = s.k") \
            .whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll().execute()
        expected = e.merge(source, "t.k = s.k").when_matched_update({"v": "s.v"}) \
            .when_not_matched_insert_all().execute()
        assert got.metrics == expected.metrics == {
            "num_source_rows": 3, "num_target_rows_updated": 2,
            "num_target_rows_deleted": 0, "num_target_rows_inserted": 1}
        assert sorted(map(repr, t.to_arrow().to_pylist())) == \
            sorted(map(repr, e.to_arrow().to_pylist()))


def test_a_small_source_spark_cannot_size_is_broadcast(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``createDataFrame`` of a Python list is an RDD Spark's statistics cannot size
    (``Long.MaxValue``), so every such source, one row or a million, took the shuffled path.
    Its rows are counted now, up to the limit's worth: two rows are broadcast, and the same
    source over a limit of 30 bytes (one row of Spark's default width, 52, is more) is shuffled."""
    calls = count_shuffled(monkeypatch)
    with make_pair(spark, tmp_path) as pair:
        def merge() -> tuple[int, int, int]:
            source = spark.createDataFrame([(1, "m1", 5, "b"), (300, "m300", 7, "a")],
                                           "id bigint, name string, amount int, dt string")
            plan = source._jdf.queryExecution().optimizedPlan()
            assert int(str(plan.stats().sizeInBytes())) == (1 << 63) - 1  # unsized
            return counts(pair.at.alias("t").merge(source.alias("s"), "t.id = s.id")
                          .whenMatchedUpdate(set={"amount": "s.amount"})
                          .whenNotMatchedInsertAll().execute())

        assert merge() == (1, 1, 0)
        assert calls == []  # broadcast
        spark.conf.set(LIMIT, "30")
        try:
            assert merge() == (0, 2, 0)
        finally:
            spark.conf.unset(LIMIT)
        assert calls == [1]  # shuffled
        rows = {r["id"]: r for r in pair.spark.to_arrow().to_pylist()}
        assert rows[1]["amount"] == 5 and rows[300]["amount"] == 7
