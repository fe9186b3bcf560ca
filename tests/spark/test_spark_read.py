"""Spark reads (``AcidTable.toDF`` and ``format("acidstore")``) return what embedded reads do.

Tables are written through the embedded API (inserts, UPDATE, DELETE), then read through Spark
and compared, as sorted rows, with ``Table.to_arrow`` of the same snapshot: partitioned and
bucketed tables and plain ones, column selection (option and ``.schema()``), the ``filter``
option with partition pruning, ROW__IDs, time travel, both readers, snapshot stability of a
DataFrame, ``forPath``, the errors of bad requests and every Hive type acidstore maps.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from spark_support import (
    TABLE,
    arrow_rows,
    make_rows,
    new_table,
    spark_rows,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    InvalidInputError,
    SchemaMismatchError,
    TableNotFoundError,
    WarehouseNotFoundError,
)
from acidstore.spark import AcidTable, register
from acidstore.spark.read_tasks import plan_read, read_options, read_schema, split_paths
from acidstore.spark.typed_errors import typed_error
from compaction import Cleaner, compact

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


def changed_table(wh: Warehouse, *, partitioned: bool = True, buckets: int = 3) -> Table:
    """Four committed writes: insert, update, delete, insert (write ids 1..4)."""
    t = new_table(wh, partitioned=partitioned, buckets=buckets)
    t.insert(make_rows(range(12), partitioned=partitioned))
    t.update("id % 4 = 1", {"amount": "amount + 1000", "name": "upper(name)"})
    t.delete("id IN (2, 7, 8)")
    t.insert(make_rows(range(20, 26), name="m", partitioned=partitioned))
    return t


def source(spark: SparkSession, wh: Warehouse) -> DataFrameReader:
    return spark.read.format("acidstore").option("warehouse", str(wh.location))


@pytest.mark.parametrize(("partitioned", "buckets"), [(True, 3), (False, 0)],
                         ids=["partitioned-bucketed", "plain"])
def test_reads_equal_embedded(spark: SparkSession, wh: Warehouse, partitioned: bool,
                              buckets: int) -> None:
    t = changed_table(wh, partitioned=partitioned, buckets=buckets)
    expected = arrow_rows(t.to_arrow())
    assert len(expected) == 15
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    df = at.toDF()
    assert df.columns == t.schema.names
    assert spark_rows(df) == expected
    assert spark_rows(source(spark, wh).load(TABLE)) == expected
    # the heap-merge reader, one split per Spark task
    merged = source(spark, wh).option("reader", "merge").option("maxPartitionBytes", "1")
    assert spark_rows(merged.load(TABLE)) == expected


def test_columns_option_and_user_schema_select_columns(spark: SparkSession,
                                                       wh: Warehouse) -> None:
    t = changed_table(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    df = at.toDF(columns=["amount", "id"])
    assert df.columns == ["amount", "id"]
    assert spark_rows(df) == arrow_rows(t.to_arrow(columns=["amount", "id"]))
    raw = source(spark, wh).option("columns", "dt,name").load(TABLE)
    assert raw.columns == ["dt", "name"]
    assert spark_rows(raw) == arrow_rows(t.to_arrow(columns=["dt", "name"]))
    # a user-given schema selects (and orders) columns, any case
    chosen = source(spark, wh).schema("NAME string, id bigint").load(TABLE)
    assert spark_rows(chosen) == arrow_rows(t.to_arrow(columns=["name", "id"]))
    # a schema that does not fit the table is refused with the embedded error type
    with pytest.raises(Exception) as wrong_type:
        source(spark, wh).schema("id string").load(TABLE).collect()
    assert isinstance(typed_error(wrong_type.value), SchemaMismatchError)


def test_filter_option_reads_fewer_rows_and_files(spark: SparkSession, wh: Warehouse) -> None:
    t = changed_table(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    for condition in ("dt = 'a'", "dt = 'b' AND amount > 50", "name LIKE 'N%'"):
        got = spark_rows(at.toDF(filter=condition))
        assert got == arrow_rows(t.to_arrow(filter=condition)), condition
    assert spark_rows(at.toDF(columns=["id"], filter="dt = 'a'")) == arrow_rows(
        t.to_arrow(columns=["id"], filter="dt = 'a'"))

    # one split per Spark task: the partition filter leaves out dt=b's bucket files
    one_per_task = source(spark, wh).option("maxPartitionBytes", "1")
    everything = one_per_task.load(TABLE).rdd.getNumPartitions()
    only_a = one_per_task.option("filter", "dt = 'a'").load(TABLE).rdd.getNumPartitions()
    assert 0 < only_a < everything

    # the files planned (the driver's plan, in-process): none of dt=b
    def planned(options: dict[str, str]) -> list[str]:
        opts = read_options(options)
        tasks, _ = plan_read(handle_of(t), opts, read_schema(handle_of(t), opts),
                         handle_of(t).read_snapshot())
        return split_paths(tasks)

    all_files, a_files = planned({}), planned({"filter": "dt = 'a'"})
    assert len(all_files) == everything
    assert a_files and len(a_files) == only_a
    assert all("/dt=a/" in f for f in a_files)
    assert set(a_files) < set(all_files)


def test_small_tables_are_split_across_cores_as_spark_splits_files(wh: Warehouse) -> None:
    """Spark's maxSplitBytes: tasks of at most maxPartitionBytes, but a table smaller than
    cores x that still gets about one task per core (files cost OPEN_COST_BYTES each)."""
    t = changed_table(wh)

    def tasks(options: dict[str, str]) -> list[int]:
        opts = read_options(options)
        planned, _ = plan_read(handle_of(t), opts, read_schema(handle_of(t), opts),
                         handle_of(t).read_snapshot())
        return [len(task.planned) for task in planned]

    files = sum(tasks({"minPartitions": "1"}))
    assert files > 4
    assert tasks({"minPartitions": "1"}) == [files]
    assert len(tasks({"minPartitions": "2"})) == 2
    assert len(tasks({"minPartitions": "4"})) == 4
    assert tasks({"minPartitions": "2", "maxPartitionBytes": "1"}) == [1] * files
    with pytest.raises(InvalidInputError, match="minPartitions"):
        read_options({"minPartitions": "0"})


def test_with_row_id_matches_embedded(spark: SparkSession, wh: Warehouse) -> None:
    t = changed_table(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    df = at.toDF(with_row_id=True)
    assert df.columns == [*t.schema.names, "row__id"]
    assert df.schema["row__id"].dataType.simpleString() == \
        "struct<writeid:bigint,bucketid:int,rowid:bigint>"
    expected = arrow_rows(t.to_arrow(with_row_id=True))
    assert spark_rows(df) == expected
    assert spark_rows(source(spark, wh).option("withRowId", "true").load(TABLE)) == expected
    # only the ROW__IDs, through a user schema
    ids = source(spark, wh).schema(
        "row__id struct<writeid:bigint,bucketid:int,rowid:bigint>").load(TABLE)
    assert spark_rows(ids) == arrow_rows(t.to_arrow(columns=[], with_row_id=True))


def test_as_of_write_id_and_datetime(spark: SparkSession, wh: Warehouse) -> None:
    t = changed_table(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    for write_id in (1, 2, 3):
        expected = arrow_rows(t.to_arrow(as_of=write_id))
        assert spark_rows(at.toDF(as_of=write_id)) == expected, write_id
    assert spark_rows(source(spark, wh).option("asOf", "2").load(TABLE)) == \
        arrow_rows(t.to_arrow(as_of=2))

    commit_times = dict(zip(t.history().column("write_id").to_pylist(),
                            t.history().column("commit_time").to_pylist(), strict=True))
    moment: datetime = commit_times[3]  # UTC-aware
    expected = arrow_rows(t.to_arrow(as_of=3))
    assert expected != arrow_rows(t.to_arrow())
    assert spark_rows(at.toDF(as_of=moment)) == expected
    # a naive ISO string in the option is UTC too
    naive = moment.replace(tzinfo=None).isoformat()
    assert spark_rows(source(spark, wh).option("asOf", naive).load(TABLE)) == expected
    with pytest.raises(Exception) as bad:
        source(spark, wh).option("asOf", "yesterday").load(TABLE).collect()
    assert isinstance(typed_error(bad.value), InvalidInputError)


def test_as_of_before_a_major_compaction_during_retention(spark: SparkSession,
                                                          wh: Warehouse) -> None:
    """Spark's read leases the same past snapshot as the embedded one: it reads around a
    compaction committed after the point while retention keeps what it replaced."""
    t = changed_table(wh)
    history = {w: arrow_rows(t.to_arrow(as_of=w)) for w in (1, 2, 3)}
    assert compact(t, "major").compacted
    assert Cleaner(wh, retention_seconds=3600).run().removed == []
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    assert {w: spark_rows(at.toDF(as_of=w)) for w in (1, 2, 3)} == history


def test_reader_merge_equals_vectorized(spark: SparkSession, wh: Warehouse) -> None:
    changed_table(wh)
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    vectorized = source(spark, wh).option("reader", "vectorized").option("withRowId", "true")
    merge = source(spark, wh).option("reader", "merge").option("withRowId", "true")
    assert spark_rows(merge.load(TABLE)) == spark_rows(vectorized.load(TABLE))
    assert spark_rows(merge.load(TABLE)) == spark_rows(at.toDF(with_row_id=True))
    with pytest.raises(Exception) as bad:
        source(spark, wh).option("reader", "fast").load(TABLE).collect()
    assert isinstance(typed_error(bad.value), InvalidInputError)


def test_dataframe_keeps_its_snapshot(spark: SparkSession, wh: Warehouse) -> None:
    t = new_table(wh)
    t.insert(make_rows(range(10)))
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    df = at.toDF()
    raw = source(spark, wh).load(TABLE)
    assert df.count() == 10
    assert raw.count() == 10
    t.insert(make_rows(range(10, 15)))
    t.delete("id < 3")
    assert df.count() == 10  # the same DataFrame: its snapshot
    assert len(df.collect()) == 10
    assert raw.count() == 10
    assert spark_rows(df) == arrow_rows(t.to_arrow(as_of=1))
    assert at.toDF().count() == 12  # a fresh one sees both writes
    assert spark_rows(at.toDF()) == arrow_rows(t.to_arrow())


def test_for_path(spark: SparkSession, wh: Warehouse) -> None:
    t = changed_table(wh)
    by_path = AcidTable.forPath(spark, t.location)
    assert by_path.name == TABLE
    assert spark_rows(by_path.toDF()) == arrow_rows(t.to_arrow())
    # load(<table directory>) without the warehouse option
    direct = spark.read.format("acidstore").load(t.location)
    assert spark_rows(direct) == arrow_rows(t.to_arrow())


def test_bad_requests_raise_acidstore_errors(spark: SparkSession, wh: Warehouse) -> None:
    changed_table(wh)
    location = str(wh.location)
    with pytest.raises(TableNotFoundError):
        AcidTable.forName(spark, "db.nope", warehouse=location)
    with pytest.raises(TableNotFoundError):
        AcidTable.forPath(spark, str(Path(location) / "db.db"))
    with pytest.raises(Exception) as raw:
        source(spark, wh).load("db.nope").collect()
    assert isinstance(typed_error(raw.value), TableNotFoundError)

    at = AcidTable.forName(spark, TABLE, warehouse=location)
    with pytest.raises(InvalidInputError, match="nope"):
        at.toDF(columns=["id", "nope"])
    with pytest.raises(Exception) as unknown:
        source(spark, wh).option("columns", "nope").load(TABLE).collect()
    assert isinstance(typed_error(unknown.value), InvalidInputError)


def test_a_failed_read_creates_nothing(spark: SparkSession, tmp_path: Path) -> None:
    """Options that name no warehouse (or no metastore) fail as WarehouseNotFoundError and
    leave nothing behind: no directory, no metastore file."""
    register(spark)
    missing = tmp_path / "nowhere" / "wh"
    with pytest.raises(Exception) as raw:
        spark.read.format("acidstore").option("warehouse", str(missing)).load(TABLE).collect()
    assert isinstance(typed_error(raw.value), WarehouseNotFoundError)
    with pytest.raises(WarehouseNotFoundError):
        AcidTable.forName(spark, TABLE, warehouse=str(missing))
    assert not (tmp_path / "nowhere").exists()

    empty, catalogue = tmp_path / "empty", tmp_path / "catalogue"
    empty.mkdir()
    catalogue.mkdir()
    with pytest.raises(Exception) as raw:
        (spark.read.format("acidstore").option("warehouse", str(empty))
         .option("metastore", f"sqlite:///{catalogue / 'meta.db'}").load(TABLE).collect())
    assert isinstance(typed_error(raw.value), WarehouseNotFoundError)
    assert list(empty.iterdir()) == [] and list(catalogue.iterdir()) == []


TYPES = pa.schema([
    pa.field("i", pa.int32()), pa.field("b", pa.int64()), pa.field("s", pa.string()),
    pa.field("d", pa.float64()), pa.field("ok", pa.bool_()), pa.field("day", pa.date32()),
    pa.field("at", pa.timestamp("us")), pa.field("amount", pa.decimal128(10, 2)),
    pa.field("dt", pa.string()),
])
TYPED_ROWS: list[dict[str, Any]] = [
    {"i": 1, "b": 2**40, "s": "héllo", "d": 1.5, "ok": True, "day": date(2024, 2, 29),
     "at": datetime(2024, 2, 29, 23, 59, 59, 123456), "amount": Decimal("12345678.90"),
     "dt": "x"},
    # before 1970 in whole seconds: a fraction there is refused at write (Java ORC cannot read it)
    {"i": -7, "b": -1, "s": "", "d": -0.25, "ok": False, "day": date(1970, 1, 1),
     "at": datetime(1969, 12, 31, 0, 0, 1), "amount": Decimal("-0.01"), "dt": "x"},
    {"i": None, "b": None, "s": None, "d": None, "ok": None, "day": None, "at": None,
     "amount": None, "dt": None},
]


def test_hive_types_round_trip(spark: SparkSession, wh: Warehouse) -> None:
    t = wh.create_table("db.types", TYPES, partition_by=["dt"], bucket_by=["i"], buckets=2)
    t.insert(pa.Table.from_pylist(TYPED_ROWS, schema=TYPES))
    at = AcidTable.forName(spark, "db.types", warehouse=str(wh.location))
    df = at.toDF()
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("i", "int"), ("b", "bigint"), ("s", "string"), ("d", "double"), ("ok", "boolean"),
        ("day", "date"), ("at", "timestamp_ntz"), ("amount", "decimal(10,2)"),
        ("dt", "string")]
    expected = arrow_rows(t.to_arrow())
    assert spark_rows(df) == expected
    assert expected == sorted((tuple(r.values()) for r in TYPED_ROWS), key=repr)

    # and back: a Spark write of the rows read, then an embedded read
    copy = wh.create_table("db.types2", TYPES, partition_by=["dt"], bucket_by=["i"], buckets=2)
    AcidTable.forName(spark, "db.types2", warehouse=str(wh.location)).insert(df)
    assert arrow_rows(copy.to_arrow()) == expected
    assert copy.to_arrow().schema.equals(t.to_arrow().schema)
