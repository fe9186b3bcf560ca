"""Differential property test: random DML sequences give the same rows *and ROW__IDs* on Spark
as embedded.

Each example creates the same table in two warehouses, in one of three shapes: partitioned
(NULL partition included) and unbucketed; bucketed and unpartitioned; partitioned and bucketed
with pre-ACID original files in its partitions (write id 0, synthetic ROW__IDs). It then applies
one random sequence of INSERT (``AcidTable.insert`` or ``df.write``), INSERT OVERWRITE, UPDATE,
DELETE and MERGE (any mix of matched-delete, matched-update/update-all and not-matched-insert
clauses, with or without conditions) through ``AcidTable`` to one and through the embedded
``Table`` to the other. Conditions and values are SQL strings or, on Spark, the same expressions
as pyspark Column objects.

After every statement both engines report the same counts, write ids and rows, and the
ROW__IDs must agree:

- DELETE, UPDATE and MERGE, by SQL string or by Column, give identical ROW__IDs and files
  from identical ROW__IDs: SQL strings run the shared statement core on both engines, and
  Column statements, whose changes Spark computes, route them by the core's units and write
  them with the statement's ids in the core's order (``engine.task_writes``). An INSERT or
  INSERT OVERWRITE of a one-task DataFrame writes statement 0 in input order as the embedded
  write does.
- Inserts of a DataFrame of several tasks (and overwrites of a bucketed table, whose rows
  Spark shuffles by bucket) write one statement id per Spark task with row ids dense per
  task: the new rows' ROW__IDs depend on which task a row landed in, which the embedded engine
  has no notion of, so they legitimately differ. What must hold instead: the same rows; every
  row the statement did not touch keeps its ROW__ID, on both engines (a ROW__ID is never reused
  for other values); the untouched rows are the same rows on both engines (the ROW__IDs they
  had correspond); new rows carry the statement's write id; ROW__IDs are unique (per
  partition, where Hive's ROW__ID is unique).

So the test tracks the correspondence of each Spark ROW__ID to its embedded twin; it is the
identity until a multi-task insert, and exact equality is asserted whenever the prior state
was identical and the statement is one of the first kind. Spark statements cost about a
second each, so examples are few and short.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import (
    SCHEMA,
    TABLE,
    USER,
    add_originals,
    arrow_rows,
    spark_rows,
    staging_files,
    table_files,
)

import acidstore
from acidstore import Table
from acidstore.api.table import WriteResult
from acidstore.engine.handle import handle_of
from acidstore.spark import AcidTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: examples per shape and run: a fifteenth of the profile's (ci 4, dev 2, thorough 66)
EXAMPLES = max(2, settings().max_examples // 15)


@dataclass(frozen=True)
class Shape:
    name: str
    partitioned: bool
    buckets: int
    originals: bool = False

    @property
    def schema(self) -> pa.Schema:
        return SCHEMA if self.partitioned else USER


SHAPES = [Shape("partitioned", True, 0), Shape("bucketed", False, 2),
          Shape("originals", True, 2, originals=True)]
DTS: list[str | None] = ["a", "b", None]


@dataclass(frozen=True)
class Expr:
    """One expression in both forms: SQL text (both engines) and a pyspark Column."""

    sql: str
    column: Callable[[], Column] = field(repr=False, compare=False)

    def on_spark(self, as_column: bool) -> str | Column:
        return self.column() if as_column else self.sql


def col(name: str) -> Column:
    return F.col(name)


PREDICATES = [
    Expr("id % 2 = 0", lambda: col("id") % 2 == 0),
    Expr("amount > 50", lambda: col("amount") > 50),
    Expr("name LIKE 'n1%'", lambda: col("name").like("n1%")),
    Expr("id < 4 OR amount < 20", lambda: (col("id") < 4) | (col("amount") < 20)),
    Expr("TRUE", lambda: F.lit(True)),
]
PARTITION_PREDICATES = [
    Expr("dt = 'a'", lambda: col("dt") == "a"),
    Expr("dt IS NULL OR id = 3", lambda: col("dt").isNull() | (col("id") == 3)),
]
ASSIGNMENTS: list[dict[str, Expr]] = [
    {"amount": Expr("amount + 1", lambda: col("amount") + 1)},
    {"amount": Expr("amount * 2 - id", lambda: col("amount") * 2 - col("id")),
     "name": Expr("upper(name)", lambda: F.upper(col("name")))},
    {"name": Expr("concat(name, '_u')", lambda: F.concat(col("name"), F.lit("_u")))},
]
MERGE_ON = Expr("t.id = s.id", lambda: col("t.id") == col("s.id"))
DELETE_WHEN = [Expr("s.amount < 30", lambda: col("s.amount") < 30),
               Expr("TRUE", lambda: F.lit(True))]
UPDATE_WHEN = [Expr("s.amount > t.amount", lambda: col("s.amount") > col("t.amount")),
               Expr("t.amount % 3 = 0", lambda: col("t.amount") % 3 == 0)]
INSERT_WHEN = [Expr("s.amount % 2 = 0", lambda: col("s.amount") % 2 == 0),
               Expr("s.id > 6", lambda: col("s.id") > 6)]
PARTITION_UPDATE_WHEN = [Expr("t.dt IS NULL", lambda: col("t.dt").isNull())]
PARTITION_INSERT_WHEN = [Expr("s.dt IS NOT NULL", lambda: col("s.dt").isNotNull())]
UPDATE_SET = {"amount": Expr("s.amount + t.amount", lambda: col("s.amount") + col("t.amount")),
              "name": Expr("s.name", lambda: col("s.name"))}
INSERT_VALUES = {"id": Expr("s.id", lambda: col("s.id")),
                 "name": Expr("concat(s.name, '+')", lambda: F.concat(col("s.name"), F.lit("+"))),
                 "amount": Expr("s.amount * 10", lambda: col("s.amount") * 10)}


@dataclass(frozen=True)
class Insert:
    rows: pa.Table
    one_task: bool  # coalesce(1): statement 0 in input order, as embedded
    through_write: bool = False  # df.write.format("acidstore") instead of AcidTable.insert
    overwrite: bool = False


@dataclass(frozen=True)
class Update:
    predicate: Expr
    assignments: dict[str, Expr]
    as_columns: bool


@dataclass(frozen=True)
class Delete:
    predicate: Expr
    as_column: bool


@dataclass(frozen=True)
class Merge:
    source: pa.Table  # unique ids: no cardinality violation
    delete_when: Expr | None  # WHEN MATCHED AND <this> THEN DELETE (None: no such clause)
    update: Literal["set", "all"] | None
    update_when: Expr | None
    insert: Literal["all", "values"] | None
    insert_when: Expr | None
    as_columns: bool


Statement = Insert | Update | Delete | Merge


def rows_strategy(shape: Shape, *, unique: bool) -> st.SearchStrategy[pa.Table]:
    row = st.tuples(st.integers(0, 12), st.sampled_from(DTS), st.integers(0, 99))
    listed = st.lists(row, min_size=1, max_size=6,
                      unique_by=(lambda r: r[0]) if unique else None)
    return listed.map(lambda rows: pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "amount": amount, **({"dt": dt} if shape.partitioned else {})}
         for i, dt, amount in rows], schema=shape.schema))


def statements(shape: Shape) -> st.SearchStrategy[Statement]:
    predicates = st.sampled_from(PREDICATES + (PARTITION_PREDICATES if shape.partitioned
                                               else []))
    partitioned = shape.partitioned
    merges = st.builds(
        Merge, rows_strategy(shape, unique=True), st.none() | st.sampled_from(DELETE_WHEN),
        st.sampled_from([None, "set", "all"]),
        st.none() | st.sampled_from(UPDATE_WHEN + (PARTITION_UPDATE_WHEN if partitioned else [])),
        st.sampled_from([None, "all", "values"]),
        st.none() | st.sampled_from(INSERT_WHEN + (PARTITION_INSERT_WHEN if partitioned else [])),
        st.booleans(),
    ).map(lambda m: m if m.delete_when is not None or m.update or m.insert
          else dataclasses.replace(m, insert="all"))  # a MERGE needs a clause
    return st.one_of(
        st.builds(Insert, rows_strategy(shape, unique=False), st.booleans(), st.booleans()),
        st.builds(Insert, rows_strategy(shape, unique=False), st.booleans(),
                  overwrite=st.just(True)),
        st.builds(Update, predicates, st.sampled_from(ASSIGNMENTS), st.booleans()),
        st.builds(Delete, predicates, st.booleans()),
        merges,
    )


def exact(shape: Shape, statement: Statement) -> bool:
    """Whether the statement's new ROW__IDs (and files) must equal the embedded ones (see
    the module docstring): every DELETE, UPDATE and MERGE, SQL or Column, and an insert from
    one Spark task."""
    if isinstance(statement, Insert):
        return statement.one_task and not (statement.overwrite and shape.buckets)
    return True


# --- running a statement on each engine ------------------------------------------------------


def run_spark(spark: SparkSession, at: AcidTable, t: Table, statement: Statement
              ) -> WriteResult | None:
    if isinstance(statement, Insert):
        df = spark.createDataFrame(statement.rows)
        df = df.coalesce(1) if statement.one_task else df.repartition(2)
        if statement.through_write:
            df.write.format("acidstore").option("warehouse", str(handle_of(t).core.location)) \
                .mode("append").save(t.name)
            return None
        return at.insert(df, overwrite=statement.overwrite)
    if isinstance(statement, Update):
        cols = statement.as_columns
        return at.update(statement.predicate.on_spark(cols),
                         {k: v.on_spark(cols) for k, v in statement.assignments.items()})
    if isinstance(statement, Delete):
        return at.delete(statement.predicate.on_spark(statement.as_column))
    m, cols = statement, statement.as_columns

    def when(e: Expr | None) -> str | Column | None:
        return None if e is None else e.on_spark(cols)

    builder = at.alias("t").merge(spark.createDataFrame(m.source).alias("s"),
                                  MERGE_ON.on_spark(cols))
    if m.delete_when is not None:
        builder = builder.whenMatchedDelete(condition=when(m.delete_when))
    if m.update == "set":
        builder = builder.whenMatchedUpdate(
            condition=when(m.update_when), set={k: v.on_spark(cols) for k, v in UPDATE_SET.items()})
    elif m.update == "all":
        builder = builder.whenMatchedUpdateAll(condition=when(m.update_when))
    if m.insert == "all":
        builder = builder.whenNotMatchedInsertAll(condition=when(m.insert_when))
    elif m.insert == "values":
        builder = builder.whenNotMatchedInsert(
            condition=when(m.insert_when),
            values={k: v.on_spark(cols) for k, v in INSERT_VALUES.items()})
    return builder.execute()


def run_embedded(t: Table, statement: Statement) -> WriteResult:
    if isinstance(statement, Insert):
        return t.insert_overwrite(statement.rows) if statement.overwrite else \
            t.insert(statement.rows)
    if isinstance(statement, Update):
        return t.update(statement.predicate.sql,
                        {k: v.sql for k, v in statement.assignments.items()})
    if isinstance(statement, Delete):
        return t.delete(statement.predicate.sql)
    m = statement

    def when(e: Expr | None) -> str | None:
        return None if e is None else e.sql

    builder = t.merge(m.source, MERGE_ON.sql)
    if m.delete_when is not None:
        builder = builder.when_matched_delete(condition=when(m.delete_when))
    if m.update == "set":
        builder = builder.when_matched_update({k: v.sql for k, v in UPDATE_SET.items()},
                                              condition=when(m.update_when))
    elif m.update == "all":
        builder = builder.when_matched_update_all(condition=when(m.update_when))
    if m.insert == "all":
        builder = builder.when_not_matched_insert_all(condition=when(m.insert_when))
    elif m.insert == "values":
        builder = builder.when_not_matched_insert({k: v.sql for k, v in INSERT_VALUES.items()},
                                                  condition=when(m.insert_when))
    return builder.execute()


def counts(result: WriteResult) -> tuple[Any, ...]:
    return (result.write_id, result.rows_inserted, result.rows_updated, result.rows_deleted,
            sorted(result.metrics.items()))


# --- the ROW__ID comparison ----------------------------------------------------------------------

#: (partition value or None, writeid, bucketid, rowid): a ROW__ID is unique per partition
Key = tuple[Any, ...]
State = dict[Key, tuple[Any, ...]]


def row_state(t: Table, shape: Shape) -> State:
    """Every row of ``t`` by its ROW__ID (asserting ROW__IDs are unique)."""
    out: State = {}
    for row in t.to_arrow(with_row_id=True).to_pylist():
        rid = row.pop("row__id")
        key = (row["dt"] if shape.partitioned else None, rid["writeid"], rid["bucketid"],
               rid["rowid"])
        assert key not in out, f"ROW__ID {key} twice in {t.location}"
        out[key] = tuple(row.values())
    return out


@dataclass
class Twins:
    """The same table on both engines, with the correspondence of their ROW__IDs."""

    shape: Shape
    at: AcidTable
    on_spark: Table
    embedded: Table
    before_spark: State = field(default_factory=dict)
    before_embedded: State = field(default_factory=dict)
    #: Spark ROW__ID -> the embedded twin's ROW__ID of the same row
    twin: dict[Key, Key] = field(default_factory=dict)
    files_spark: set[str] = field(default_factory=set)
    files_embedded: set[str] = field(default_factory=set)

    def identical(self) -> bool:
        return all(k == v for k, v in self.twin.items())

    def check(self, write_id: int, *, exact: bool, where: object) -> None:
        after_s, after_e = row_state(self.on_spark, self.shape), row_state(self.embedded,
                                                                             self.shape)
        files_s, files_e = set(table_files(self.on_spark)), set(table_files(self.embedded))
        assert sorted(after_s.values(), key=repr) == sorted(after_e.values(), key=repr), where
        for after, before in ((after_s, self.before_spark), (after_e, self.before_embedded)):
            kept = after.keys() & before.keys()
            assert all(after[k] == before[k] for k in kept), (where, "ROW__ID reused")
            assert all(k[1] == write_id for k in after.keys() - kept), (where, "new write id")
        kept_s = after_s.keys() & self.before_spark.keys()
        assert {self.twin[k] for k in kept_s} == after_e.keys() & self.before_embedded.keys(), \
            (where, "the rows left untouched differ")
        if exact and self.identical():
            assert after_s == after_e, (where, "ROW__IDs differ from embedded")
            assert files_s - self.files_spark == files_e - self.files_embedded, \
                (where, "the statement wrote other files than embedded")
            twin = {k: k for k in after_s}
        else:  # new rows: pair equal rows (the same values are interchangeable)
            new_s = sorted(after_s.keys() - kept_s, key=lambda k: repr(after_s[k]))
            new_e = sorted(after_e.keys() - self.before_embedded.keys(),
                           key=lambda k: repr(after_e[k]))
            assert [after_s[k] for k in new_s] == [after_e[k] for k in new_e], where
            twin = {k: self.twin[k] for k in kept_s} | dict(zip(new_s, new_e, strict=True))
        self.twin, self.before_spark, self.before_embedded = twin, after_s, after_e
        self.files_spark, self.files_embedded = files_s, files_e
        assert staging_files(self.on_spark) == [], where


START_ROWS = 8


def start_rows(shape: Shape) -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": i, "name": f"n{i}", "amount": i * 10, **({"dt": DTS[i % 2]}
                                                          if shape.partitioned else {})}
         for i in range(START_ROWS)], schema=shape.schema)


@contextmanager
def twins(spark: SparkSession, shape: Shape) -> Iterator[Twins]:
    with tempfile.TemporaryDirectory() as root, \
            acidstore.connect(Path(root) / "spark") as s_wh, \
            acidstore.connect(Path(root) / "embedded") as e_wh:
        tables = [w.create_table(TABLE, shape.schema,
                                 partition_by=["dt"] if shape.partitioned else [],
                                 bucket_by=["id"] if shape.buckets else [],
                                 buckets=shape.buckets) for w in (s_wh, e_wh)]
        for t in tables:
            if shape.originals:
                add_originals(t, start_rows(shape), buckets=shape.buckets)
            else:
                t.insert(start_rows(shape))
        pair = Twins(shape, AcidTable.forName(spark, TABLE, warehouse=str(s_wh.location)),
                     tables[0], tables[1])
        pair.check(0 if shape.originals else 1, exact=True, where="start")
        yield pair


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_spark_and_embedded_agree_on_rows_and_row_ids(spark: SparkSession, shape: Shape,
                                                      data: st.DataObject) -> None:
    sequence = data.draw(st.lists(statements(shape), min_size=2, max_size=3), label="sequence")
    with twins(spark, shape) as pair:
        for step, statement in enumerate(sequence):
            got = run_spark(spark, pair.at, pair.on_spark, statement)
            expected = run_embedded(pair.embedded, statement)
            if got is not None:
                assert counts(got) == counts(expected), (step, statement)
            assert expected.write_id is not None
            pair.check(expected.write_id, exact=exact(shape, statement),
                       where=(step, statement))
        # Spark's own reader returns what the embedded reader returns, ROW__IDs included
        with_ids = arrow_rows(pair.on_spark.to_arrow(with_row_id=True))
        assert spark_rows(pair.at.toDF(with_row_id=True)) == with_ids
        assert history(pair.on_spark) == history(pair.embedded)


def history(t: Table) -> list[tuple[Any, ...]]:
    return [(r["write_id"], r["operation"], r["rows_inserted"], r["rows_deleted"],
             r["partitions"]) for r in t.history().to_pylist()]
