"""``spark.sql`` UPDATE, DELETE and MERGE on warehouse tables by name
(``acidstore.spark.sql_dml``): with ``spark.acidstore.warehouse`` set, each statement changes
a table exactly as the same statement through ``AcidTable`` changes its twin (rows and
ROW__IDs), with every MERGE clause kind and a view or a subquery as the source; what is not
DML on a warehouse table is Spark's, and so is everything without the setting."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException, ParseException
from spark_support import WAREHOUSE_CONF, session_warehouse

import acidstore
from acidstore.errors import InvalidInputError, UnsupportedOperationError
from acidstore.spark import AcidTable
from acidstore.spark.spark_text import expression_text
from acidstore.spark.sql_dml import RESULT_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("salary", pa.float64()),
                    ("dt", pa.string())])
ROWS = [(1, "ann", 10.0, "a"), (2, "bob", 20.0, "a"), (3, "o'k", 30.0, "b"),
        (4, "dan", 40.0, "b"), (5, "eve", 50.0, "b")]
SOURCE = [(2, "bob", 200.0, "a"), (3, "cy", 5.0, "b"), (4, "dan", None, "b"),
          (6, "fay", 60.0, "a"), (7, "gus", 70.0, "b")]


@pytest.fixture
def warehouse(spark: SparkSession, tmp_path: Path) -> Iterator[str]:
    """A warehouse with twin tables ``hr.emp`` (changed by SQL) and ``hr.twin`` (changed by
    ``AcidTable``), a temp view ``src`` of the MERGE source, and the session set to it."""
    location = str(tmp_path / "wh")
    with acidstore.connect(location) as wh:
        for name in ("hr.emp", "hr.twin"):
            wh.create_table(name, SCHEMA, partition_by=["dt"]).insert(
                pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in ROWS],
                                     schema=SCHEMA))
    spark.createDataFrame(SOURCE, "id bigint, name string, salary double, dt string"
                          ).createOrReplaceTempView("src")
    with session_warehouse(spark, location):
        try:
            yield location
        finally:
            spark.catalog.dropTempView("src")


def _twin(spark: SparkSession, warehouse: str) -> AcidTable:
    return AcidTable.forName(spark, "hr.twin", warehouse=warehouse)


def _rows(spark: SparkSession, warehouse: str, name: str) -> list[tuple[Any, ...]]:
    """The table's rows with their ROW__IDs, sorted."""
    frame = AcidTable.forName(spark, name, warehouse=warehouse).toDF(with_row_id=True)
    return sorted((tuple(r["row__id"]), *r[:4]) for r in frame.collect())


def _same(spark: SparkSession, warehouse: str) -> list[tuple[Any, ...]]:
    emp, twin = _rows(spark, warehouse, "hr.emp"), _rows(spark, warehouse, "hr.twin")
    assert emp == twin
    return emp


def test_update_and_delete_as_the_helpers(spark: SparkSession, warehouse: str) -> None:
    twin = _twin(spark, warehouse)
    updated = spark.sql("UPDATE hr.emp SET salary = salary * 2 + 1L, name = 'it''s' "
                        "WHERE id = 2 OR name = 'o\\'k'")
    assert updated.schema.simpleString() == spark.createDataFrame(
        [], RESULT_SCHEMA).schema.simpleString()
    assert updated.collect()[0].asDict() == {"num_affected_rows": 2, "num_updated_rows": 2,
                                             "num_deleted_rows": 0, "num_inserted_rows": 0}
    twin.update("id = 2 OR name = 'o''k'", {"salary": "salary * 2 + 1", "name": "'it''s'"})
    rows = _same(spark, warehouse)
    assert sorted(r[1:3] for r in rows if r[2] == "it's") == [(2, "it's"), (3, "it's")]

    deleted = spark.sql("DELETE FROM hr.emp WHERE salary > 45.0 AND dt IN ('b')")
    assert deleted.collect()[0]["num_deleted_rows"] == 2  # ids 3 (now 61.0) and 5
    twin.delete("salary > 45.0 AND dt IN ('b')")
    spark.sql("UPDATE hr.emp SET salary = 0.5D")  # no WHERE: every row
    twin.update("true", {"salary": "CAST(0.5 AS DOUBLE)"})
    assert [r[3] for r in _same(spark, warehouse)] == [0.5] * 3


def test_merge_every_clause_from_a_view(spark: SparkSession, warehouse: str) -> None:
    result = spark.sql("""
        MERGE INTO hr.emp t USING src s ON t.id = s.id
        WHEN MATCHED AND s.salary IS NULL THEN DELETE
        WHEN MATCHED AND s.salary > t.salary THEN UPDATE SET salary = s.salary, t.name = 'up'
        WHEN NOT MATCHED AND s.id = 6 THEN INSERT (id, name, dt) VALUES (s.id, 'new', s.dt)
        WHEN NOT MATCHED THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND t.id = 1 THEN UPDATE SET salary = -1
        WHEN NOT MATCHED BY SOURCE THEN DELETE""")
    (_twin(spark, warehouse).alias("t").merge(spark.table("src").alias("s"), "t.id = s.id")
     .whenMatchedDelete("s.salary IS NULL")
     .whenMatchedUpdate("s.salary > t.salary", {"salary": "s.salary", "name": "'up'"})
     .whenNotMatchedInsert("s.id = 6", {"id": "s.id", "name": "'new'", "dt": "s.dt"})
     .whenNotMatchedInsertAll()
     .whenNotMatchedBySourceUpdate("t.id = 1", {"salary": "-1"})
     .whenNotMatchedBySourceDelete()
     .execute())
    # 2 updated, 4 and 5 deleted, 6 and 7 inserted, 1 updated by source
    assert result.collect()[0].asDict() == {"num_affected_rows": 6, "num_updated_rows": 2,
                                            "num_deleted_rows": 2, "num_inserted_rows": 2}
    rows = [r[1:] for r in _same(spark, warehouse)]
    assert sorted(rows) == [(1, "ann", -1.0, "a"), (2, "up", 200.0, "a"), (3, "o'k", 30.0, "b"),
                            (6, "new", None, "a"), (7, "gus", 70.0, "b")]


