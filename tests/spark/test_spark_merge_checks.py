"""Both MERGE front ends make one set of clause checks (``engine.writes.check_merge``): a
zoned source timestamp copied into a column without a zone is refused on Spark as it is
embedded, in each of the ways Spark runs a MERGE (through the statement core, or by
Spark's DataFrames for a Column value), and an unknown column too."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)

import acidstore
from acidstore.errors import InvalidInputError, SchemaMismatchError
from acidstore.spark import AcidTable

TS = dt.datetime(2024, 1, 1, 10)


def test_spark_merge_refuses_what_the_embedded_merge_refuses(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.z", pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))]))
        t.insert(pa.table({"id": [1], "ts": [TS]}))
        at = AcidTable.forName(spark, "db.z", warehouse=str(wh.location)).alias("t")
        zoned = spark.createDataFrame([(1, dt.datetime(2024, 1, 1, 5, tzinfo=dt.UTC)),
                                       (2, dt.datetime(2024, 1, 1, 6, tzinfo=dt.UTC))],
                                      "id bigint, ts timestamp").alias("s")
        runs: list[Callable[[], object]] = [
            lambda: at.merge(zoned, "t.id = s.id").whenNotMatchedInsertAll().execute(),
            lambda: at.merge(zoned, "t.id = s.id")
            .whenMatchedUpdate(set={"ts": "s.ts"}).execute(),
            # a Column condition with no SQL text: Spark's DataFrames run it
            lambda: at.merge(zoned, F.col("t.id") == F.col("s.id") + F.lit(0))
            .whenMatchedUpdateAll().execute()]
        for run in runs:
            with pytest.raises(SchemaMismatchError, match=r"'ts' of table db\.z.*zone"):
                run()
        with pytest.raises(InvalidInputError, match="unknown column"):
            at.merge(zoned, "t.id = s.id").whenNotMatchedInsert(
                values={"id": "s.id", "nope": "s.ts"}).execute()
        assert t.to_arrow().to_pylist() == [{"id": 1, "ts": TS}]
        naive = zoned.select("id", F.col("ts").cast("timestamp_ntz").alias("ts"))
        at.merge(naive.alias("s"), "t.id = s.id").whenMatchedUpdateAll() \
            .whenNotMatchedInsertAll().execute()
        assert t.to_arrow().num_rows == 2
