"""Executors never open the metastore: the guard every metastore connection passes.

Only the Spark driver talks to the metastore. A read's snapshot, a write's write id and
statement ids, a DML unit's files: the driver plans them and ships them to the tasks as values
(``spark/read_tasks.py``, ``engine/task_writes.py``, the statement core's units), so a task
needs the filesystem only. On a cluster that matters twice: an executor often cannot reach the
metastore at all (a SQLite file on the driver's disk, a PostgreSQL server behind the driver's
network), and one that can would open a connection per task (thousands per job) on a server
sized for a handful of clients. So instead of trusting every code path to stay off the
metastore, both backends refuse to open a connection inside a Spark task
(``MetastoreInTaskError``).

Two sanctioned exceptions go through ``permit_in_task``, both bookkeeping that only a task
can do and both skipped where the executor cannot reach the metastore: the heartbeat of a
``df.write`` transaction, which has no long-lived driver process to keep it alive
(``spark/options.py``), and a read task's snapshot lease, released when the task has read
its files (Spark tells no driver-side code that a data source's read is over;
``spark/leases.py``). Neither plans, allocates or commits anything.

A Python worker runs a task when ``pyspark.TaskContext.get()`` is set; the driver-side
workers that plan a data source's reads and commit its writes have none. PySpark is looked up
in ``sys.modules`` rather than imported: a process that never imported it runs no Spark task,
and the embedded engine must not pay for importing it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from acidstore.errors import MetastoreInTaskError

__all__ = ["in_spark_task", "permit_in_task", "refuse_in_spark_task"]

#: why the code running now may open a metastore inside a task (None: it may not)
_PERMITTED: ContextVar[str | None] = ContextVar("acidstore_metastore_in_task", default=None)


def in_spark_task() -> bool:
    """Whether this thread runs a Spark task (an executor's Python worker)."""
    pyspark = sys.modules.get("pyspark")
    if pyspark is None:
        return False
    from pyspark import TaskContext

    return TaskContext.get() is not None


def refuse_in_spark_task(where: str) -> None:
    """Raise ``MetastoreInTaskError`` if a Spark task is about to connect to ``where``."""
    if _PERMITTED.get() is not None or not in_spark_task():
        return
    from pyspark import TaskContext

    context = TaskContext.get()
    task = "" if context is None else (
        f" (stage {context.stageId()}, partition {context.partitionId()}, "
        f"attempt {context.taskAttemptId()})")
    raise MetastoreInTaskError(
        f"a Spark task{task} tried to open the metastore {where}: only the driver talks to "
        "the metastore; executors get snapshots, write ids and file lists from the driver's "
        "plan (opening a metastore in a UDF or a foreach function is not supported)")


@contextmanager
def permit_in_task(reason: str) -> Iterator[None]:
    """Let the code inside open a metastore although it runs in a Spark task; ``reason``
    says which sanctioned exception this is (see the module docstring)."""
    token = _PERMITTED.set(reason)
    try:
        yield
    finally:
        _PERMITTED.reset(token)
