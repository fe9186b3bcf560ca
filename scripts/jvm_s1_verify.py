"""Spike (issue 11): the JVM reader's rows against ``Table.to_arrow()`` on an S1 state.

Usage: PYTHONPATH=. python scripts/jvm_s1_verify.py WAREHOUSE (jar built by jvm/build.sh).
Compares every column and ROW__ID, sorted by ROW__ID, plus a count() and a projection.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

import acidstore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jvm_plan import jvm_frame

JAR = str(Path(__file__).resolve().parents[1] / "jvm" / "build" / "acidstore-jvm.jar")


def main(warehouse: str) -> None:
    spark = (SparkSession.builder.master("local[2]").config("spark.jars", JAR)
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    with acidstore.connect(warehouse) as wh:
        table = wh.table("bench.t")
        expected = table.scan(with_row_id=True).to_table()
        df = jvm_frame(spark, table, "/tmp/jvm-verify.plan", tasks=2, with_row_id=True)
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


if __name__ == "__main__":
    main(sys.argv[1])