def test_merge_from_a_subquery_with_stars(spark: SparkSession, warehouse: str) -> None:
    spark.sql("""
        MERGE INTO hr.emp AS t
        USING (SELECT id, upper(name) AS name, salary * 10 AS salary, dt FROM src
               WHERE salary IS NOT NULL) AS s
        ON t.id = s.id AND t.dt = s.dt
        WHEN MATCHED THEN UPDATE SET *
        WHEN NOT MATCHED THEN INSERT *""")
    source = spark.sql("SELECT id, upper(name) AS name, salary * 10 AS salary, dt FROM src "
                       "WHERE salary IS NOT NULL")
    (_twin(spark, warehouse).alias("t").merge(source.alias("s"), "t.id = s.id AND t.dt = s.dt")
     .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    assert (2, "BOB", 2000.0, "a") in [r[1:] for r in _same(spark, warehouse)]


def test_merge_without_aliases_names_the_tables(spark: SparkSession, warehouse: str) -> None:
    """Unaliased, each side goes by its last name part, as Spark resolves ``emp.id``."""
    result = spark.sql("MERGE INTO HR.Emp USING src ON emp.id = src.id AND src.dt = 'a' "
                       "WHEN MATCHED THEN DELETE")
    assert result.collect()[0]["num_deleted_rows"] == 1
    (_twin(spark, warehouse).alias("t").merge(spark.table("src").alias("s"),
                                              "t.id = s.id AND s.dt = 'a'")
     .whenMatchedDelete().execute())
    assert [r[1] for r in _same(spark, warehouse)] == [1, 3, 4, 5]


def test_other_statements_and_names_stay_sparks(spark: SparkSession, warehouse: str) -> None:
    assert spark.sql("SELECT count(*) AS n FROM src").collect()[0]["n"] == len(SOURCE)
    with pytest.raises(Exception) as on_view:  # a temp view: Spark's own refusal
        spark.sql("DELETE FROM src WHERE id = 2")
    assert type(on_view.value).__module__.startswith(("pyspark", "py4j"))
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("UPDATE hr.nothing SET salary = 1 WHERE id = 1")
    with pytest.raises(ParseException):
        spark.sql("UPDATE hr.emp SET")
    assert _rows(spark, warehouse, "hr.emp") == _rows(spark, warehouse, "hr.twin")


def test_without_the_setting_spark_decides(spark: SparkSession, warehouse: str) -> None:
    spark.conf.unset(WAREHOUSE_CONF)
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("DELETE FROM hr.emp WHERE id = 1")
    assert len(_rows(spark, warehouse, "hr.emp")) == len(ROWS)


def test_unsupported_shapes_are_refused_typed(spark: SparkSession, warehouse: str) -> None:
    with pytest.raises(InvalidInputError, match="dt"):  # the helper's: a partition column
        spark.sql("UPDATE hr.emp SET dt = 'c' WHERE id = 1")
    with pytest.raises(UnsupportedOperationError, match="parameter"):
        spark.sql("UPDATE hr.emp SET salary = ? WHERE id = 1")
    with pytest.raises(UnsupportedOperationError, match="subqueries"):
        spark.sql("DELETE FROM hr.emp WHERE id IN (SELECT id FROM src)")
    with pytest.raises(UnsupportedOperationError, match="args"):
        spark.sql("DELETE FROM hr.emp WHERE id = :id", args={"id": 1})
    with pytest.raises(UnsupportedOperationError, match="alias"):
        spark.sql("DELETE FROM hr.emp e WHERE e.id = 1")
    assert len(_rows(spark, warehouse, "hr.emp")) == len(ROWS)


def test_spark_literals_print_as_duckdb_reads_them(spark: SparkSession) -> None:
    """Spark prints a quote in a string as ``\\'`` and types numbers with suffixes
    (``10L``, ``1.5BD``, ``1000.0D``): the core's text says the same values to DuckDB."""
    import duckdb

    values = ["'it''s'", "'a\\\\b'", "'x\\ny\\t'", '"dq"', "10L", "1.5", "1e3", "7S",
              "DATE '2026-01-02'", "-2", "NULL", "x1L"]
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(
        "UPDATE db.t SET " + ", ".join(f"c{i} = {v}" for i, v in enumerate(values)))
    texts = [expression_text(a.value(), "test")
             for a in (plan.assignments().apply(i) for i in range(len(values)))]
    assert texts[-1] == "x1L"  # a name, not a number
    (got,) = duckdb.connect().execute("SELECT " + ", ".join(texts[:-1])).fetchall()
    assert list(got) == ["it's", "a\\b", "x\ny\t", "dq", 10, Decimal("1.5"), 1000.0, 7,
                         date(2026, 1, 2), -2, None]
