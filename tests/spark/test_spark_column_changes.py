"""Renamed and dropped columns read on Spark exactly as the embedded reader reads them.

Old files keep the old names and the dropped columns' values in their ``row`` structs; the
Spark read paths map them by position under the table's file schema: acidstore's Java reader
(``toDF()``'s default) and the Python data source (``spark.read.format("acidstore")``). Spark's
own ORC reader (``spark.acidstore.nativeRead``) matches row fields by name, so such a table
asked to read on it reads on the others instead, with the same rows. A column re-added under
a dropped name reads NULL for the rows written before, and Spark's DML writes NULL into the
dropped places.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from spark_support import arrow_rows, reads_natively, reads_on_jvm, spark_rows

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.spark import AcidTable
from acidstore.spark.jvm_read import JVM_READ_CONF
from acidstore.spark.native import NATIVE_READ_CONF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64()),
                    ("c", pa.float64()), ("dt", pa.string())])


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Table]:
    """Inserted, then ``a`` renamed to ``name``, ``b`` dropped, more rows, ``b`` re-added as a
    string, more rows and an update."""
    with acidstore.connect(tmp_path_factory.mktemp("columns") / "wh") as wh:
        t = wh.create_table("db.cols", SCHEMA, partition_by=["dt"])
        t.insert(pa.Table.from_pylist([{"id": i, "a": f"a{i}", "b": i * 10, "c": i / 4,
                                        "dt": "x" if i % 2 else "y"} for i in range(8)],
                                      schema=SCHEMA))
        t.rename_column("a", "name")
        t.drop_columns(["b"])
        t.insert(pa.table({"id": [8, 9], "name": ["a8", "a9"], "c": [2.0, 2.25],
                           "dt": ["x", "y"]}))
        t.add_columns(pa.schema([("b", pa.string())]))
        t.insert(pa.table({"id": [10], "name": ["a10"], "c": [2.5], "dt": ["x"], "b": ["ten"]}))
        t.update("id = 3", new_values={"b": "three"})
        yield t


def _frame(spark: SparkSession, t: Table, path: str) -> DataFrame:
    location = str(handle_of(t).core.location)
    if path == "python":
        return spark.read.format("acidstore").option("warehouse", location).load(t.name)
    return AcidTable.forName(spark, t.name, warehouse=location).toDF()


@pytest.mark.parametrize("path", ["jvm", "native", "python"])
def test_every_spark_read_path_agrees_with_the_embedded_reader(
        spark: SparkSession, table: Table, path: str) -> None:
    expected = arrow_rows(table.to_arrow())
    assert table.schema.names == ["id", "name", "c", "b", "dt"]
    assert {r["id"]: r["b"] for r in table.to_arrow().to_pylist()} == {
        **{i: None for i in range(10)}, 3: "three", 10: "ten"}
    spark.conf.set(JVM_READ_CONF, "true" if path == "jvm" else "false")
    spark.conf.set(NATIVE_READ_CONF, "true" if path == "native" else "false")
    try:
        df = _frame(spark, table, path)
        assert df.columns == ["id", "name", "c", "b", "dt"]
        if path == "jvm":
            assert reads_on_jvm(df)
        if path == "native":
            # Spark's ORC reader matches row fields by name: asked for, it is not used here
            assert not reads_natively(df)
        assert spark_rows(df) == expected
        assert spark_rows(df.select("id", "b").where("b is not null")) == [(10, "ten"),
                                                                             (3, "three")]
        assert spark_rows(df.select("name").where("id = 5")) == [("a5",)]
    finally:
        spark.conf.unset(JVM_READ_CONF)
        spark.conf.unset(NATIVE_READ_CONF)


def test_spark_dml_after_a_drop_keeps_every_value(spark: SparkSession,
                                                  tmp_path_factory: pytest.TempPathFactory
                                                  ) -> None:
    with acidstore.connect(tmp_path_factory.mktemp("columns-dml") / "wh") as wh:
        t = wh.create_table("db.dml", SCHEMA, partition_by=["dt"])
        t.insert(pa.Table.from_pylist([{"id": i, "a": f"a{i}", "b": i, "c": float(i),
                                        "dt": "x"} for i in range(4)], schema=SCHEMA))
        t.drop_columns(["a"])
        at = AcidTable.forName(spark, t.name, warehouse=str(handle_of(t).core.location))
        at.update("id = 1", {"c": "c + 100"})
        at.delete("id = 2")
        source = spark.createDataFrame([(3, 33, 3.5, "x"), (7, 77, 7.5, "x")],
                                       "id long, b long, c double, dt string")
        (at.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll()
         .whenNotMatchedInsertAll().execute())
        expected = [(0, 0, 0.0, "x"), (1, 1, 101.0, "x"), (3, 33, 3.5, "x"), (7, 77, 7.5, "x")]
        assert arrow_rows(t.to_arrow()) == expected
        assert spark_rows(at.toDF()) == expected
        t.add_columns(pa.schema([("a", pa.string())]))  # re-added: NULL, never "a1"
        assert [r["a"] for r in t.to_arrow().to_pylist()] == [None] * 4
        assert spark_rows(at.toDF().select("a")) == [(None,)] * 4
