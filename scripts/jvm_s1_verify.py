"""Spike (issue 11): the JVM reader's rows against ``Table.to_arrow()`` on an S1 state.

Usage: PYTHONPATH=. python scripts/jvm_s1_verify.py WAREHOUSE (jar built by jvm/build.sh).
Compares every column and ROW__ID, sorted by ROW__ID, plus a count() and a projection.
``JVM_OPTIONS=-Duser.timezone=...`` runs the JVM in another zone (timestamps must not move);
``IGNORE_DELETES=1`` plans no delete keys, which must make the comparison fail.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

import acidstore
from acidstore.spark import AcidTable
from acidstore.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jvm_plan import jvm_frame

JAR = str(Path(__file__).resolve().parents[1] / "jvm" / "build" / "acidstore-jvm.jar")


def main(warehouse: str) -> None:
    spark = (SparkSession.builder.master("local[2]").config("spark.jars", JAR)
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g")
             .config("spark.driver.extraJavaOptions", os.environ.get("JVM_OPTIONS", ""))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with acidstore.connect(warehouse) as wh:
        table = wh.table("bench.t")
        if os.environ.get("AGGREGATES_ONLY") == "1":
            _aggregates(spark, table, warehouse)
            return
        expected = table.scan(with_row_id=True).to_table()
        ignore = os.environ.get("IGNORE_DELETES") == "1"
        df = jvm_frame(spark, table, "/tmp/jvm-verify.plan", tasks=2, with_row_id=True,
                       ignore_deletes=ignore)
        got = df.toArrow()
        keys = [("row__id.writeid", "ascending"), ("row__id.bucketid", "ascending"),
                ("row__id.rowid", "ascending")]

        def flat(t: pa.Table) -> pa.Table:
            rid = t.column("row__id").combine_chunks()
            t = t.drop_columns(["row__id"])
            for name in ("writeid", "bucketid", "rowid"):
                t = t.append_column(f"row__id.{name}", rid.field(name))
            return t.sort_by(keys)

        e, g = flat(expected), flat(got.cast(expected.schema))
        print("rows", e.num_rows, g.num_rows)
        assert e.num_rows == g.num_rows, (e.num_rows, g.num_rows)
        for name in e.column_names:
            same = e.column(name).equals(g.column(name))
            print(name, "equal" if same else "DIFFERENT")
            assert same, name
        plain = jvm_frame(spark, table, "/tmp/jvm-verify2.plan", tasks=2)
        assert plain.count() == e.num_rows
        proj = plain.select("id", "v1").toArrow().sort_by("id")
        want = e.select(["id", "v1"]).sort_by("id")
        assert proj.equals(want.cast(proj.schema)), "projection differs"
        total = pc.sum(e.column("id")).as_py()
        assert plain.selectExpr("sum(id)").collect()[0][0] == total
        print("count, projection and sum(id) equal")


def _aggregates(spark: SparkSession, table: Table, warehouse: str) -> None:
    """Per-column checksums (10M rows do not fit a 2g driver as one Arrow table)."""
    sums = ["count(*)", "sum(id)", "sum(k)", "sum(hash(v1))", "sum(hash(v2))", "sum(c)",
            "sum(length(s))", "sum(hash(s))",
            "sum(cast(unix_micros(cast(ts as timestamp)) as decimal(38, 0)))",
            "sum(row__id.writeid)", "sum(row__id.bucketid)", "sum(row__id.rowid)"]
    plan = "/tmp/jvm-verify3.plan"
    got = list(jvm_frame(spark, table, plan, tasks=2, with_row_id=True)
               .selectExpr(*sums).collect()[0])
    python_path = AcidTable.forName(spark, "bench.t", warehouse=warehouse)
    want = list(python_path.toDF(with_row_id=True).selectExpr(*sums).collect()[0])
    for name, a, b in zip(sums, got, want, strict=True):
        print(name, a, b, "equal" if a == b else "DIFFERENT")
    assert got == want
    # without row__id the reader places deletes by stripe statistics, not decoded keys
    plain = sums[:-3]
    got = list(jvm_frame(spark, table, plan, tasks=2).selectExpr(*plain).collect()[0])
    assert got == want[:-3], (got, want[:-3])
    print("the same without row__id")


if __name__ == "__main__":
    main(sys.argv[1])
