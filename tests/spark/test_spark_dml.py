"""DELETE, UPDATE and MERGE on Spark change a table exactly as the same statements embedded.

Two warehouses start from the same rows; each statement runs through ``AcidTable`` on one and
through the embedded ``Table`` on the other, and both must then read the same (sorted rows),
report the same counts and metrics, and fail with the same ``acidstore.errors`` class for the
same mistake, writing nothing. Conflicts between a Spark statement and an embedded transaction
follow the embedded rules (first committer wins, row-level).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import (
    TABLE,
    arrow_rows,
    make_rows,
    new_table,
    spark_rows,
    staging_files,
    table_files,
    to_spark,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.api.table import WriteResult
from acidstore.errors import (
    InvalidExpressionError,
    InvalidInputError,
    MergeCardinalityError,
    WriteConflictError,
)
from acidstore.spark import AcidTable
from acidstore.spark.conditions import referenced_columns

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class Pair:
    """The same table twice: ``spark`` is changed through Spark, ``embedded`` embedded."""

    at: AcidTable
    spark: Table
    embedded: Table
    session: SparkSession
    #: the warehouse of ``spark``
    wh: Warehouse

    def check_same(self) -> list[tuple[Any, ...]]:
        expected = arrow_rows(self.embedded.to_arrow())
        assert arrow_rows(self.spark.to_arrow()) == expected
        assert spark_rows(self.at.toDF()) == expected
        assert staging_files(self.spark) == []
        return expected

    def source(self, rows: pa.Table) -> Any:
        return to_spark(self.session, rows)


START = make_rows(range(20), dts=("a", "b", "c"))


@contextmanager
def make_pair(spark: SparkSession, tmp_path: Path, *, partitioned: bool = True
              ) -> Iterator[Pair]:
    """Two warehouses holding START (or its unpartitioned form), one for each engine."""
    rows = START if partitioned else START.drop_columns(["dt"])
    with acidstore.connect(tmp_path / "spark") as s_wh, \
            acidstore.connect(tmp_path / "embedded") as e_wh:
        s, e = new_table(s_wh, partitioned=partitioned), new_table(e_wh, partitioned=partitioned)
        s.insert(rows)
        e.insert(rows)
        yield Pair(AcidTable.forName(spark, TABLE, warehouse=str(s_wh.location)), s, e, spark,
                   s_wh)


@pytest.fixture
def pair(spark: SparkSession, tmp_path: Path) -> Iterator[Pair]:
    with make_pair(spark, tmp_path) as made:
        yield made


def counts(result: WriteResult) -> tuple[int, int, int]:
    return result.rows_inserted, result.rows_updated, result.rows_deleted


def test_delete_like_embedded(pair: Pair) -> None:
    got = pair.at.delete("amount > 120 AND dt = 'a'")
    assert counts(got) == counts(pair.embedded.delete("amount > 120 AND dt = 'a'")) == (0, 0, 2)
    assert got.committed and got.write_id == 2
    pair.check_same()
    got = pair.at.delete(F.col("id") % 4 == 1)
    assert counts(got) == counts(pair.embedded.delete("id % 4 = 1"))
    pair.check_same()
    assert pair.at.delete("id > 1000").rows_deleted == 0  # nothing matches: still commits
    pair.embedded.delete("id > 1000")
    pair.check_same()
    remaining = len(pair.check_same())
    nothing: Any = None  # what a caller who forgot the condition passes
    forgotten: list[Callable[[], object]] = [
        pair.at.delete, lambda: pair.embedded.delete(nothing),
        lambda: pair.at.update(set={"name": "'x'"}),
        lambda: pair.embedded.update(nothing, {"name": "'x'"})]
    for call in forgotten:
        with pytest.raises(InvalidInputError, match="needs a condition; pass 'true'"):
            call()
    pair.check_same()  # nothing changed
    assert pair.at.delete("true").rows_deleted == remaining
    pair.embedded.delete("TRUE")
    assert pair.check_same() == []


def test_update_like_embedded(pair: Pair) -> None:
    assignments = {"amount": "amount * 2 + id", "name": "concat(name, '!')"}
    got = pair.at.update("id < 7", assignments)
    assert counts(got) == counts(pair.embedded.update("id < 7", assignments)) == (0, 7, 0)
    pair.check_same()
    got = pair.at.update(F.col("dt") == "b", {"amount": F.col("amount") + 1, "name": "'B'"})
    assert counts(got) == counts(pair.embedded.update("dt = 'b'", {"amount": "amount + 1",
                                                                   "name": "'B'"}))
    pair.check_same()
    got = pair.at.update("true", {"name": "CAST(NULL AS STRING)"})
    assert got.rows_updated == 20
    pair.embedded.update("TRUE", {"name": "NULL"})
    rows = pair.check_same()
    assert {r[1] for r in rows} == {None}
    assert pair.spark.history().column("operation").to_pylist() == [
        "insert", "update", "update", "update"]


def test_update_takes_python_values_like_embedded(pair: Pair) -> None:
    """``new_values``: Python values, no SQL quoting, alone and beside SQL or a Column."""
    odd = "it's -- 'x' || name"
    got = pair.at.update("id < 3", new_values={"name": odd, "amount": None})
    assert counts(got) == counts(pair.embedded.update(
        "id < 3", new_values={"name": odd, "amount": None})) == (0, 3, 0)
    pair.check_same()
    got = pair.at.update(F.col("id") == 5, {"amount": F.col("amount") + 1},
                         new_values={"name": "five"})
    assert counts(got) == counts(pair.embedded.update(
        "id = 5", {"amount": "amount + 1"}, new_values={"name": "five"}))
    rows = pair.check_same()
    assert {r[1] for r in rows if r[0] < 3} == {odd} and \
        next(r[1] for r in rows if r[0] == 5) == "five"
    with pytest.raises(InvalidInputError, match="column 'amount'"):
        pair.at.update("true", new_values={"amount": "many"})
    with pytest.raises(InvalidInputError, match="both as a SQL expression and as a new value"):
        pair.at.update("true", {"name": "'x'"}, new_values={"NAME": "y"})
    pair.check_same()


def test_partition_and_bucketing_columns_cannot_be_updated(pair: Pair) -> None:
    for column in ("dt", "id", "ID"):
        with pytest.raises(InvalidInputError, match="cannot update"):
            pair.embedded.update("id = 1", {column: "5"})
        with pytest.raises(InvalidInputError, match="cannot update"):
            pair.at.update("id = 1", {column: "5"})
    with pytest.raises(InvalidInputError):
        pair.at.alias("t").merge(pair.source(START).alias("s"), "t.id = s.id") \
            .whenMatchedUpdate(set={"dt": "s.dt"}).execute()
    assert pair.spark.history().num_rows == 1
    pair.check_same()


def raises_same(embedded: Callable[[], object], on_spark: Callable[[], object]) -> type:
    """Both calls raise; the Spark one raises the embedded one's class (returned)."""
    with pytest.raises(InvalidInputError) as expected:
        embedded()
    kind = type(expected.value)
    with pytest.raises(kind):
        on_spark()
    return kind


