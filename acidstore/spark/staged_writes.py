"""The two halves of a data source write, shared by ``df.write`` and the streaming sink.

Spark runs a Python data source's write in separate processes: tasks on executors write the
rows, then a driver-side worker commits or aborts. Both run here, keyed by the statement's
``TaskPlan`` (which names the transaction, opened before the tasks were planned):

- ``write_staged`` (in a task) writes the task's rows into its attempt's staging area and
  keeps the transaction alive while Spark feeds it rows;
- ``commit_staged`` (on the driver) attaches to the transaction, publishes the successful
  attempts' files and commits, in one go; ``abort_staged`` aborts. Either way the
  transaction's staging area goes, with whatever failed attempts left there.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark import TaskContext

from acidstore.api.warehouse import Warehouse
from acidstore.config import SPARK_HEARTBEAT_SECONDS
from acidstore.engine import idempotent
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.task_writes import (
    TaskPlan,
    TaskResult,
    publish_tasks,
    remove_staging_of,
    write_task,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import AcidStoreError
from acidstore.format.writeids import ValidTxnList
from acidstore.spark.options import Target, heartbeat, open_target

__all__ = ["HEARTBEAT_SECONDS", "abort_open", "abort_staged", "commit_staged", "kept_alive",
           "write_staged"]

HEARTBEAT_SECONDS = SPARK_HEARTBEAT_SECONDS


def kept_alive(batches: Iterator[pa.RecordBatch], beat: Callable[[], None]
               ) -> Iterator[pa.RecordBatch]:
    """``batches``, heartbeating the transaction at the start and then every minute (well
    inside the 300 s default timeout) while Spark feeds the task."""
    beat()
    last = time.monotonic()
    for batch in batches:
        if time.monotonic() - last > HEARTBEAT_SECONDS:
            beat()
            last = time.monotonic()
        yield batch


def write_staged(target: Target, plan: TaskPlan, batches: Iterator[pa.RecordBatch]
                 ) -> TaskResult:
    """One Spark task's rows of ``plan``, written into its attempt's staging area."""
    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    attempt = context.taskAttemptId() if context is not None else os.getpid()
    alive = kept_alive(batches, lambda: heartbeat(target, plan.txn_id))
    return write_task(plan, alive, task, attempt)


def _attached(target: Target, plan: TaskPlan) -> tuple[Warehouse, TableHandle, TransactionCore]:
    """The plan's table, bound to its transaction (opened by another process)."""
    wh, table = open_target(target)
    try:
        txn = TransactionCore.attach(core_of(wh), plan.txn_id, plan.txns)
    except BaseException:
        wh.close()
        raise
    return wh, TableHandle(table.core, table.info, txn), txn


def commit_staged(target: Target, plan: TaskPlan, results: Sequence[TaskResult], *,
                  app: idempotent.AppWrite | None = None, statement: str | None = None
                  ) -> bool:
    """Publish the successful attempts' files and commit the plan's transaction. With
    ``app``, the version is claimed here, in the commit's transaction; if the table holds
    it (or a later one) already, the transaction is aborted instead and False returned.
    Any failure aborts the transaction (the error goes on)."""
    wh, table, txn = _attached(target, plan)
    try:
        try:
            if idempotent.skipped(wh.metastore, table.name, app, plan.kind) is not None:
                txn.abort(f"{table.name} holds this version of {app}: nothing to commit")
                return False
            idempotent.claim(txn, table.name, app)
            publish_tasks(table, txn, plan, results, statement=statement)
            txn.commit()
            return True
        except BaseException as exc:
            if txn.state == "open":
                txn.abort(f"Spark commit failed: {type(exc).__name__}: {exc}")
            raise
        finally:  # what is left there never becomes visible: failed attempts' files
            _remove_staging(plan)
    finally:
        wh.close()


def abort_staged(target: Target, plan: TaskPlan, why: str) -> None:
    """Abort the plan's transaction (if it is still open) and remove its staging area."""
    wh, _ = open_target(target)
    try:
        abort_open(wh, plan.target.filesystem, plan.target.location, plan.txn_id, plan.txns,
                   why=why)
    finally:
        wh.close()


def abort_open(wh: Warehouse, fs: pafs.FileSystem, location: str, txn_id: int,
               snapshot: ValidTxnList, *, why: str) -> None:
    """Abort transaction ``txn_id`` of another process if it is still open (one that
    committed or is gone is left as it is), then remove its staging area in the table at
    ``location``."""
    try:
        with contextlib.suppress(AcidStoreError):
            TransactionCore.attach(core_of(wh), txn_id, snapshot).abort(why)
    finally:
        remove_staging_of(fs, location, txn_id)


def _remove_staging(plan: TaskPlan) -> None:
    remove_staging_of(plan.target.filesystem, plan.target.location, plan.txn_id)
