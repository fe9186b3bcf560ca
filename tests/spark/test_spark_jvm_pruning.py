"""Partition pruning and stripe skipping in acidstore's Java reader (``AcidScan``,
``FilterBounds.java``, ``PartitionPruning.java``, ``StripeSkipping.java``).

A filter on partition columns (``toDF().where("part = 'q'")``) keeps the files of the
partitions it rules out from being opened, as Spark's own file sources prune partitions, and
a filter on the rows' columns skips the stripes whose ORC statistics rule it out. A wrong
prune or skip is a wrong answer (rows missing), so every filter here is checked twice: its
rows against the embedded reader's rows under the same SQL (which reads every partition
and stripe of the snapshot), and the scan's own row count (Spark's ``numOutputRows`` of the
scan, before Spark filters) against the rows it should have read: with no pruning or skipping
the scan returns every row of the table and that check fails.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.orc as po
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from py4j.protocol import Py4JJavaError
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import arrow_rows, forget_recorded_sizes, reads_on_jvm, spark_rows

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.format.orc import footer
from acidstore.spark import AcidTable
from acidstore.write import files as write_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("part", pa.string()),
                    ("region", pa.int32())])
#: partition columns of every type the Java reader takes
TYPED = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("b", pa.bool_()),
                   ("f", pa.float64()), ("s", pa.string()), ("t", pa.timestamp("us")),
                   ("small", pa.int8())])


def _at(spark: SparkSession, t: Table) -> AcidTable:
    return AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))


def _scanned(df: DataFrame) -> tuple[list[tuple[object, ...]], int]:
    """The rows of ``df`` and how many rows its scan returned before Spark's filter."""
    rows = spark_rows(df)
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName().startswith("AdaptiveSparkPlan"):
        plan = plan.executedPlan()
    leaves = plan.collectLeaves()
    scans = [leaves.apply(i) for i in range(leaves.size())
             if "BatchScan" in leaves.apply(i).nodeName()]
    assert len(scans) == 1, plan.toString()
    return rows, int(scans[0].metrics().apply("numOutputRows").value())


def _embedded(t: Table, condition: str, with_row_id: bool = False) -> list[tuple[object, ...]]:
    """The embedded reader's rows under ``condition`` (Spark's SQL, the few spellings the
    embedded engine writes otherwise translated)."""
    sql = condition.replace("<=> NULL", "IS NULL").replace("TIMESTAMP_NTZ", "TIMESTAMP ")
    return arrow_rows(t.to_arrow(filter=sql, with_row_id=with_row_id))


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    """Partitioned by a string (NULL included) and an int, bucketed; an update, deletes and a
    minor compaction, so pruned and kept partitions have deltas and delete deltas."""
    with acidstore.connect(tmp_path_factory.mktemp("prune") / "wh") as wh:
        t = wh.create_table("db.p", SCHEMA, partition_by=["part", "region"],
                            bucket_by=["id"], buckets=2)
        ids = range(60)
        t.insert(pa.table({"id": list(ids), "x": [i * 0.5 for i in ids],
                           "part": [("p", "q", "r", None)[i % 4] for i in ids],
                           "region": [i % 3 for i in ids]}, schema=SCHEMA))
        t.update("id % 5 = 0", {"x": "x + 100"})
        t.delete("id IN (1, 2, 41)")
        t.optimize("minor")
        t.delete("id IN (3, 44, 59)")
        yield t


