"""``AcidTable.toDF()`` on acidstore's Java reader (``acidstore.spark.jvm_read``).

The Java reader maps Spark's pruned read schema onto the files by name, drops deleted rows
in place (by position, where stripe statistics prove where they are) and counts rows without
decoding columns: every one of those is a way to return wrong rows. These tests read every
column alone and together, with and without ``row__id`` (whole or one field of it), on
partitioned tables with int, date and string partitions (a NULL one too), after updates,
deletes and compactions, and check the values against the embedded reader (files written
before ``add_columns`` and timestamps in a zone with DST: in
tests/spark/test_spark_native_read.py, for both JVM readers); they pin what the Java reader must
not take (the next path reads it, with the same rows), that a DataFrame reads the snapshot
taken when it was made, and that damaged or missing files stop the read instead of returning
fewer rows.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from spark_support import (
    add_originals,
    arrow_rows,
    forget_recorded_sizes,
    make_rows,
    new_table,
    reads_on_jvm,
    spark_rows,
)

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.errors import AcidStoreError, CorruptFileError, DataError, MissingDataError
from acidstore.spark import AcidTable, typed_error
from acidstore.spark.jvm_read import JVM_READ_CONF
from acidstore.write import files as write_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([
    ("id", pa.int64()), ("name", pa.string()), ("price", pa.decimal128(9, 2)),
    ("big", pa.decimal128(30, 4)), ("day", pa.date32()), ("ok", pa.bool_()),
    ("score", pa.float64()), ("ratio", pa.float32()), ("small", pa.int16()),
    ("tiny", pa.int8()), ("n", pa.int32()), ("blob", pa.binary()),
    ("at", pa.timestamp("us")), ("part", pa.string()), ("region", pa.int32())])


def _rows(ids: range, tag: str) -> pa.Table:
    return pa.table({
        "id": list(ids), "name": [f"{tag}{i}" if i % 7 else None for i in ids],
        "price": [Decimal(i) / 4 for i in ids],
        "big": [Decimal(10) ** 20 + Decimal(i) / 8 for i in ids],
        "day": [dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in ids],
        "ok": [i % 2 == 0 for i in ids], "score": [i * 1.5 for i in ids],
        "ratio": [i / 3 for i in ids], "small": [i - 20 for i in ids],
        "tiny": [i % 100 for i in ids], "n": [i * 1000 for i in ids],
        "blob": [bytes([i % 256, 0]) for i in ids],
        "at": [dt.datetime(2026, 3, 8, 2, 30) + dt.timedelta(hours=i) for i in ids],
        "part": ["p" if i % 3 else ("q" if i % 2 else None) for i in ids],
        "region": [i % 2 for i in ids]}, schema=SCHEMA)


def _at(spark: SparkSession, t: Table) -> AcidTable:
    return AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    """Partitioned by a string (NULL included) and an int, bucketed; two inserts, an update,
    deletes in several partitions (their ROW__IDs coincide: each partition's deltas number
    rows from 0), a minor compaction of some of it, and a delete after that."""
    with acidstore.connect(tmp_path_factory.mktemp("jvm") / "wh") as wh:
        t = wh.create_table("db.j", SCHEMA, partition_by=["part", "region"], bucket_by=["id"],
                            buckets=2)
        t.insert(_rows(range(0, 40), "a"))
        t.insert(_rows(range(40, 60), "b"))
        t.update("id % 5 = 0", {"score": "score + 1000", "name": "upper(name)"})
        t.delete("id IN (1, 2, 41)")
        t.optimize("minor")
        t.delete("id IN (3, 44, 59)")
        yield t


def test_every_column_alone_and_together_reads_its_own_values(spark: SparkSession,
                                                               table: Table) -> None:
    df = _at(spark, table).toDF(with_row_id=True)
    assert reads_on_jvm(df)
    expected = table.to_arrow(with_row_id=True)
    assert spark_rows(df) == arrow_rows(expected)
    for name in expected.column_names:
        assert spark_rows(df.select(name)) == arrow_rows(expected.select([name])), name
    for names in (["score", "id"], ["part", "day", "name"], ["ok", "row__id", "price"],
                  ["region", "part"], ["big", "at", "blob", "region"]):
        assert spark_rows(df.select(*names)) == arrow_rows(expected.select(names)), names
    writeids = spark_rows(df.select(F.col("row__id.writeid"), F.col("row__id.rowid")))
    assert writeids == sorted(((r["writeid"], r["rowid"]) for r in expected["row__id"]
                               .to_pylist()), key=repr)
    assert df.count() == expected.num_rows
    assert df.select("part").count() == expected.num_rows
    assert df.filter(F.col("score") >= 1000).count() == table.to_arrow(
        filter="score >= 1000").num_rows > 0
    assert spark_rows(df.filter("part = 'q' AND ok").select("id")) == arrow_rows(
        table.to_arrow(columns=["id"], filter="part = 'q' AND ok"))


def test_counts_and_partition_columns_at_every_snapshot(spark: SparkSession,
                                                        table: Table) -> None:
    """``count()`` and ``select('part')`` decode no column of the rows: the reader counts
    rows less the deleted ones (found by the keys, or placed by stripe statistics and their
    rowIds checked)."""
    at = _at(spark, table)
    for as_of in range(1, 6):
        expected = table.to_arrow(columns=["part", "region"], as_of=as_of)
        df = at.toDF(as_of=as_of)
        assert reads_on_jvm(df)
        assert df.count() == expected.num_rows, as_of
        assert spark_rows(df.select("part", "region")) == arrow_rows(expected), as_of
        assert spark_rows(df.groupBy("region").count()) == arrow_rows(
            expected.group_by("region").aggregate([([], "count_all")])), as_of


def test_columns_and_as_of(spark: SparkSession, table: Table) -> None:
    at = _at(spark, table)
    for as_of in range(1, 6):
        df = at.toDF(columns=["name", "part", "big"], as_of=as_of, with_row_id=True)
        assert reads_on_jvm(df)
        assert df.columns == ["name", "part", "big", "row__id"]
        assert spark_rows(df) == arrow_rows(table.to_arrow(
            columns=["name", "part", "big"], as_of=as_of, with_row_id=True)), as_of


def test_partition_values_of_every_type(spark: SparkSession, tmp_path: Path) -> None:
    """Partition values come from directory names (escaped), converted as the embedded reader
    converts them, NULL ones included."""
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("b", pa.bool_()),
                        ("x", pa.float64()), ("s", pa.string())])
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.p", schema, partition_by=["d", "b", "x", "s"])
        t.insert(pa.table({"id": [1, 2, 3], "d": [dt.date(2026, 2, 1), None, dt.date(1960, 1, 1)],
                           "b": [True, False, None], "x": [0.25, None, -3.5],
                           "s": ["a b/c", "é", None]}, schema=schema))
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        assert spark_rows(df) == arrow_rows(t.to_arrow())


def test_nanosecond_timestamp_partitions_are_truncated_as_the_columns_are(
        spark: SparkSession, tmp_path: Path) -> None:
    """Spark holds microseconds: a nanosecond partition value (``p=2000-01-01
    00:00:00.000000001``) is truncated as a nanosecond column is and as the Python data
    source does. ``toDF()`` used to fail planning with pyarrow's untyped ArrowInvalid."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.timestamp("ns"))])
    moment = pa.scalar(946_684_800_000_000_001, pa.timestamp("ns"))
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.p", schema, partition_by=["p"])
        t.insert(pa.table({"id": [1, 2], "p": pa.array([moment, None], pa.timestamp("ns"))}))
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        source = spark.read.format("acidstore").option("warehouse", str(tmp_path / "wh")
                                                       ).load("db.p")
        expected = [(1, dt.datetime(2000, 1, 1)), (2, None)]
        assert sorted(tuple(r) for r in df.collect()) == expected
        assert sorted(tuple(r) for r in source.collect()) == expected