def test_unknown_column_raises_invalid_expression(pair: Pair) -> None:
    e, at = pair.embedded, pair.at
    src = make_rows([1, 100])
    cases: list[tuple[Callable[[], object], Callable[[], object]]] = [
        (lambda: e.delete("nope = 1"), lambda: at.delete("nope = 1")),
        (lambda: e.delete("nope = 1"), lambda: at.delete(F.col("nope") == 1)),
        (lambda: e.update("nope = 1", {"amount": "1"}),
         lambda: at.update("nope = 1", {"amount": "1"})),
        (lambda: e.update("id = 1", {"amount": "nope + 1"}),
         lambda: at.update("id = 1", {"amount": "nope + 1"})),
        (lambda: e.merge(src, "t.id = s.nope").when_matched_delete().execute(),
         lambda: at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.nope")
         .whenMatchedDelete().execute()),
        (lambda: e.merge(src, "t.id = s.id").when_not_matched_insert(
            {"id": "s.id", "amount": "s.nope"}).execute(),
         lambda: at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id")
         .whenNotMatchedInsert(values={"id": "s.id", "amount": "s.nope"}).execute()),
    ]
    for embedded, on_spark in cases:
        assert raises_same(embedded, on_spark) is InvalidExpressionError
    assert pair.spark.history().num_rows == 1
    pair.check_same()
    # every failed statement aborted its transaction
    states = pair.wh.show_transactions().column("state").to_pylist()
    assert states.count("committed") == 1 and set(states) == {"committed", "aborted"}


