"""A local-mode session runs the statement core's units in the driver (``units_in_driver``):
the same statements must write the same rows, ROW__IDs and files as the units run in Spark
tasks, and only the task path may start a Spark job.

The session fixture turns the driver path off (``spark.acidstore.dml.inDriverOnLocal=false``)
so every other Spark test keeps exercising the tasks; here each statement runs on two copies
of one table, once each way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from spark_support import make_rows, new_table, table_files, to_spark

import acidstore
from acidstore import Table
from acidstore.errors import InvalidInputError
from acidstore.spark import AcidTable
from acidstore.spark.conf import temporary_conf
from acidstore.spark.jobs import IN_DRIVER_ON_LOCAL, local_cores, units_in_driver

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

START = make_rows(range(40), dts=("a", "b", "c"))
GROUP = "acidstore-units-in-driver"


def setting(spark: SparkSession, value: str) -> AbstractContextManager[None]:
    return temporary_conf(spark, IN_DRIVER_ON_LOCAL, value)


def with_row_ids(table: Table) -> list[dict[str, Any]]:
    """Every visible row with its ROW__ID, in ROW__ID order."""
    rows: list[dict[str, Any]] = table.to_arrow(with_row_id=True).to_pylist()
    return sorted(rows, key=lambda r: (r["row__id"]["writeid"], r["row__id"]["bucketid"],
                                       r["row__id"]["rowid"], repr(r)))


def last_job_id(spark: SparkSession, marker: str) -> int:
    """The id of a one-task marker job run now (Spark numbers jobs in order, so the jobs a
    statement started are those between two markers)."""
    context = spark.sparkContext
    context.setJobGroup(marker, "marker")
    try:
        context.parallelize([0], 1).count()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return max(context.statusTracker().getJobIdsForGroup(marker))


def run_both(spark: SparkSession, tmp_path: Path,
             statement: Callable[[AcidTable], object]) -> tuple[Table, Table, int, int]:
    """``statement`` on two copies of START: in the driver, then in Spark tasks; the two
    tables and the number of Spark jobs each way started."""
    tables, jobs = [], []
    for name, value in (("driver", "true"), ("tasks", "false")):
        wh = acidstore.connect(tmp_path / name)
        table = new_table(wh)
        table.insert(START)
        at = AcidTable.forName(spark, table.name, warehouse=str(wh.location))
        marker = f"{GROUP}-{tmp_path.name}-{name}"
        before = last_job_id(spark, f"{marker}-before")
        with setting(spark, value):
            statement(at)
        jobs.append(last_job_id(spark, f"{marker}-after") - before - 1)
        tables.append(table)
    return tables[0], tables[1], jobs[0], jobs[1]


def source(spark: SparkSession) -> Any:
    """Ids 30..49: ten match START's rows (updated), ten are new (inserted)."""
    return to_spark(spark, make_rows(range(30, 50), name="s", dts=("a", "b", "c"))).alias("s")


STATEMENTS: dict[str, Callable[[AcidTable], object]] = {
    "update": lambda at: [at.update(f"id % 7 = {r}", {"amount": "amount + 1"})
                          for r in range(3)],
    "delete": lambda at: at.delete("id % 3 = 1"),
    "merge": lambda at: (at.alias("t").merge(source(at._spark), "t.id = s.id")
                         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()),
}


@pytest.mark.parametrize("kind", sorted(STATEMENTS))
def test_driver_units_write_what_task_units_write(spark: SparkSession, tmp_path: Path,
                                                  kind: str) -> None:
    in_driver, in_tasks, driver_jobs, task_jobs = run_both(spark, tmp_path, STATEMENTS[kind])
    assert with_row_ids(in_driver) == with_row_ids(in_tasks)
    assert in_driver.history().num_rows == in_tasks.history().num_rows > 1
    assert table_files(in_driver) == table_files(in_tasks)
    assert task_jobs >= 1
    if kind != "merge":  # a MERGE's source is a DataFrame: collecting it is a job either way
        assert driver_jobs == 0


def test_units_stay_in_tasks_when_switched_off_or_not_local(spark: SparkSession) -> None:
    with setting(spark, "true"):
        assert units_in_driver(spark) == 2  # the fixture's local[2]
    with setting(spark, "false"):
        assert units_in_driver(spark) is None
    with setting(spark, "sometimes"), pytest.raises(InvalidInputError, match=IN_DRIVER_ON_LOCAL):
        units_in_driver(spark)


def test_units_stay_in_tasks_unless_asked(spark: SparkSession) -> None:
    """Opt-in: a statement stays a Spark job unless the session says otherwise."""
    before = spark.conf.get(IN_DRIVER_ON_LOCAL, None)
    spark.conf.unset(IN_DRIVER_ON_LOCAL)
    try:
        assert units_in_driver(spark) is None
    finally:
        if before is not None:
            spark.conf.set(IN_DRIVER_ON_LOCAL, before)


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[3]", 3), ("local[2, 4]", 2), ("local-cluster[2, 1, 1024]", None),
    ("spark://host:7077", None), ("yarn", None), ("local[0]", None), ("local[x]", None)])
def test_local_cores_of_a_master_url(master: str, cores: int | None) -> None:
    assert local_cores(master) == cores


def test_local_star_is_every_core() -> None:
    assert local_cores("local[*]") == (os.cpu_count() or 1)
