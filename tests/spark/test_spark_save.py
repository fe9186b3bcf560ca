"""``df.write.format("acidstore")`` the way delta-spark users write (issue 15): no ``.mode()``
is Delta's ``errorifexists`` (a first write creates the table, with ``partitionBy`` and
``bucketBy``), ``ignore``, what ``overwrite`` replaces (``partitionOverwriteMode``), and
``mergeSchema`` (old rows read NULL for the new columns on both engines)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from spark_support import TABLE, arrow_rows, make_rows, new_table, spark_rows, to_spark

from acidstore import Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    InvalidInputError,
    SchemaMismatchError,
    TableExistsError,
    TableNotFoundError,
    WarehouseNotFoundError,
)
from acidstore.spark import AcidTable
from acidstore.spark.typed_errors import typed_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameWriter, SparkSession


def writer(df: DataFrame, wh: Warehouse | Path) -> DataFrameWriter:
    location = wh.location if isinstance(wh, Warehouse) else wh
    return df.write.format("acidstore").option("warehouse", str(location))


def test_a_first_write_without_mode_creates_the_table(spark: SparkSession,
                                                      wh: Warehouse) -> None:
    rows = make_rows(range(8))
    writer(to_spark(spark, rows), wh).partitionBy("dt").bucketBy(3, "id").save(TABLE)
    t = wh.table(TABLE)
    info = handle_of(t).info
    assert (info.partition_schema.names, info.bucket_by, info.buckets) == (["dt"], ("id",), 3)
    assert all(f.nullable for f in t.schema)
    assert arrow_rows(t.to_arrow()) == arrow_rows(rows)
    # the same files as a table created embedded and written by AcidTable.insert
    twin = new_table(wh, "db.twin")
    AcidTable.forName(spark, "db.twin", warehouse=str(wh.location)).insert(to_spark(spark, rows))
    assert arrow_rows(twin.to_arrow(with_row_id=True)) == \
        arrow_rows(t.to_arrow(with_row_id=True))
    # Delta's default mode is errorifexists: the table exists now
    with pytest.raises(TableExistsError, match=r"mode\('append'\)"):
        writer(to_spark(spark, rows), wh).save(TABLE)
    writer(to_spark(spark, make_rows([100])), wh).mode("ignore").save(TABLE)  # nothing
    writer(to_spark(spark, make_rows([101])), wh).mode("append").partitionBy("dt").save(TABLE)
    assert sorted(t.to_arrow(filter="id >= 100").column("id").to_pylist()) == [101]
    # an unpartitioned first write; append creates a table as well
    writer(to_spark(spark, make_rows([1], partitioned=False)), wh).mode("append").save("db.u")
    assert handle_of(wh.table("db.u")).info.partition_schema.names == []


def test_a_layout_that_is_not_the_table_s_is_refused(spark: SparkSession, wh: Warehouse
                                                     ) -> None:
    t = new_table(wh)
    rows = to_spark(spark, make_rows([1]))
    for attempt in (writer(rows, wh).mode("append").partitionBy("name"),
                    writer(rows, wh).mode("append").bucketBy(4, "id"),
                    writer(rows, wh).mode("append").partitionBy("dt").bucketBy(3, "name")):
        with pytest.raises(InvalidInputError, match="layout cannot change"):
            attempt.save(TABLE)
    with pytest.raises(InvalidInputError, match="sortBy"):
        writer(rows, wh).mode("append").bucketBy(3, "id").sortBy("id").save(TABLE)
    assert t.to_arrow().num_rows == 0


def test_a_first_write_needs_a_name_in_a_warehouse_that_exists(spark: SparkSession,
                                                               tmp_path: Path,
                                                               wh: Warehouse) -> None:
    rows = to_spark(spark, make_rows([1]))
    with pytest.raises(WarehouseNotFoundError):
        writer(rows, tmp_path / "typo").save(TABLE)
    assert not (tmp_path / "typo").exists()
    with pytest.raises(TableNotFoundError, match="by name"):
        rows.write.format("acidstore").save(str(Path(wh.location) / "db.db" / "t"))
    # a write that fails after creating its table leaves no table
    with pytest.raises(Exception) as bad:
        writer(rows, wh).option("txnAppId", "app").save(TABLE)  # no txnVersion
    assert isinstance(typed_error(bad.value), InvalidInputError), bad.value
    assert wh.tables() == []


def test_overwrite_replaces_the_partitions_written_or_the_whole_table(
        spark: SparkSession, wh: Warehouse) -> None:
    t = new_table(wh, buckets=0)
    t.insert(make_rows(range(6), dts=("a", "b", "c")))
    fresh = make_rows([50, 51], dts=("a",))
    writer(to_spark(spark, fresh), wh).mode("overwrite").save(TABLE)  # dynamic, the default
    assert sorted(t.to_arrow(filter="dt = 'a'").column("id").to_pylist()) == [50, 51]
    assert sorted(t.to_arrow(filter="dt <> 'a'").column("id").to_pylist()) == [1, 2, 4, 5]
    writer(to_spark(spark, make_rows([60], dts=("b",))), wh).mode("overwrite") \
        .option("partitionOverwriteMode", "static").save(TABLE)
    assert arrow_rows(t.to_arrow()) == arrow_rows(make_rows([60], dts=("b",)))
    with pytest.raises(Exception) as bad:
        writer(to_spark(spark, fresh), wh).mode("overwrite") \
            .option("partitionOverwriteMode", "all").save(TABLE)
    assert isinstance(typed_error(bad.value), InvalidInputError), bad.value
    # a bucketed table takes AcidTable.insert's shuffle, with the same two modes
    bucketed = new_table(wh, "db.b", buckets=2)
    bucketed.insert(make_rows(range(6), dts=("a", "b", "c")))
    writer(to_spark(spark, fresh), wh).mode("overwrite").save("db.b")
    assert sorted(bucketed.to_arrow().column("id").to_pylist()) == [1, 2, 4, 5, 50, 51]
    writer(to_spark(spark, fresh), wh).mode("overwrite") \
        .option("partitionOverwriteMode", "STATIC").save("db.b")
    assert arrow_rows(bucketed.to_arrow()) == arrow_rows(fresh)


def test_merge_schema_adds_the_new_columns(spark: SparkSession, wh: Warehouse) -> None:
    t = new_table(wh)
    t.insert(make_rows(range(4)))
    wider = make_rows([10, 11]).append_column("score", pa.array([1.5, None]))
    with pytest.raises(Exception) as bad:  # without mergeSchema: a typed error, no write
        writer(to_spark(spark, wider), wh).mode("append").save(TABLE)
    error = typed_error(bad.value)
    assert isinstance(error, SchemaMismatchError) and "mergeSchema" in str(error), bad.value
    assert t.to_arrow().num_rows == 4 and "score" not in t.schema.names
    writer(to_spark(spark, wider), wh).mode("append").option("mergeSchema", "true").save(TABLE)
    t = wh.table(TABLE)
    assert t.schema.names == ["id", "name", "amount", "score", "dt"]
    expected = [(i, f"n{i}", i * 10, None, "ab"[i % 2]) for i in range(4)] + \
        [(10, "n10", 100, 1.5, "a"), (11, "n11", 110, None, "b")]
    assert arrow_rows(t.to_arrow()) == sorted(expected, key=repr)  # embedded
    at = AcidTable.forName(spark, TABLE, warehouse=str(wh.location))
    assert spark_rows(at.toDF()) == sorted(expected, key=repr)  # Spark
    # AcidTable.insert takes it as merge_schema
    widest = wider.append_column("flag", pa.array([True, False]))
    at.insert(to_spark(spark, widest), merge_schema=True)
    assert wh.table(TABLE).to_arrow(filter="flag").column("id").to_pylist() == [10]
