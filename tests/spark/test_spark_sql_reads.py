"""Warehouse tables by name in ``spark.sql`` reads, ``spark.table`` and INSERT
(``acidstore.spark.sql_reads``, ``acidstore.spark.sql_insert``): with
``spark.acidstore.warehouse`` set, ``SELECT ... FROM hr.emp`` (time travel included) returns
what the embedded reader returns at the same snapshot, and ``INSERT`` leaves the table as
``AcidTable.insert`` of the same rows leaves a twin."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from spark_support import WAREHOUSE_CONF, session_warehouse

import acidstore
from acidstore.errors import (
    InvalidInputError,
    SchemaMismatchError,
    UnsupportedOperationError,
    WarehouseNotFoundError,
)
from acidstore.spark import AcidTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])
FIRST = [(1, "ann", "a"), (2, "bob", "a"), (3, "cy", "b")]


def _arrow(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows],
                                schema=SCHEMA)


@pytest.fixture
def warehouse(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """``hr.emp`` and its twin ``hr.twin`` (both: write 1 inserts FIRST, write 2 deletes id
    2, write 3 inserts id 4), ``hr.dept``, and the session set to the warehouse."""
    location = str(tmp_path / "wh")
    with acidstore.connect(location) as wh:
        for name in ("hr.emp", "hr.twin"):
            table = wh.create_table(name, SCHEMA, partition_by=["dt"])
            table.insert(_arrow(FIRST))
            table.delete("id = 2")
            table.insert(_arrow([(4, "dan", "b")]))
        wh.create_table("hr.dept", pa.schema([("dt", pa.string()), ("title", pa.string())])
                        ).insert(pa.table({"dt": ["a", "b"], "title": ["A", "B"]}))
    with session_warehouse(spark, location, "spark.sql.sources.partitionOverwriteMode"):
        yield location


def _embedded(warehouse: str, name: str, as_of: int | datetime | None = None
              ) -> list[tuple[Any, ...]]:
    with acidstore.connect(warehouse) as wh:
        rows = wh.table(name).to_arrow(as_of=as_of).to_pylist()
    return sorted(tuple(r.values()) for r in rows)


def _sorted(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.collect())


def _views(spark: SparkSession) -> list[str]:
    return [t.name for t in spark.catalog.listTables() if t.name.startswith("__acidstore")]


def test_select_by_name_equals_the_embedded_read(spark: SparkSession, warehouse: str) -> None:
    assert _sorted(spark.sql("SELECT * FROM hr.emp")) == _embedded(warehouse, "hr.emp")
    # unaliased, the table goes by its name; joins, CTEs and subqueries route every read
    joined = spark.sql("""
        WITH recent AS (SELECT * FROM HR.Emp WHERE emp.id > 1)
        SELECT recent.id, d.title FROM recent JOIN hr.dept d ON recent.dt = d.dt
        WHERE recent.id IN (SELECT id FROM hr.twin)""")
    assert _sorted(joined) == [(3, "B"), (4, "B")]
    assert _views(spark) == []  # the statement's views are gone once Spark analyzed it
    assert _sorted(spark.table("hr.emp")) == _embedded(warehouse, "hr.emp")
    assert spark.read.table("`hr`.`emp`").count() == 3


def test_time_travel_by_version_and_timestamp(spark: SparkSession, warehouse: str) -> None:
    for version in (1, 2, 3):
        assert _sorted(spark.sql(f"SELECT * FROM hr.emp VERSION AS OF {version} e")) == \
            _embedded(warehouse, "hr.emp", as_of=version)
    assert spark.read.option("versionAsOf", 1).table("hr.emp").count() == 3
    # TIMESTAMP AS OF: evaluated by Spark (session time zone UTC), the snapshot then
    between = datetime.now(UTC)
    time.sleep(0.05)
    with acidstore.connect(warehouse) as wh:
        wh.table("hr.emp").insert(_arrow([(9, "late", "a")]))
    stamp = between.strftime("%Y-%m-%d %H:%M:%S.%f")
    at = spark.sql(f"SELECT * FROM hr.emp TIMESTAMP AS OF '{stamp}'")
    assert _sorted(at) == _embedded(warehouse, "hr.emp", as_of=between)
    assert 9 not in [r[0] for r in _sorted(at)]
    assert 9 in [r[0] for r in _sorted(spark.sql(
        "SELECT * FROM hr.emp TIMESTAMP AS OF current_timestamp() + INTERVAL 1 SECOND"))]
    with pytest.raises(InvalidInputError, match="VERSION AS OF"):
        spark.sql("SELECT * FROM hr.emp VERSION AS OF 'first'")


def test_text_positions_parameters_and_format_arguments(spark: SparkSession,
                                                         warehouse: str) -> None:
    """Text after a character outside the BMP still routes right (positions are code points);
    parameter markers and ``{frame}`` arguments keep working around routed reads."""
    rows = spark.sql("SELECT '\U0001f600' AS e, id FROM hr.emp WHERE name <> '\U0001f600'")
    assert sorted(r.id for r in rows.collect()) == [1, 3, 4]
    marked = spark.sql("SELECT name FROM hr.emp WHERE id = :id", args={"id": 3})
    assert marked.collect()[0].name == "cy"
    formatted = spark.sql("SELECT count(*) AS n FROM {f} JOIN hr.emp USING (id)",
                          f=spark.range(0, 5))
    assert formatted.collect()[0].n == 3


def test_views_that_keep_their_text_keep_their_reads(spark: SparkSession,
                                                      warehouse: str) -> None:
    spark.sql("CREATE OR REPLACE TEMP VIEW emp_v AS SELECT id FROM hr.emp")
    try:
        assert sorted(r.id for r in spark.table("emp_v").collect()) == [1, 3, 4]
    finally:
        spark.catalog.dropTempView("emp_v")


def test_names_outside_the_warehouse_stay_sparks(spark: SparkSession, warehouse: str) -> None:
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM hr.nothing")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.table("hr.nothing")
    spark.conf.set(WAREHOUSE_CONF, warehouse + "-misspelled")
    with pytest.raises(WarehouseNotFoundError, match=WAREHOUSE_CONF):
        spark.sql("SELECT * FROM hr.emp")
    assert spark.sql("SELECT 1 AS one").collect()[0].one == 1  # no table named: no lookup
    spark.conf.unset(WAREHOUSE_CONF)
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM hr.emp")


def _twin(spark: SparkSession, warehouse: str) -> AcidTable:
    return AcidTable.forName(spark, "hr.twin", warehouse=warehouse)


def _same(spark: SparkSession, warehouse: str) -> list[tuple[Any, ...]]:
    emp, twin = _embedded(warehouse, "hr.emp"), _embedded(warehouse, "hr.twin")
    assert emp == twin
    return emp


def test_insert_by_position_column_list_and_name(spark: SparkSession, warehouse: str) -> None:
    twin = _twin(spark, warehouse)
    result = spark.sql("INSERT INTO hr.emp VALUES (5, 'eve', 'a'), (6, 'fay', 'c')")
    assert result.collect()[0]["num_inserted_rows"] == 2
    twin.insert(spark.createDataFrame([(5, "eve", "a"), (6, "fay", "c")],
                                      "id bigint, name string, dt string"))
    # a column list: name is left out (NULL); the query reads the table it writes
    spark.sql("INSERT INTO hr.emp (dt, id) SELECT dt, id + 10 FROM hr.emp WHERE id < 3")
    twin.insert(spark.createDataFrame([("a", 11)], "dt string, id bigint"))
    spark.sql("INSERT INTO hr.emp BY NAME SELECT 'b' AS DT, 20 AS id, 'x' AS name")
    twin.insert(spark.createDataFrame([(20, "x", "b")], "id bigint, name string, dt string"))
    spark.sql("INSERT INTO hr.emp PARTITION (dt = 'z') SELECT 30, 'zed'")
    twin.insert(spark.createDataFrame([(30, "zed", "z")], "id bigint, name string, dt string"))
    assert (11, None, "a") in _same(spark, warehouse)
    with pytest.raises(SchemaMismatchError, match="by position"):
        spark.sql("INSERT INTO hr.emp VALUES (7, 'gus')")
    with pytest.raises(SchemaMismatchError, match="nope"):
        spark.sql("INSERT INTO hr.emp BY NAME SELECT 7 AS id, 'a' AS dt, 1 AS nope")
    _same(spark, warehouse)


def test_insert_overwrite_follows_the_overwrite_mode(spark: SparkSession,
                                                     warehouse: str) -> None:
    # static (Spark's default), one partition fixed: that partition only
    spark.sql("INSERT OVERWRITE hr.emp PARTITION (dt = 'a') SELECT 40, 'new'")
    assert _embedded(warehouse, "hr.emp") == [(3, "cy", "b"), (4, "dan", "b"), (40, "new", "a")]
    # ... emptied when the query returns nothing, as Spark empties it
    spark.sql("INSERT OVERWRITE hr.emp PARTITION (dt = 'a') SELECT 41, 'no' WHERE false")
    assert _embedded(warehouse, "hr.emp") == [(3, "cy", "b"), (4, "dan", "b")]
    # dynamic: the partitions the rows fall in
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    spark.sql("INSERT OVERWRITE hr.emp VALUES (50, 'c1', 'c')")
    assert _embedded(warehouse, "hr.emp") == [(3, "cy", "b"), (4, "dan", "b"),
                                              (50, "c1", "c")]
    # static without PARTITION: the whole table
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "static")
    spark.sql("INSERT OVERWRITE TABLE hr.emp SELECT id, name, 'd' FROM hr.twin")
    assert [r[2] for r in _embedded(warehouse, "hr.emp")] == ["d"] * 3
    with pytest.raises(UnsupportedOperationError, match="REPLACE"):
        spark.sql("INSERT INTO hr.emp REPLACE WHERE id = 1 SELECT 1, 'x', 'a'")
    history = AcidTable.forName(spark, "hr.emp", warehouse=warehouse).history().collect()
    assert [r.operation for r in history][-5:] == ["insert_overwrite"] * 2 + ["delete"] + [
        "insert_overwrite"] * 2


def test_static_overwrite_of_part_of_a_partition_is_refused(spark: SparkSession,
                                                           warehouse: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("y", pa.string()), ("m", pa.string())])
    with acidstore.connect(warehouse) as wh:
        wh.create_table("hr.two", schema, partition_by=["y", "m"]).insert(
            pa.table({"id": [1, 2], "y": ["2026", "2026"], "m": ["1", "2"]}, schema=schema))
    with pytest.raises(UnsupportedOperationError, match="partitionOverwriteMode"):
        spark.sql("INSERT OVERWRITE hr.two PARTITION (y = '2026', m) SELECT 3, '1'")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    spark.sql("INSERT OVERWRITE hr.two PARTITION (y = '2026', m) SELECT 3, '1'")
    assert _embedded(warehouse, "hr.two") == [(2, "2026", "2"), (3, "2026", "1")]