def test_a_file_larger_than_a_task_is_read_as_stripe_ranges(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One large file (an unbucketed table's single file) is cut into stripe ranges, one task
    each; with deleted rows in every stripe, a count (from statistics), the rows placed by
    position and the rows with ROW__IDs (keys decoded) all equal the embedded reader's."""
    monkeypatch.setattr(write_files, "DELTA_STRIPE_SIZE", 1 << 20)  # many stripes
    n = 1_500_000  # ~10 MB of zstd: two ranges of at least read.ranges.MIN_RANGE_BYTES
    values = np.random.default_rng(7).integers(0, 1 << 52, n)
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.big", pa.schema([("id", pa.int64()), ("x", pa.int64())]))
        t.insert(pa.table({"id": np.arange(n), "x": values}))
        t.delete("id % 50000 = 7 OR id = 0 OR id = 1499999")
        df = _at(spark, t).toDF(with_row_id=True)
        assert reads_on_jvm(df)
        assert df.rdd.getNumPartitions() >= 2
        expected = t.to_arrow(with_row_id=True)
        rowids = pc.struct_field(expected["row__id"], "rowid")
        assert df.count() == expected.num_rows == n - 32
        residues = int((expected["x"].to_numpy() % 1_000_003).sum())
        got = df.agg(F.sum("id"), F.sum(F.col("x") % 1_000_003), F.sum("row__id.rowid"),
                     F.min("id"), F.max("id")).collect()[0]
        assert list(got) == [pc.sum(expected["id"]).as_py(), residues, pc.sum(rowids).as_py(),
                             1, n - 2]
        assert df.select("x").agg(F.sum(F.col("x") % 1_000_003)).collect()[0][0] == residues


def test_a_dataframe_reads_its_snapshot_and_keeps_no_plan_file(spark: SparkSession,
                                                               tmp_path: Path) -> None:
    """The plan is loaded when the DataFrame is made and its file deleted: later actions,
    after more writes, still read ``toDF()``'s snapshot."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh)
        t.insert(make_rows(range(10)))
        plans = set(Path(os.environ.get("TMPDIR", "/tmp")).glob("acidstore-plan-*"))
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        assert set(Path(os.environ.get("TMPDIR", "/tmp")).glob("acidstore-plan-*")) <= plans
        t.insert(make_rows(range(10, 15)))
        t.delete("id < 3")
        assert df.count() == 10
        assert spark_rows(df.union(df).select("id").distinct()) == [(i,) for i in range(10)]
        assert _at(spark, t).toDF().count() == 12


def test_what_the_java_reader_does_not_take_reads_the_same_rows(spark: SparkSession,
                                                                tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh, buckets=2)
        add_originals(t, make_rows(range(6)), buckets=2)  # synthetic ROW__IDs: Python path
        t.insert(make_rows(range(10, 14)))
        t.delete("id IN (1, 11)")
        df = _at(spark, t).toDF(with_row_id=True)
        assert not reads_on_jvm(df)
        assert spark_rows(df) == arrow_rows(t.to_arrow(with_row_id=True))

        plain = new_table(wh, "db.plain")
        plain.insert(make_rows(range(8)))
        filtered = _at(spark, plain).toDF(filter="id > 3")  # the embedded engine's SQL
        assert not reads_on_jvm(filtered)
        assert spark_rows(filtered) == arrow_rows(plain.to_arrow(filter="id > 3"))
        spark.conf.set(JVM_READ_CONF, "false")
        try:
            off = _at(spark, plain).toDF()
            assert not reads_on_jvm(off)
            assert spark_rows(off) == arrow_rows(plain.to_arrow())
        finally:
            spark.conf.unset(JVM_READ_CONF)


def test_a_missing_committed_directory_is_an_error_not_fewer_rows(spark: SparkSession,
                                                                 tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh)
        t.insert(make_rows(range(10)))
        t.delete("id < 3")
        shutil.rmtree(next(Path(t.location).rglob("delete_delta_*")))
        with pytest.raises(MissingDataError, match="delete_delta"):
            _at(spark, t).toDF()


def _typed(caught: pytest.ExceptionInfo[Exception], expected: type[AcidStoreError]
           ) -> AcidStoreError:
    """The acidstore error a failed Spark action carries (``acidstore.spark.typed_error``),
    checked to be exactly ``expected``: a Java task's failure is text when it reaches the
    driver, so its message names the Python class, as a Python worker's traceback does."""
    typed = typed_error(caught.value)
    assert type(typed) is expected, caught.value
    return typed


@pytest.mark.parametrize("on_jvm", [True, False], ids=["java-reader", "python-source"])
def test_a_file_removed_after_toDF_fails_the_action_naming_it(
        spark: SparkSession, tmp_path: Path, on_jvm: bool) -> None:
    """Either reader: Spark's exception carries MissingDataError naming the file (the Java
    reader's tasks, planned by ``toDF()``) or its directory (the Python data source plans
    when the action runs, and finds the directory short of what its write committed), never
    fewer rows."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh, partitioned=False, buckets=0)
        t.insert(make_rows(range(10)).drop_columns(["dt"]))
        spark.conf.set(JVM_READ_CONF, str(on_jvm).lower())
        try:
            df = _at(spark, t).toDF()
        finally:
            spark.conf.unset(JVM_READ_CONF)
        assert reads_on_jvm(df) is on_jvm
        gone = next(Path(t.location).rglob("bucket_*"))
        gone.unlink()
        with pytest.raises(Exception, match=gone.parent.name) as caught:
            df.collect()
        assert (gone.name if on_jvm else gone.parent.name) in str(_typed(caught, MissingDataError))


def test_a_file_overwritten_after_toDF_with_what_is_not_orc_is_corrupt(
        spark: SparkSession, tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh, partitioned=False, buckets=0)
        t.insert(make_rows(range(10)).drop_columns(["dt"]))
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        victim = next(Path(t.location).rglob("bucket_*"))
        victim.write_bytes(b"x" * victim.stat().st_size)  # same length, not ORC
        with pytest.raises(Py4JJavaError, match=victim.name) as caught:
            df.collect()
        assert victim.name in str(_typed(caught, CorruptFileError))


def test_a_compacted_file_holding_other_events_than_recorded_fails(spark: SparkSession,
                                                                  tmp_path: Path) -> None:
    """A compaction records how many events its file holds; a file rewritten since (here:
    one event cut off) fails the read naming it, as the embedded reader does."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh, partitioned=False, buckets=0)
        t.insert(make_rows(range(10)).drop_columns(["dt"]))
        t.insert(make_rows(range(10, 20)).drop_columns(["dt"]))
        t.optimize("major")
        base = next(Path(t.location).glob("base_*/bucket_*"))
        events = po.read_table(base)
        po.write_table(events.slice(1), base)
        # without the recorded bytes (which catch it at planning) the event count is left,
        # which the Java reader checks as it opens the file
        forget_recorded_sizes(wh)
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        with pytest.raises(Py4JJavaError, match="its compaction recorded") as caught:
            df.collect()
        assert base.name in str(_typed(caught, DataError))


def _row_id_repeated(events: pa.Table, path: Path) -> None:
    """The four events with rowIds 0, 2, 2, 3: one writer, rowIds 0 to 3, four rows."""
    po.write_table(events.set_column(events.schema.get_field_index("rowId"), "rowId",
                                     pa.array([0, 2, 2, 3], pa.int64())), path)


def _stripe_repeated(events: pa.Table, path: Path) -> None:
    """The four events twice, in two stripes: each stripe's statistics alone look right."""
    po.write_table(pa.concat_tables([events, events]), path, stripe_size=1, batch_size=4)
    assert po.ORCFile(path).nstripes == 2


@pytest.mark.parametrize("corrupt", [_row_id_repeated, _stripe_repeated],
                         ids=["in-a-stripe", "in-the-next-stripe"])
def test_deletes_placed_by_position_check_the_row_ids(
        spark: SparkSession, tmp_path: Path, corrupt: Callable[[pa.Table, Path], None]) -> None:
    """Stripe statistics of one writer and as many rows as rowIds from min to max let the
    reader place deletes by position; only ROW__IDs ascending strictly through the file make
    that right. A stripe whose rowIds are 0, 2, 2, 3 has such statistics, and so do two
    stripes holding the same rowIds (the reader checks the rowIds inside each stripe, and
    the stripes' key ranges against each other): the read fails naming the file instead of
    dropping the wrong row or one row twice, and so does a ``count()``, which decodes no
    column of the rows but still their rowIds."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh, partitioned=False, buckets=0)
        t.insert(make_rows(range(4)).drop_columns(["dt"]))
        t.delete("id = 2")
        delta = next(Path(t.location).glob("delta_*/bucket_*"))
        corrupt(po.read_table(delta), delta)
        forget_recorded_sizes(wh)
        df = _at(spark, t).toDF()
        assert reads_on_jvm(df)
        for action in (df.collect, df.count):
            with pytest.raises(Py4JJavaError, match=f"out of order in .*{delta.name}") as caught:
                action()
            _typed(caught, DataError)


def _two_stripes(events: pa.Table, path: Path) -> None:
    """The 1.5M events of ``test_a_row_id_repeated_across_two_ranges_fails_the_read``
    rewritten to ``path`` in two stripes (the writer cuts stripes by its own size estimate:
    that test checks the count)."""
    po.write_table(events, path, stripe_size=8 << 20, batch_size=1 << 16)


def test_a_row_id_repeated_across_two_ranges_fails_the_read(
        spark: SparkSession, tmp_path: Path) -> None:
    """A file of two stripes larger than a task is read as two ranges, one task each; the
    second continues the order check from the last event of the first (decoded for it), so
    a ROW__ID repeated across the boundary fails the read instead of coming back twice."""
    n = 1_500_000
    values = np.random.default_rng(11).integers(0, 1 << 52, n)
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.big", pa.schema([("id", pa.int64()), ("x", pa.int64())]))
        t.insert(pa.table({"id": np.arange(n), "x": values}))
        delta = next(Path(t.location).glob("delta_*/bucket_*"))
        events = po.read_table(delta)
        _two_stripes(events, delta)
        orc = po.ORCFile(delta)
        assert orc.nstripes == 2
        first = orc.read_stripe(0, columns=["rowId"]).num_rows
        rowids = events["rowId"].to_numpy().copy()
        rowids[first] = rowids[first - 1]  # the second stripe starts with the first's last
        _two_stripes(events.set_column(events.schema.get_field_index("rowId"), "rowId",
                                       pa.array(rowids)), delta)
        assert po.ORCFile(delta).read_stripe(0, columns=["rowId"]).num_rows == first
        forget_recorded_sizes(wh)
        df = _at(spark, t).toDF(with_row_id=True)
        assert reads_on_jvm(df)
        assert df.rdd.getNumPartitions() == 2
        with pytest.raises(Py4JJavaError, match=f"out of order in .*{delta.name}"):
            df.agg(F.count("row__id")).collect()
