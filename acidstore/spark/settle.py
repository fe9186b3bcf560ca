"""A failed statement's Spark jobs end before its transaction aborts.

When one task fails a job, Spark reports the failure to the driver at once, while the job's
other tasks may still be running: their Python workers go on writing bucket files until Spark
kills them. The statement core's units write straight into the transaction's registered
directories, so a worker still writing when the driver aborts the transaction (which removes
those directories) would leave files that no record lists. Readers refuse such a directory
(``StrayPathError``) rather than read it, but nothing should leave one: the driver runs a
statement's jobs in a job group of its own and, if the statement fails, waits until no task of
the group runs any more (and Spark's grace period for killing a Python worker has passed)
before the failure propagates to the transaction. That is best effort, bounded by
``WAIT_SECONDS``: the reader's check is what guarantees no such file is ever read as rows.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkContext
from pyspark.sql import SparkSession

__all__ = ["settled_jobs"]

_PROPERTIES = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
#: how long to wait for a failed job's tasks (beyond it the failure propagates anyway)
WAIT_SECONDS = 120.0
#: after the last task ended, for its Python worker to be gone too
GRACE_SECONDS = 0.25


@contextmanager
def settled_jobs(spark: SparkSession, what: str) -> Iterator[None]:
    """Run the block's Spark jobs in a job group of their own; if the block raises, cancel
    the group and wait for its running tasks to end before re-raising."""
    context = spark.sparkContext
    previous = {key: context.getLocalProperty(key) for key in _PROPERTIES}
    group = f"acidstore-{uuid.uuid4().hex}"
    context.setJobGroup(group, what, interruptOnCancel=True)
    try:
        yield
    except BaseException:
        context.cancelJobGroup(group)
        _wait_for_tasks(context, group)
        raise
    finally:
        for key, value in previous.items():  # None clears a property
            context.setLocalProperty(key, value)  # type: ignore[arg-type]


def _running_tasks(context: SparkContext, group: str) -> int:
    tracker = context.statusTracker()
    running = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else ():
            stage_info = tracker.getStageInfo(stage)
            running += stage_info.numActiveTasks if stage_info is not None else 0
    return running


def _wait_for_tasks(context: SparkContext, group: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while _running_tasks(context, group) and time.monotonic() < deadline:
        time.sleep(0.05)
    # a task counts as ended once its JVM thread has; Spark then kills its Python worker,
    # which takes a moment more
    time.sleep(GRACE_SECONDS)