# (filter, the rows its scan returns: those of the partitions its partition-only conjuncts
# keep, the filter itself when it names only partition columns; None = every row)
FILTERS = [
    ("part = 'q'", "part = 'q'"),
    ("region = 1", "region = 1"),
    ("part = 'q' AND region > 0", "part = 'q' AND region > 0"),
    ("region IN (0, 2)", "region IN (0, 2)"),
    ("part IN ('p', 'r')", "part IN ('p', 'r')"),
    ("part IS NULL", "part IS NULL"),
    ("part IS NOT NULL AND region <= 1", "part IS NOT NULL AND region <= 1"),
    ("NOT (part = 'p')", "NOT (part = 'p')"),  # NULL partition out too: NOT NULL is NULL
    ("part = 'p' OR region = 2", "part = 'p' OR region = 2"),
    ("part <=> NULL", "part <=> NULL"),
    ("part LIKE 'q%'", "part LIKE 'q%'"),
    ("part > 'p' AND part < 'r'", "part > 'p' AND part < 'r'"),
    ("region = 7", "region = 7"),  # no partition kept: no task at all
    ("region = 1 AND x > 20", "region = 1"),  # the row column's conjunct stays Spark's
    ("part = 'q' OR x > 20", None),  # an OR with a row column prunes nothing
    ("coalesce(part, 'z') = 'z'", None),  # not pushed: read all, filtered by Spark
]


@pytest.mark.parametrize(("condition", "scans"), FILTERS, ids=[f for f, _ in FILTERS])
def test_a_filter_on_partition_columns_opens_only_the_partitions_it_keeps(
        spark: SparkSession, table: Table, condition: str, scans: str | None) -> None:
    df = _at(spark, table).toDF()
    assert reads_on_jvm(df)
    rows, scanned = _scanned(df.where(condition))
    assert rows == _embedded(table, condition)
    assert scanned == (table.to_arrow().num_rows if scans is None
                       else len(_embedded(table, scans)))


def test_spark_sql_on_a_view_of_toDF_prunes_as_the_dataframe_does(
        spark: SparkSession, table: Table) -> None:
    """SQL over a temporary view made from ``toDF()`` gets the Java reader and Spark pushes
    the query's WHERE into it: partitions pruned, as README's "Spark SQL" shows."""
    _at(spark, table).toDF().createOrReplaceTempView("pruned_view")
    try:
        condition = "part = 'q' AND region > 0 AND x > 5"
        rows, scanned = _scanned(spark.sql(f"SELECT * FROM pruned_view WHERE {condition}"))
        assert rows == _embedded(table, condition)
        assert scanned == len(_embedded(table, "part = 'q' AND region > 0"))
    finally:
        spark.catalog.dropTempView("pruned_view")


