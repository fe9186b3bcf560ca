"""Property test: random statement sequences give the same table on Spark and embedded.

Each example creates the same partitioned (NULL partition included), bucketed table in two
warehouses and applies one random sequence of INSERTs (``AcidTable.insert`` or ``df.write``),
UPDATEs, DELETEs and MERGEs (any mix of matched-delete, matched-update and not-matched-insert
clauses, with or without conditions) through ``AcidTable`` to one and through the embedded
``Table`` API to the other. After every statement both report the same counts and read the
same rows, through the embedded reader and through Spark. Spark statements cost about a second
each, so examples are few and short.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from spark_support import SCHEMA, TABLE, arrow_rows, new_table, spark_rows, staging_files

import acidstore
from acidstore import Table
from acidstore.spark import AcidTable
from acidstore.table import WriteResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DTS: list[str | None] = ["a", "b", None]
PREDICATES = ["id % 2 = 0", "amount > 50", "dt = 'a'", "dt IS NULL", "name LIKE 'n1%'",
              "id < 4 OR amount < 20", "TRUE"]
ASSIGNMENTS: list[dict[str, str]] = [
    {"amount": "amount + 1"},
    {"amount": "amount * 2 - id", "name": "upper(name)"},
    {"name": "concat(name, '_u')"},
]


def rows_strategy(*, unique: bool) -> st.SearchStrategy[pa.Table]:
    row = st.tuples(st.integers(0, 12), st.sampled_from(DTS), st.integers(0, 99))
    listed = st.lists(row, min_size=1, max_size=6,
                      unique_by=(lambda r: r[0]) if unique else None)
    return listed.map(lambda rows: pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "amount": amount, "dt": dt} for i, dt, amount in rows],
        schema=SCHEMA))


@dataclass(frozen=True)
class Insert:
    rows: pa.Table
    through_write: bool  # df.write.format("acidstore") instead of AcidTable.insert


@dataclass(frozen=True)
class Update:
    predicate: str
    assignments: dict[str, str]


@dataclass(frozen=True)
class Delete:
    predicate: str


@dataclass(frozen=True)
class Merge:
    source: pa.Table  # unique ids: no cardinality violation
    delete_condition: str | None  # WHEN MATCHED AND <this> THEN DELETE (None: no clause)
    update: bool
    update_condition: str | None
    insert: bool
    insert_condition: str | None


Statement = Insert | Update | Delete | Merge

conditions = st.none() | st.sampled_from(["s.amount > t.amount", "s.amount % 2 = 0",
                                          "t.dt IS NULL"])
merges = st.builds(
    Merge, rows_strategy(unique=True), st.none() | st.sampled_from(["s.amount < 30", "TRUE"]),
    st.booleans(), st.none() | st.sampled_from(["s.amount > t.amount", "t.dt IS NULL"]),
    st.booleans(), st.none() | st.sampled_from(["s.amount % 2 = 0", "s.dt IS NOT NULL"]),
).filter(lambda m: m.delete_condition is not None or m.update or m.insert)
statements: st.SearchStrategy[Statement] = st.one_of(
    st.builds(Insert, rows_strategy(unique=False), st.booleans()),
    st.builds(Update, st.sampled_from(PREDICATES), st.sampled_from(ASSIGNMENTS)),
    st.builds(Delete, st.sampled_from(PREDICATES)),
    merges,
)


def run_spark(spark: SparkSession, at: AcidTable, t: Table, statement: Statement
              ) -> WriteResult | None:
    if isinstance(statement, Insert):
        df = spark.createDataFrame(statement.rows)
        if statement.through_write:
            df.write.format("acidstore").option("warehouse", str(t.warehouse.location)) \
                .mode("append").save(t.name)
            return None
        return at.insert(df)
    if isinstance(statement, Update):
        return at.update(statement.predicate, statement.assignments)
    if isinstance(statement, Delete):
        return at.delete(statement.predicate)
    builder = at.alias("t").merge(spark.createDataFrame(statement.source).alias("s"),
                                  "t.id = s.id")
    if statement.delete_condition is not None:
        builder = builder.whenMatchedDelete(condition=statement.delete_condition)
    if statement.update:
        builder = builder.whenMatchedUpdate(condition=statement.update_condition,
                                            set={"amount": "s.amount + t.amount",
                                                 "name": "s.name"})
    if statement.insert:
        builder = builder.whenNotMatchedInsertAll(condition=statement.insert_condition)
    return builder.execute()


def run_embedded(t: Table, statement: Statement) -> WriteResult:
    if isinstance(statement, Insert):
        return t.insert(statement.rows)
    if isinstance(statement, Update):
        return t.update(statement.predicate, statement.assignments)
    if isinstance(statement, Delete):
        return t.delete(statement.predicate)
    builder = t.merge(statement.source, "t.id = s.id")
    if statement.delete_condition is not None:
        builder = builder.when_matched_delete(condition=statement.delete_condition)
    if statement.update:
        builder = builder.when_matched_update({"amount": "s.amount + t.amount",
                                               "name": "s.name"},
                                              condition=statement.update_condition)
    if statement.insert:
        builder = builder.when_not_matched_insert_all(condition=statement.insert_condition)
    return builder.execute()


def counts(result: WriteResult) -> tuple[Any, ...]:
    return (result.rows_inserted, result.rows_updated, result.rows_deleted,
            sorted(result.metrics.items()))


@settings(max_examples=7)
@given(st.lists(statements, min_size=3, max_size=5))
def test_spark_and_embedded_statements_agree(spark: SparkSession,
                                             sequence: list[Statement]) -> None:
    with tempfile.TemporaryDirectory() as root, \
            acidstore.connect(Path(root) / "spark") as s_wh, \
            acidstore.connect(Path(root) / "embedded") as e_wh:
        on_spark, embedded = new_table(s_wh, buckets=2), new_table(e_wh, buckets=2)
        at = AcidTable.forName(spark, TABLE, warehouse=str(s_wh.location))
        for step, statement in enumerate(sequence):
            got = run_spark(spark, at, on_spark, statement)
            expected = run_embedded(embedded, statement)
            if got is not None:
                assert counts(got) == counts(expected), (step, statement)
            rows = arrow_rows(embedded.to_arrow())
            assert arrow_rows(on_spark.to_arrow()) == rows, (step, statement)
            assert spark_rows(at.toDF()) == rows, (step, statement)
            assert staging_files(on_spark) == []
        # a Spark statement takes its write id before its tasks run, so one that changed
        # nothing still commits an (empty) write id; embedded ones take none
        assert changes(on_spark) == changes(embedded)


def changes(t: Table) -> list[tuple[Any, ...]]:
    """The history of ``t``'s write ids that wrote files."""
    return [(r["operation"], r["rows_inserted"], r["rows_deleted"], r["partitions"])
            for r in t.history().to_pylist() if r["files"]]
