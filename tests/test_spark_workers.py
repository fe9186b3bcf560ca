"""acidstore's tasks freeze their Python worker's long-lived objects (``acidstore.spark.workers``)
so that PySpark's full collection after every task skips them; the statements they run
still write what the embedded engine writes."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING

from spark_support import make_rows, new_table

import acidstore
from acidstore.spark import AcidTable
from acidstore.spark.workers import freeze_long_lived

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

START = make_rows(range(30), dts=("a", "b"))


def test_freezes_once_per_process() -> None:
    assert gc.get_freeze_count() == 0, "nothing froze the test process before"
    try:
        freeze_long_lived()
        frozen = gc.get_freeze_count()
        assert frozen > 0
        later = [[n] for n in range(1000)]  # new tracked objects: a second freeze would take them
        freeze_long_lived()
        assert gc.get_freeze_count() == frozen
        del later
    finally:
        gc.unfreeze()


def test_units_task_freezes_its_worker_and_writes_what_embedded_does(
        spark: SparkSession, tmp_path: Path) -> None:
    tables = []
    for name in ("embedded", "spark"):
        wh = acidstore.connect(tmp_path / name)
        table = new_table(wh)
        table.insert(START)
        tables.append(table)
    embedded, on_spark = tables
    embedded.update("id % 4 = 1", {"amount": "amount + 1"})
    AcidTable.forName(spark, on_spark.name, warehouse=str(on_spark.warehouse.location)).update(
        "id % 4 = 1", {"amount": "amount + 1"})

    assert on_spark.to_arrow(with_row_id=True).sort_by("id") == \
        embedded.to_arrow(with_row_id=True).sort_by("id")
    # the session's two task slots: the probe's tasks reuse the workers the units ran in (a
    # lambda, pickled by value: the workers cannot import this test module)
    counts = spark.sparkContext.parallelize([0, 1], 2).map(
        lambda _: __import__("gc").get_freeze_count()).collect()
    assert max(counts) > 0
