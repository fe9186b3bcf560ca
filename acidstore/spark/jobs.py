"""Running a write statement's tasks on Spark from the driver that owns the transaction.

The DML helpers and ``AcidTable.insert`` hold the transaction in the user's driver process (its
heartbeat thread keeps it alive for as long as the job runs). They describe the change as a
DataFrame, run one ``mapInArrow`` task per partition that writes into staging and returns its
commit message, and collect those: Spark returns exactly one successful attempt per task.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from pyspark.sql.types import IntegerType, StructField, StructType

from acidstore.config import CPU_CORES, SPARK_DML_IN_DRIVER_CONF
from acidstore.engine.executors import pack, spark_tasks
from acidstore.engine.statement import ChangeUnit, UnitOutcome
from acidstore.engine.statement import run_units as run_core_units
from acidstore.engine.task_writes import (
    BUCKET_COLUMN,
    DELETE_COLUMN,
    TaskPlan,
    TaskResult,
    conform_inserted,
    write_task,
)
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import InvalidInputError
from acidstore.spark.packing import SMALL_OPEN_COST_BYTES
from acidstore.spark.typed_errors import reported_errors
from acidstore.write.bucketing import bucket_ids

__all__ = ["IN_DRIVER_ON_LOCAL", "group_buckets", "local_cores", "routed", "run_job", "run_units",
           "unit_bytes", "unit_shares", "units_in_driver"]

_OUTPUT = "output"

#: the session setting that lets a local-mode session run a statement core's units in the
#: driver's Python process ("false" unless set: they stay in Spark tasks)
IN_DRIVER_ON_LOCAL = SPARK_DML_IN_DRIVER_CONF


def _task(plan: TaskPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    freeze_long_lived()
    context = TaskContext.get()
    assert context is not None, "runs inside a Spark task"
    with reported_errors():
        result = write_task(plan, batches, context.partitionId(), context.taskAttemptId())
    yield pa.RecordBatch.from_pydict({_OUTPUT: [pickle.dumps(result)]},
                                     schema=pa.schema([pa.field(_OUTPUT, pa.binary())]))


def run_job(changes: DataFrame, plan: TaskPlan) -> list[TaskResult]:
    """Write ``changes`` (one task per partition: ``engine.task_writes.write_task``) and
    return each task's result: Spark returns one successful attempt per task."""
    rows = changes.mapInArrow(lambda batches: _task(plan, batches), f"{_OUTPUT} binary"
                              ).collect()
    return [pickle.loads(row[_OUTPUT]) for row in rows]


def routed(changes: DataFrame, plan: TaskPlan) -> DataFrame:
    """The rows of a DELETE, UPDATE or MERGE routed by the unit the statement core would give
    them (partition, and the bucket of the target row of a bucketed table; a MERGE's inserts
    by partition), so that every task writes the statement's own ids and no two tasks write
    one file (``engine.task_writes``). All rows of one target row land in one task, where
    the cardinality check sees them."""
    target = plan.target
    parts = [F.col(p) for p in target.partition_schema.names]
    bucketed = bool(target.bucket_by) and target.buckets > 0
    deleting = F.col(DELETE_COLUMN)
    bucket = F.when(deleting.isNull(), F.lit(-1)).otherwise(
        F.shiftright(deleting["bucketid"], 16).bitwiseAND(0xFFF) if bucketed else F.lit(0))
    return changes.repartition(*parts, bucket)


def _with_buckets(plan: TaskPlan, batches: Iterator[pa.RecordBatch]
                  ) -> Iterator[pa.RecordBatch]:
    freeze_long_lived()
    target = plan.target
    for batch in batches:
        with reported_errors():
            rows = conform_inserted(target, pa.Table.from_batches([batch]))
            buckets = bucket_ids(rows, list(target.bucket_by), target.buckets)
        yield batch.append_column(BUCKET_COLUMN, pa.array(np.asarray(buckets, np.int32)))


def group_buckets(data: DataFrame, plan: TaskPlan) -> DataFrame:
    """``data`` shuffled so that each (partition, bucket) is in one task: a ``base_w`` has
    no statement ids, so only one task may write each of its bucket files."""
    schema = StructType([*data.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)])
    tagged = data.mapInArrow(lambda batches: _with_buckets(plan, batches), schema)
    keys = [*plan.target.partition_schema.names, BUCKET_COLUMN]
    return tagged.repartition(max(plan.target.buckets, 1), *keys)


