"""The cluster test's second Spark application: DML and a Spark compaction on a cluster.

    python tests/support/cluster_workers.py MASTER WAREHOUSE METASTORE

Run as a process of its own (tests/system/test_cluster.py), because a SparkContext on a standalone
master cannot live beside the test suite's shared local session. It works on the table the
demo left (``shop.orders``): first a probe, a task per executor that tries to open the
metastore and must be refused (so the guard is live in the executors' Python workers, which
import this source tree), then UPDATE, DELETE and MERGE through ``AcidTable``, a major
compaction with ``engine="spark"``, and a Spark read of the result. It prints one JSON object
with what each step reported; the test checks the rows in the metastore and the files.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _probe(warehouse: str, metastore: str) -> str:
    """Inside a task: try to open the metastore (the guard must refuse)."""
    import acidstore
    from acidstore.errors import MetastoreInTaskError

    try:
        acidstore.connect(warehouse, metastore=metastore, create=False).close()
    except MetastoreInTaskError:
        return "refused"
    return "opened"


def main(master: str, warehouse: str, metastore: str) -> dict[str, Any]:
    import acidstore
    from acidstore.cli.demo import spark_session
    from acidstore.spark import AcidTable
    from compaction import compact

    report: dict[str, Any] = {}
    started = time.monotonic()
    with spark_session(master) as spark:
        report["master"] = spark.sparkContext.master
        report["probe"] = spark.sparkContext.parallelize(range(2), 2).map(
            lambda _: _probe(warehouse, metastore)).collect()
        orders = AcidTable.forName(spark, "shop.orders", warehouse=warehouse,
                                   metastore=metastore)
        updated = orders.update("dt = '2026-11-21' AND order_id % 3 = 0",
                                {"status": "'packed'"})
        deleted = orders.delete("amount < 20")
        source = spark.createDataFrame(
            [(100001, "c9001", 1.5, "paid", "2026-11-20"),
             (100002, "c9002", 2.5, "paid", "2026-11-20"),
             (999999, "c9999", 42.0, "placed", "2026-11-24")],
            "order_id bigint, customer string, amount double, status string, dt string")
        merged = (orders.alias("t").merge(source.alias("s"), "t.order_id = s.order_id")
                  .whenMatchedUpdate(set={"amount": "s.amount", "status": "s.status"})
                  .whenNotMatchedInsertAll()
                  .execute())
        report["write_ids"] = [updated.write_id, deleted.write_id, merged.write_id]
        report["counts"] = [updated.rows_updated, deleted.rows_deleted]
        report["merge"] = merged.metrics
        with acidstore.connect(warehouse, metastore=metastore, create=False) as wh:
            done = compact(wh.table("shop.orders"), "major", engine="spark", spark=spark)
        report["compaction_txn"] = done.txn_id
        report["compacted_partitions"] = sorted(
            p.partition for p in done.partitions if p.outputs)
        rows = orders.toDF().collect()
        report["spark_rows"] = len(rows)
        report["spark_amount_cents"] = sum(round(r["amount"] * 100) for r in rows)
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4]), default=str), flush=True)
    sys.stdout.flush()
    os._exit(0)  # Spark's py4j threads can keep an interpreter alive after the session stops
