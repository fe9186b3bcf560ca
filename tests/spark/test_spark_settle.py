"""A failed statement's Spark job has no task left running when the failure reaches the
driver's caller (``acidstore.spark.settle``): otherwise a task still writing could put files
into directories the aborting transaction has just removed."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from acidstore.spark.settle import settled_jobs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _job(marker: str) -> object:
    def task(index: int, rows: object) -> object:  # nested: pickled by value for the workers
        if index == 0:
            time.sleep(0.3)
            raise RuntimeError("task 0 fails the job")
        time.sleep(2.0)  # the straggler: still working when the job has failed
        with open(marker, "w", encoding="utf-8") as f:
            f.write("late")
        return iter([index])

    return task


def test_a_failed_job_leaves_no_task_running(spark: SparkSession, tmp_path: Path) -> None:
    marker = str(tmp_path / "late-file")
    rdd = spark.sparkContext.parallelize(range(2), 2)
    with pytest.raises(Exception, match="task 0 fails the job"), \
            settled_jobs(spark, "a failing job"):
        rdd.mapPartitionsWithIndex(_job(marker)).collect()  # type: ignore[arg-type]
    seen = os.path.exists(marker)
    time.sleep(2.5)  # past the straggler's sleep: had it lived on, it would write now
    assert os.path.exists(marker) == seen
    # the job group is the block's own: the caller's properties are back
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None
    assert spark.sparkContext.parallelize([1, 2]).sum() == 3