def local_cores(master: str) -> int | None:
    """The task slots of a local-mode master URL (``local``, ``local[4]``, ``local[*]``,
    ``local[2, 3]`` with retries), or None for any other master: a cluster, or
    ``local-cluster[...]``, whose executors are processes of their own."""
    if master == "local":
        return 1
    if not (master.startswith("local[") and master.endswith("]")):
        return None
    slots = master[len("local["):-1].split(",", maxsplit=1)[0].strip()
    if slots == "*":
        return CPU_CORES
    return int(slots) if slots.isdigit() and int(slots) > 0 else None


def units_in_driver(spark: SparkSession) -> int | None:
    """The threads to run a statement's units with in the driver, or None to run them in
    Spark tasks. In local mode the tasks' Python workers run on the driver's machine and
    cores anyway, and a job of two tasks costs about 0.1 s of JVM CPU and 0.25 s of wall time
    to schedule whatever the units do (measured at 1M rows: the 10 UPDATEs of S2 took 5-6.5 s
    of CPU in the JVM and workers, 3.1-3.3 s in the driver's threads), so there the driver
    may run them on as many threads as the session has task slots, as the embedded engine
    does. Opt-in (``spark.acidstore.dml.inDriverOnLocal=true``): by default a statement stays
    a Spark job as on a cluster, visible in the Spark UI and its job groups, its decoded rows
    in the workers, not in the driver's process."""
    setting = (spark.conf.get(IN_DRIVER_ON_LOCAL, "false") or "false").strip().lower()
    if setting not in ("true", "false"):
        raise InvalidInputError(f"{IN_DRIVER_ON_LOCAL}={setting!r}: use 'true' or 'false'")
    if setting == "false":
        return None
    cores = local_cores(spark.sparkContext.master or "")
    return None if cores is None else max(1, min(cores, spark.sparkContext.defaultParallelism))


def _run_share(share: Sequence[ChangeUnit]) -> list[UnitOutcome]:
    """One Spark task's share of a statement's units, sharing one SQL evaluator."""
    return run_core_units(share, threads=1)


def run_units(spark: SparkSession, units: Sequence[ChangeUnit]) -> list[UnitOutcome]:
    """Run a statement core's units in the executors' Python workers, in as many Spark tasks
    as the session has cores, shares of about equal bytes (``unit_bytes``); what comes back
    is each unit's small outcome, in unit order. A local-mode session runs them in the
    driver instead (``units_in_driver``)."""
    if not units:
        return []
    if all(u.kind == "insert" for u in units):
        # a MERGE's WHEN NOT MATCHED rows were computed on the driver: writing them here
        # saves shipping them to a worker and back through Spark (measured: 0.23-0.39 s for
        # 100,000 rows in a task against ~0.1 s here)
        return run_core_units(units)
    threads = units_in_driver(spark)
    if threads is not None:
        return run_core_units(units, threads=threads)
    return spark_tasks(spark, units, _run_share, costs=[unit_bytes(u) for u in units])


def unit_shares(units: Sequence[ChangeUnit], slots: int) -> list[list[int]]:
    """The indexes of ``units`` in at most ``slots`` tasks of about equal bytes
    (``unit_bytes``), each task's in unit order: as ``run_units`` shares them."""
    return pack(list(range(len(units))), [unit_bytes(u) for u in units], slots)


def unit_bytes(unit: ChangeUnit) -> int:
    """What a unit costs to run, in bytes to read (the files it plans and those files' delete
    events, each file also charged the fixed cost of opening it), so that a statement's tasks
    get equal work: partitions differ in size, and shares of equal unit counts left one core
    idle while the other ran the large partition's units."""
    # a RESTORE unit also reads the version it restores
    planned = [*unit.planned, *(unit.restore.planned if unit.restore is not None else ())]
    files = [split.size for _, split in planned] + [
        source.size for _, split in planned for source in split.deletes]
    return sum((size or 0) + SMALL_OPEN_COST_BYTES for size in files)