def test_merge_cardinality_violation_writes_nothing(pair: Pair) -> None:
    files = table_files(pair.spark)
    src = pa.concat_tables([make_rows([3, 4, 50]), make_rows([3], name="again")])
    raises_same(
        lambda: pair.embedded.merge(src, "t.id = s.id").when_matched_update_all()
        .when_not_matched_insert_all().execute(),
        lambda: pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    with pytest.raises(MergeCardinalityError):
        pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
            .whenMatchedDelete().execute()
    assert table_files(pair.spark) == files
    assert pair.spark.history().num_rows == 1
    pair.check_same()
    # without a WHEN MATCHED clause the duplicate source rows are plain inserts
    got = pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
        .whenNotMatchedInsertAll().execute()
    assert got.rows_inserted == 1
    pair.embedded.merge(src, "t.id = s.id").when_not_matched_insert_all().execute()
    pair.check_same()


#: matched rows 0..9 for every WHEN MATCHED clause, unmatched 100..107 for the inserts
EVERY_CLAUSE_SOURCE = pa.Table.from_pylist(
    [{"id": i, "name": f"s{i}", "amount": amount, "dt": "z"} for i, amount in
     [(0, -5), (1, 500), (2, -1), (3, 1), (4, 400), (5, 0), (6, 7), (7, 71), (8, -8), (9, 90)]]
    + [{"id": i, "name": f"new{i}", "amount": i - 104, "dt": "c" if i % 2 else None}
       for i in range(100, 108)], schema=START.schema)


def test_merge_every_clause_first_match_wins(pair: Pair) -> None:
    # matched rows: 0..9; amount < 0 -> delete (even when the update condition holds too),
    # amount > t.amount -> update, else update all; unmatched 100..107: inserts by condition
    src = EVERY_CLAUSE_SOURCE
    clauses_spark = (
        pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id")
        .whenMatchedDelete(condition="s.amount < 0")
        .whenMatchedUpdate(condition=F.col("s.amount") > F.col("t.amount"),
                           set={"amount": "s.amount", "name": F.concat("t.name", "s.name")})
        .whenMatchedUpdateAll(condition="s.amount <> 7")
        .whenNotMatchedInsert(condition="s.amount > 0",
                              values={"id": "s.id", "amount": "s.amount * 10", "dt": "'pos'"})
        .whenNotMatchedInsertAll(condition="s.dt IS NOT NULL")
    )
    clauses_embedded = (
        pair.embedded.merge(src, "t.id = s.id")
        .when_matched_delete(condition="s.amount < 0")
        .when_matched_update({"amount": "s.amount", "name": "concat(t.name, s.name)"},
                             condition="s.amount > t.amount")
        .when_matched_update_all(condition="s.amount <> 7")
        .when_not_matched_insert({"id": "s.id", "amount": "s.amount * 10", "dt": "'pos'"},
                                 condition="s.amount > 0")
        .when_not_matched_insert_all(condition="s.dt IS NOT NULL")
    )
    got, expected = clauses_spark.execute(), clauses_embedded.execute()
    assert got.metrics == expected.metrics
    assert got.metrics == {"num_source_rows": 18, "num_target_rows_updated": 6,
                           "num_target_rows_deleted": 3, "num_target_rows_inserted": 5}
    assert counts(got) == counts(expected)
    rows = pair.check_same()
    by_id = {r[0]: r for r in rows}
    assert 0 not in by_id and 2 not in by_id and 8 not in by_id
    assert by_id[1][1:3] == ("n1s1", 500)  # the conditional update, not UPDATE ALL
    assert by_id[3][1:3] == ("s3", 1)  # UPDATE ALL (its partition stays)
    assert by_id[6][1:3] == ("n6", 60)  # no clause holds: unchanged
    assert by_id[107] == (107, None, 30, "pos")
    assert by_id[101] == (101, "new101", -3, "c")
    assert 100 not in by_id  # amount -4, dt NULL: no insert clause holds
    parts = {p.split("/")[0] for p in table_files(pair.spark)}
    assert parts == {"dt=a", "dt=b", "dt=c", "dt=pos"}


def test_merge_matched_only_and_insert_only(pair: Pair) -> None:
    src = make_rows([1, 2, 3, 200, 201], name="m")
    got = pair.at.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
        .whenMatchedUpdate(set={"amount": "t.amount + s.amount"}).execute()
    expected = pair.embedded.merge(src, "t.id = s.id") \
        .when_matched_update({"amount": "t.amount + s.amount"}).execute()
    assert got.metrics == expected.metrics
    pair.check_same()
    got = pair.at.alias("tgt").merge(pair.source(src).alias("src"), "tgt.id = src.id") \
        .whenNotMatchedInsertAll().execute()
    expected = pair.embedded.merge(src, "tgt.id = src.id", source_alias="src",
                                   target_alias="tgt").when_not_matched_insert_all().execute()
    assert got.metrics == expected.metrics
    assert got.rows_inserted == 2
    pair.check_same()


def test_concurrent_update_of_the_same_row_conflicts(pair: Pair) -> None:
    wh = pair.wh
    txn = wh.transaction()
    txn.table(TABLE).update("id = 4", {"amount": "-1"})  # not committed yet
    other = wh.transaction()
    other.table(TABLE).update("id = 5", {"amount": "-2"})  # same partition, other row
    pair.at.update("id = 4", {"amount": "amount + 1"})  # Spark commits first
    with pytest.raises(WriteConflictError):
        txn.commit()
    other.commit()  # finer than Hive: a different row of the partition still commits
    rows = {r[0]: r[2] for r in arrow_rows(pair.spark.to_arrow())}
    assert (rows[4], rows[5]) == (41, -2)
    assert spark_rows(pair.at.toDF(filter="id IN (4, 5)")) == arrow_rows(
        pair.spark.to_arrow(filter="id IN (4, 5)"))


def test_statements_read_at_their_transaction_snapshot(pair: Pair) -> None:
    """DML reads the rows it changes through the data source at its transaction's snapshot
    (options snapshotTxns/snapshotWriteIds, as AcidTable passes them): a commit after the
    transaction began is not seen, whatever the case of the option names."""
    wh = pair.wh
    with wh.transaction() as txn, acidstore.connect(wh.location) as other:
        txns, write_ids = str(txn.snapshot), str(txn._core.write_ids(TABLE))
        other.table(TABLE).insert(make_rows([500]))  # another client commits meanwhile
        pinned = pair.session.read.format("acidstore").option("warehouse", str(wh.location)) \
            .option("snapshotTxns", txns).option("snapshotWriteIds", write_ids) \
            .option("withRowId", "true").load(TABLE)
        assert spark_rows(pinned) == arrow_rows(pair.spark.to_arrow(as_of=1, with_row_id=True))
    assert 500 in {r[0] for r in spark_rows(pair.at.toDF())}


def test_unpartitioned_unbucketed_table(spark: SparkSession, tmp_path: Path) -> None:
    start = make_rows(range(12), partitioned=False)
    with acidstore.connect(tmp_path / "spark") as s_wh, \
            acidstore.connect(tmp_path / "embedded") as e_wh:
        s = new_table(s_wh, partitioned=False, buckets=0)
        e = new_table(e_wh, partitioned=False, buckets=0)
        s.insert(start)
        e.insert(start)
        pair = Pair(AcidTable.forName(spark, TABLE, warehouse=str(s_wh.location)), s, e, spark,
                    s_wh)
        pair.at.insert(pair.source(make_rows(range(20, 26), partitioned=False)).repartition(2))
        e.insert(make_rows(range(20, 26), partitioned=False))
        pair.at.update("id % 3 = 0", {"amount": "-amount", "id": "id + 100"})
        e.update("id % 3 = 0", {"amount": "-amount", "id": "id + 100"})
        pair.check_same()
        pair.at.delete(F.col("amount") < 0)
        e.delete("amount < 0")
        pair.check_same()
        src = make_rows([1, 2, 3, 30, 31], name="m", partitioned=False)
        on = F.col("t.id") == F.col("s.id")
        got = pair.at.alias("t").merge(pair.source(src).alias("s"), on) \
            .whenMatchedUpdateAll(condition=F.col("s.id") != 2).whenMatchedDelete() \
            .whenNotMatchedInsertAll().execute()
        expected = e.merge(src, "t.id = s.id").when_matched_update_all(condition="s.id <> 2") \
            .when_matched_delete().when_not_matched_insert_all().execute()
        assert got.metrics == expected.metrics
        pair.check_same()
        # deletes decode only the columns their condition names (here: none but ROW__ID)
        assert pair.at.delete("`ID` = 22").rows_deleted == e.delete("id = 22").rows_deleted == 1
        pair.check_same()
        remaining = len(pair.check_same())
        assert pair.at.delete("TRUE").rows_deleted == remaining > 0
        e.delete("TRUE")
        assert pair.check_same() == []


def test_referenced_columns_of_a_condition() -> None:
    names = ["id", "name", "amount", "my col", "dt"]
    assert referenced_columns("t.AMOUNT > 1 AND `my col` = 'id'", names) == [
        "id", "amount", "my col"]  # 'id' in a string literal: one column too many is safe
    assert referenced_columns("TRUE", names) == []
    assert referenced_columns("struct(*) IS NULL", names) is None
    assert referenced_columns(F.col("id") > 1, names) is None


def test_sql_string_statements_write_what_embedded_writes(pair: Pair) -> None:
    """A DELETE, UPDATE or MERGE given as SQL strings runs the statement core in Spark's
    tasks: the same directories, bucket files and ROW__IDs as the same statement embedded
    (Hive 4's statement ids: delete events s, new rows s + 1, a MERGE's inserts s + 2)."""
    def delete(t: AcidTable | Table) -> WriteResult:
        return t.delete("`ID` % 5 = 0 AND dt <> 'c'")

    def update(t: AcidTable | Table) -> WriteResult:
        return t.update("amount > 110", {"amount": "amount - id", "name": "'u'"})

    def with_row_ids(t: Table) -> list[str]:
        return sorted(map(str, t.to_arrow(with_row_id=True).to_pylist()))

    src = make_rows([1, 2, 3, 4, 30, 31, 32], name="m")

    def merge(t: AcidTable | Table) -> WriteResult:
        if isinstance(t, AcidTable):
            builder: Any = t.alias("t").merge(pair.source(src).alias("s"), "t.id = s.id") \
                .whenMatchedDelete("s.id = 2").whenMatchedUpdate("s.id <> 3", {
                    "name": "s.name", "amount": "t.amount + s.amount"}) \
                .whenNotMatchedInsertAll("s.id < 32")
            return builder.execute()  # type: ignore[no-any-return]
        return t.merge(src, "t.id = s.id").when_matched_delete("s.id = 2") \
            .when_matched_update({"name": "s.name", "amount": "t.amount + s.amount"},
                                 "s.id <> 3").when_not_matched_insert_all("s.id < 32").execute()

    for run in (delete, update, merge):
        got, expected = run(pair.at), run(pair.embedded)
        assert counts(got) == counts(expected) and got.metrics == expected.metrics
        assert table_files(pair.spark) == table_files(pair.embedded)
        assert with_row_ids(pair.spark) == with_row_ids(pair.embedded)
    assert counts(got) == (2, 2, 1)  # ids 1, 4 updated; 2 deleted; 30, 31 inserted
    names = {Path(f).parent.name for f in table_files(pair.spark)}
    assert {"delete_delta_0000004_0000004_0000", "delta_0000004_0000004_0001",
            "delta_0000004_0000004_0002"} <= names
    pair.check_same()


def test_column_statements_write_what_embedded_writes(pair: Pair) -> None:
    """Columns that say the same in SQL run the statement core too (same files and ROW__IDs
    as the SQL text embedded); a Column that does not (a Python UDF) still runs, through
    Spark's DataFrames, with the same rows."""
    def with_row_ids(t: Table) -> list[str]:
        return sorted(map(str, t.to_arrow(with_row_id=True).to_pylist()))

    col = F.col
    got = pair.at.delete((col("id") % 5 == 0) & (col("dt") != "c"))
    assert counts(got) == counts(pair.embedded.delete("id % 5 = 0 AND dt <> 'c'"))
    got = pair.at.update(col("amount") > 110, {"amount": col("amount") - col("id"),
                                               "name": F.lit("u")})
    assert counts(got) == counts(pair.embedded.update(
        "amount > 110", {"amount": "amount - id", "name": "'u'"}))
    src = make_rows([1, 2, 3, 31], name="m")
    got = (pair.at.alias("t").merge(pair.source(src).alias("s"), col("t.id") == col("s.id"))
           .whenMatchedUpdate(col("s.id") != 3, {"name": col("s.name")})
           .whenNotMatchedInsertAll().execute())
    expected = (pair.embedded.merge(src, "t.id = s.id")
                .when_matched_update({"name": "s.name"}, "s.id <> 3")
                .when_not_matched_insert_all().execute())
    assert counts(got) == counts(expected)
    assert table_files(pair.spark) == table_files(pair.embedded)
    assert with_row_ids(pair.spark) == with_row_ids(pair.embedded)
    plus_one = F.udf(lambda v: v + 1, "bigint")
    got = pair.at.update(col("id") == 7, {"amount": plus_one("amount")})
    assert got.rows_updated == 1
    pair.embedded.update("id = 7", {"amount": "amount + 1"})
    pair.check_same()


#: Columns whose SQL text would mean something else to DuckDB than the Column means to Spark:
#: a float literal (Spark's DOUBLE, DuckDB's DECIMAL), Unicode case mapping (Java's full
#: mapping, DuckDB's simple one)
SPARK_MEANING: list[Callable[[], Column]] = [
    lambda: F.col("f") == 0.1,  # a FLOAT 0.1 is not the DOUBLE 0.1: no row
    lambda: F.col("d") + 0.2 == 0.3,  # DECIMAL + DOUBLE is a DOUBLE: 0.30000000000000004
    lambda: F.upper(F.col("s")) == "STRASSE",  # Java upper-cases 'ß' to 'SS'
    lambda: F.lower(F.col("s")) == "i\u0307x",  # and 'İ' to 'i' + a combining dot
]


def test_column_statements_mean_what_spark_means(spark: SparkSession, tmp_path: Path) -> None:
    """A Column is Spark's expression: a DELETE or UPDATE given one changes exactly the rows
    ``df.where`` of the same Column selects, and computes Spark's values, whichever engine
    runs it. Printing such a Column as SQL for the statement core must keep that meaning, or
    keep Spark's path (a float literal once read as DECIMAL deleted the FLOAT 0.1 row Spark
    says is not 0.1; ``x / 0`` wrote infinity where Spark raises)."""
    schema = pa.schema([("id", pa.int64()), ("f", pa.float32()), ("d", pa.decimal128(10, 2)),
                        ("s", pa.string()), ("x", pa.float64()), ("y", pa.int64())])
    rows = pa.table({"id": [1, 2, 3, 4], "f": [0.1, 0.5, 0.5, 0.5],
                     "d": [Decimal("0.10"), Decimal("0.10"), Decimal("1.00"), Decimal("2.00")],
                     "s": ["a", "straße", "İx", "b"], "x": [1.0, 2.0, 3.0, 4.0],
                     "y": [1, 1, 1, 0]}, schema=schema)
    with acidstore.connect(tmp_path) as wh:
        wh.create_table(TABLE, schema).insert(rows)
    at = AcidTable.forName(spark, TABLE, warehouse=str(tmp_path))
    for make in SPARK_MEANING:
        condition = make()
        before = {r.id for r in at.toDF().collect()}
        chosen = {r.id for r in at.toDF().where(condition).collect()}
        assert at.delete(condition).rows_deleted == len(chosen), condition
        assert {r.id for r in at.toDF().collect()} == before - chosen, condition
    assert {r.id for r in at.toDF().collect()} == {1, 4}
    with pytest.raises(Exception, match="DIVIDE_BY_ZERO"):  # Spark's ANSI division
        at.update(F.col("id") == 4, {"x": F.col("x") / F.col("y")})
    assert sorted((r.id, r.x) for r in at.toDF().collect()) == [(1, 1.0), (4, 4.0)]


def test_failed_core_task_writes_nothing(pair: Pair) -> None:
    before = table_files(pair.spark)
    with pytest.raises(InvalidExpressionError):
        pair.at.update("id < 5", {"amount": "no_such_function(amount)"})
    with pytest.raises(InvalidExpressionError):
        pair.at.delete("no_such_column = 1")
    assert table_files(pair.spark) == before
    assert pair.spark.history().num_rows == 1


#: (a value, a condition) each: a file's content, Java calls, a file read through DuckDB
HOSTILE = [
    ("(SELECT first(value) FROM text.`/etc/hostname`)",
     "(SELECT first(value) FROM text.`/etc/passwd`) IS NOT NULL"),
    ("java_method('java.lang.System', 'getProperty', 'user.home')",
     "java_method('java.lang.System', 'getProperty', 'user.home') IS NOT NULL"),
    ("CAST(reflect('java.lang.Runtime', 'getRuntime') AS STRING)",
     "reflect('java.lang.Runtime', 'getRuntime') IS NOT NULL"),
    ("(SELECT first(content) FROM read_text('/etc/passwd'))",
     "(SELECT count(*) FROM read_text('/etc/passwd')) > 0"),
]


@pytest.mark.parametrize(("value", "condition"), HOSTILE)
def test_spark_sql_strings_pass_the_embedded_sandbox(pair: Pair, value: str,
                                                     condition: str) -> None:
    """Issue 13.4: the same SQL text is refused on both engines, whichever path Spark takes
    (the statement core; Spark's DataFrames for a statement mixing strings and Columns, or a
    MERGE whose source has no alias)."""
    before = table_files(pair.spark)
    attempts: list[Callable[[], object]] = [
        lambda: pair.at.update("id = 1", {"name": value}),
        lambda: pair.at.delete(condition),
        lambda: pair.at.update(F.col("id") == 1, {"name": value}),
        lambda: pair.at.update(condition, {"amount": F.col("amount") + 1}),
        lambda: pair.at.alias("t").merge(pair.source(START), F.col("t.id") == F.col("id"))
        .whenMatchedUpdate(set={"name": value}).execute(),
        lambda: pair.at.alias("t").merge(pair.source(START), F.col("t.id") == F.col("id"))
        .whenMatchedDelete(condition).execute(),
        lambda: pair.embedded.update("id = 1", {"name": value}),
        lambda: pair.embedded.delete(condition),
    ]
    for attempt in attempts:
        with pytest.raises(InvalidInputError):
            attempt()
    assert table_files(pair.spark) == before
    assert pair.spark.history().num_rows == 1