def test_a_pruned_partition_is_never_opened(spark: SparkSession, tmp_path: Path) -> None:
    """A file of a ruled-out partition removed after ``toDF()`` does not fail a query that
    prunes it, and fails one that reads it, naming the file."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.g", SCHEMA, partition_by=["part", "region"])
        t.insert(pa.table({"id": [1, 2], "x": [0.5, 1.5], "part": ["p", "q"],
                           "region": [0, 0]}, schema=SCHEMA))
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        gone = next(Path(t.location).glob("part=q/region=0/delta_*/bucket_*"))
        gone.unlink()
        assert spark_rows(df.where("part = 'p'").select("id")) == [(1,)]
        with pytest.raises(Py4JJavaError, match=gone.name):
            df.where("x > 0").collect()


TYPED_FILTERS = [
    "d = DATE '2026-02-01'",
    "d < DATE '2000-01-01'",
    "d >= DATE '2026-01-01' AND d IS NOT NULL",
    "b",
    "NOT b",
    "b IS NULL",
    "f = 0.25",
    "f > -1.0",
    "f = 0.0",  # -0.0 is equal to 0.0
    "s = 'é'",
    "s >= 'b'",
    "s LIKE '%b%'",
    "t = TIMESTAMP_NTZ'2026-03-08 02:30:00'",
    "t < TIMESTAMP_NTZ'2000-01-01 00:00:00'",
    "small = -3",
    "small IN (5, -3)",
    "small > 4",
]


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    with acidstore.connect(tmp_path_factory.mktemp("typed") / "wh") as wh:
        t = wh.create_table("db.typed", TYPED, partition_by=["d", "b", "f", "s", "t", "small"])
        t.insert(pa.table({
            "id": [1, 2, 3, 4, 5],
            "d": [dt.date(2026, 2, 1), None, dt.date(1960, 1, 1), dt.date(2026, 2, 1),
                  dt.date(2030, 5, 5)],
            "b": [True, False, None, True, False],
            "f": [0.25, None, -3.5, -0.0, 7.0],
            "s": ["a b/c", "é", None, "abba", "z"],
            "t": [dt.datetime(2026, 3, 8, 2, 30), None, dt.datetime(1969, 12, 31, 23, 59),
                  dt.datetime(2026, 3, 8, 2, 30), dt.datetime(2100, 1, 1)],
            "small": [5, -3, None, 5, 9]}, schema=TYPED))
        yield t


@pytest.mark.parametrize("condition", TYPED_FILTERS)
def test_partition_values_of_every_type_are_compared_as_spark_compares_them(
        spark: SparkSession, typed: Table, condition: str) -> None:
    df = _at(spark, typed).toDF()
    assert reads_on_jvm(df)
    rows, scanned = _scanned(df.where(condition))
    assert rows == _embedded(typed, condition)
    assert scanned == len(rows), condition


STRIPED_ROWS = 300_000
#: the rows of a row group (the writer's row index stride): ids rise one a row, so each of the
#: big file's row groups holds 10,000 consecutive ids
GROUP = 10_000
STRIPED = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string()),
                     ("n", pa.int32()), ("day", pa.date32())])


@pytest.fixture(scope="module")
def striped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    """One bucket file of many stripes through which ``id``, ``s`` and ``day`` rise (each
    stripe holds a range of them), ``n`` NULL in the first fifth, ``x`` random in [0, 1) but
    one NaN inside a stripe (writers leave it out of the stripe's maximum, and Spark orders
    it above every number); deleted rows in every stripe, some deleted after a second
    insert."""
    ids = np.arange(STRIPED_ROWS)
    with pytest.MonkeyPatch.context() as patch, \
            acidstore.connect(tmp_path_factory.mktemp("striped") / "wh") as wh:
        patch.setattr(write_files, "DELTA_STRIPE_SIZE", 256 << 10)  # ~20 stripes
        t = wh.create_table("db.s", STRIPED)
        t.insert(pa.table({
            "id": ids, "x": np.where(ids == 2 * STRIPED_ROWS // 3, np.nan,
                                     np.random.default_rng(3).random(STRIPED_ROWS)),
            "s": [f"k{i:08d}" for i in ids],
            "n": pa.array(np.where(ids < STRIPED_ROWS // 5, 0, ids % 10), pa.int32(),
                          mask=ids < STRIPED_ROWS // 5),
            "day": pa.array(ids // 1000, pa.int32()).cast(pa.date32())}, schema=STRIPED))
        t.delete("id % 997 = 3")
        t.insert(pa.table({"id": [-5, 10**9], "x": [0.5, 0.25], "s": ["a", "z"],
                           "n": [7, None], "day": [dt.date(1999, 1, 1), None]},
                          schema=STRIPED))
        t.delete("id % 1009 = 8 OR id = -5")
        yield t


# (filter, the most rows its scan may return: what the row groups it may match hold, or the
# whole table when statistics cannot rule out any)
STRIPE_FILTERS = [
    # row groups start with their stripe, so a range of ids may straddle two; a stripe holds
    # about 37,500 rows, so these bounds fail if only stripes are skipped (+1: the small
    # file's row)
    ("id BETWEEN 150000 AND 150100", 2 * GROUP + 1),
    ("id < 1000 OR id > 299000", 3 * GROUP + 1),
    ("id = 123456 AND x > 0.5", GROUP + 1),
    ("s >= 'k00290000'", 2 * GROUP + 1),
    ("s LIKE 'k0029%'", 2 * GROUP + 1),
    ("day = DATE '1970-06-01'", 2 * GROUP + 1),
    ("n IS NULL", STRIPED_ROWS // 2),
    ("n = 7 AND id < 100000", STRIPED_ROWS // 2),
    ("NOT (id >= 1000)", STRIPED_ROWS // 4),
    ("id < 0", STRIPED_ROWS // 4),
    ("x > 2", STRIPED_ROWS // 4),  # only the NaN, in the one stripe not bounded
    ("x > 0.99", STRIPED_ROWS + 2),  # every stripe may hold one
    ("n + 1 = 8", STRIPED_ROWS + 2),  # an expression: not pushed
]


@pytest.mark.parametrize("with_row_id", [False, True], ids=["placed", "walked"])
@pytest.mark.parametrize(("condition", "at_most"), STRIPE_FILTERS,
                         ids=[f for f, _ in STRIPE_FILTERS])
def test_stripes_no_row_of_which_can_match_are_not_read(
        spark: SparkSession, striped: Table, condition: str, at_most: int,
        with_row_id: bool) -> None:
    """Without ``row__id`` the deleted rows are placed by position, with it the keys are
    walked: either way a skipped stripe's deletes are passed over, and a kept stripe range
    after a skipped one continues the ROW__ID order check."""
    df = _at(spark, striped).toDF(with_row_id=with_row_id)
    assert reads_on_jvm(df)
    rows, scanned = _scanned(df.where(condition))
    assert repr(rows) == repr(_embedded(striped, condition, with_row_id))  # NaN equal to NaN
    assert len(rows) <= scanned <= at_most
    assert df.where(condition).count() == len(rows)


def test_a_stripe_bound_itself_keeps_its_stripe(spark: SparkSession, striped: Table) -> None:
    """Comparisons with each stripe's own minimum and maximum ``id``, and a row group's first
    id inside a stripe (and one either side) keep exactly the rows numpy keeps: an off-by-one
    in the bounds would skip a stripe or row group whose first or last row matches."""
    ids = striped.to_arrow(columns=["id"])["id"].to_numpy()
    big = next(Path(striped.location).glob("delta_0000001_*/bucket_*"))
    orc = po.ORCFile(str(big))
    assert orc.nstripes >= 4
    ops = {"<": np.less, "<=": np.less_equal, "=": np.equal, ">=": np.greater_equal,
           ">": np.greater}
    df = _at(spark, striped).toDF()
    for stripe in (0, orc.nstripes - 1):
        rows = orc.read_stripe(stripe, columns=["row"]).column(0).field(0).to_numpy()
        low, high = int(rows.min()), int(rows.max())
        group = low + GROUP  # the stripe's second row group starts here (ids rise by one)
        for value in (low - 1, low, group - 1, group, high, high + 1):
            for op, keep in ops.items():
                got = df.where(f"id {op} {value}").agg(F.count("id"), F.sum("id")).collect()
                kept = ids[keep(ids, value)]
                assert list(got[0]) == [len(kept), int(kept.sum()) if len(kept) else None], \
                    (op, value)


OLD_ROWS = 80_000  # above 65,536, so the insert streams the file in stripes


def _claim_orc_java_before_hive_8732(path: Path) -> None:
    """Make ``path`` say ORC-Java wrote it before HIVE-8732, as Hive 0.13 did: the footer's
    writer set to ORC-Java (a field appended to the footer as an uncompressed chunk: protobuf
    keeps a scalar's last value) and the postscript's writer version to ORIGINAL. ORC-Java
    holds the version against the writer (a C++ file is never "before HIVE-8732"), so both
    are needed. Only the file's claim changes: its stripes and statistics stay pyarrow's."""
    data = path.read_bytes()
    ps_length = data[-1]
    fields = footer._fields(data[-1 - ps_length:-1])
    values = {number: value for number, _, value, _ in fields}
    extra = footer._as_stream(footer._varint(9 << 3) + footer._varint(0),  # writer = ORC_JAVA
                              values.get(2, 0) != 0, int(values.get(3, 256 << 10)))
    postscript = b"".join(
        footer._varint(1 << 3) + footer._varint(int(value) + len(extra)) if number == 1
        else footer._varint(6 << 3) + footer._varint(0) if number == 6  # writerVersion
        else raw for number, _, value, raw in fields)
    path.write_bytes(data[:-1 - ps_length] + extra + postscript + bytes([len(postscript)]))


@pytest.fixture(scope="module")
def old_writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    """One bucket file of several stripes through which ``id`` and ``s`` rise, claiming an
    ORC-Java writer from before HIVE-8732, whose string minimums and maximums were wrong."""
    ids = np.arange(OLD_ROWS)
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    with pytest.MonkeyPatch.context() as patch, \
            acidstore.connect(tmp_path_factory.mktemp("old") / "wh") as wh:
        patch.setattr(write_files, "DELTA_STRIPE_SIZE", 16 << 10)
        t = wh.create_table("db.old", schema)
        t.insert(pa.table({"id": ids, "s": [f"k{i:08d}" for i in ids]}, schema=schema))
        (big,) = Path(t.location).glob("delta_*/bucket_*")
        assert po.ORCFile(str(big)).nstripes >= 3
        _claim_orc_java_before_hive_8732(big)
        forget_recorded_sizes(wh)  # the claim appended bytes after the commit
        yield t


@pytest.mark.parametrize(("condition", "skipped"),
                         [("id >= 75000", True), ("s >= 'k00075000'", False)])
def test_string_statistics_of_writers_before_hive_8732_skip_nothing(
        spark: SparkSession, old_writer: Table, condition: str, skipped: bool) -> None:
    """Such a file's integer statistics still skip its stripes; its string statistics skip
    none (ORC's own predicate pushdown distrusts them too), though here they are right."""
    rows, scanned = _scanned(_at(spark, old_writer).toDF().where(condition))
    assert rows == _embedded(old_writer, condition)
    assert len(rows) == 5000
    assert (scanned < OLD_ROWS) is skipped, scanned


# --- any filter the scan may be pushed: the rows of the plain read ---------------------------

#: examples a run: the profile's (ci 40, thorough 1,000); each is one Spark query
FILTER_EXAMPLES = settings().max_examples
_OPS = ["<", "<=", "=", ">=", ">", "<>"]
_IDS = st.integers(-10, STRIPED_ROWS + 10) | st.sampled_from(
    [-5, 10**9, GROUP - 1, GROUP, 2 * GROUP, STRIPED_ROWS - 1])
#: each column's SQL literals: around its values, its stripes' and row groups' bounds, outside
_LITERALS: dict[str, st.SearchStrategy[str]] = {
    "id": _IDS.map(str),
    "n": st.integers(-1, 11).map(str),
    "s": _IDS.map(lambda i: f"'k{i:08d}'") | st.sampled_from(["'a'", "'z'", "'k'", "''"]),
    "day": st.integers(-3, STRIPED_ROWS // 1000 + 3).map(
        lambda d: f"DATE '{dt.date(1970, 1, 1) + dt.timedelta(days=d)}'")
    | st.just("DATE '1999-01-01'"),
    "x": st.floats(-0.5, 1.5, allow_nan=False).map(lambda f: f"{f:.4f}"),
}
#: the same for the partitioned table: partition columns (a NULL partition) beside row columns
_PARTITION_LITERALS: dict[str, st.SearchStrategy[str]] = {
    "part": st.sampled_from(["'p'", "'q'", "'r'", "'o'", "'s'", "''"]),
    "region": st.integers(-1, 3).map(str),
    "id": st.integers(-1, 61).map(str),
    "x": st.floats(-1, 130, allow_nan=False).map(lambda f: f"{f:.1f}"),
}


def _atom(literals: dict[str, st.SearchStrategy[str]], like: str
          ) -> st.SearchStrategy[str]:
    """One pushable comparison over ``literals``' columns; ``like`` is the string column a
    ``LIKE 'prefix%'`` names, its values ``k`` and digits."""
    @st.composite
    def atom(draw: st.DrawFn) -> str:
        column = draw(st.sampled_from(sorted(literals)))
        literal = literals[column]
        shape = draw(st.sampled_from(["compare", "flipped", "in", "null", "like"]))
        if shape == "flipped":  # Spark pushes `5 < id` as `id > 5`
            return f"{draw(literal)} {draw(st.sampled_from(_OPS))} {column}"
        if shape == "in":
            return f"{column} IN ({', '.join(draw(st.lists(literal, min_size=1, max_size=3)))})"
        if shape == "null":
            return f"{column} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
        if shape == "like":
            digits = draw(st.integers(0, 5))
            prefix = f"k{draw(st.integers(0, 10**5)):0{digits}d}" if like == "s" \
                else draw(st.sampled_from(["", "p", "q", "r", "pq"]))
            return f"{like} LIKE '{prefix}%'"
        return f"{column} {draw(st.sampled_from(_OPS))} {draw(literal)}"
    return atom()


def _combined(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    both = st.tuples(inner, st.sampled_from(["AND", "OR"]), inner)
    return both.map(" ".join).map("({})".format) | inner.map("NOT ({})".format)


def _filters(literals: dict[str, st.SearchStrategy[str]], like: str) -> st.SearchStrategy[str]:
    """Atoms under AND, OR and NOT, up to four of them."""
    return st.recursive(_atom(literals, like), _combined, max_leaves=4)


@pytest.fixture(scope="module")
def striped_frames(spark: SparkSession, striped: Table) -> dict[bool, DataFrame]:
    """``toDF()`` of ``striped`` without and with ``row__id``, made once: every query on a
    DataFrame pushes its own filters into a scan of its own, which reusing them also checks
    (no filter of one query may reach another's scan)."""
    return {with_row_id: _at(spark, striped).toDF(with_row_id=with_row_id)
            for with_row_id in (False, True)}


@settings(max_examples=FILTER_EXAMPLES)
@given(condition=_filters(_LITERALS, like="s"), with_row_id=st.booleans())
def test_any_pushed_filter_keeps_the_rows_of_the_plain_read(
        striped_frames: dict[bool, DataFrame], striped: Table, condition: str,
        with_row_id: bool) -> None:
    """Random filters of comparisons, ``IN``, ``IS [NOT] NULL`` and ``LIKE`` under
    ``AND``/``OR``/``NOT``, at the stripes' and row groups' bounds and beyond, over every
    column type the statistics bound (a NaN and NULLs among the values): the count and sum of
    the ids Spark returns equal the embedded reader's under the same SQL, which reads every
    stripe. A stripe or row group skipped wrongly loses rows here."""
    got = striped_frames[with_row_id].where(condition).agg(F.count("id"), F.sum("id")).collect()[0]
    ids = striped.to_arrow(columns=["id"], filter=condition)["id"].to_numpy()
    assert list(got) == [len(ids), int(ids.sum()) if len(ids) else None], condition


@pytest.fixture(scope="module")
def table_frame(spark: SparkSession, table: Table) -> DataFrame:
    return _at(spark, table).toDF()


@settings(max_examples=FILTER_EXAMPLES)
@given(condition=_filters(_PARTITION_LITERALS, like="part"))
def test_any_filter_on_partition_and_row_columns_keeps_the_rows_of_the_plain_read(
        table_frame: DataFrame, table: Table, condition: str) -> None:
    """Random filters mixing partition columns (a NULL partition among them) and row columns:
    the rows Spark returns equal the embedded reader's. A partition pruned wrongly, or a
    conjunct that names a row column taken for a partition-only one, loses rows here."""
    rows = spark_rows(table_frame.where(condition))
    assert rows == _embedded(table, condition), condition
