"""Spark after ``Warehouse.rename_table``: ``AcidTable.forName`` and ``format("acidstore")``
find the table under its new name (with its versions), ``forPath`` at the directory it
kept, and the old name is a ``TableNotFoundError``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import acidstore
from acidstore.errors import TableNotFoundError
from acidstore.spark import AcidTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_spark_finds_a_renamed_table_by_its_new_name_only(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    with acidstore.connect(warehouse) as wh:
        t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string()),
                                                ("dt", pa.string())]),
                            partition_by=["dt"], bucket_by=["id"], buckets=2)
        t.insert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"]}))
        t.delete("id = 2")
        location = wh.rename_table("db.t", "db2.u").location

    with pytest.raises(TableNotFoundError, match=r"db\.t"):
        AcidTable.forName(spark, "db.t", warehouse=warehouse)
    u = AcidTable.forName(spark, "db2.u", warehouse=warehouse)
    assert sorted(tuple(r) for r in u.toDF().collect()) == [(1, "a", "x"), (3, "c", "y")]
    assert u.toDF(as_of=1).count() == 3
    u.update("id = 3", {"v": "'C'"})
    loaded = spark.read.format("acidstore").option("warehouse", warehouse).load("db2.u")
    assert sorted(tuple(r) for r in loaded.collect()) == [(1, "a", "x"), (3, "C", "y")]
    by_path = AcidTable.forPath(spark, location)
    assert by_path.toDF().count() == 2
    with acidstore.connect(warehouse) as wh:
        assert [h["operation"] for h in wh.table("db2.u").history().to_pylist()] == [
            "insert", "delete", "update"]
