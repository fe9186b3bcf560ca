"""Statements whose rows Spark computes, run from the driver that owns their transaction.

``task_statement`` is the driver's side of ``engine.task_writes``: a transaction of its own,
the statement's ``TaskPlan``, one Spark job whose tasks write their units into staging
(``jobs.run_job``), and ``publish_tasks``; the staging area goes once the transaction has
committed or aborted (a task still running could otherwise write into it after the
removal), and a failed job is typed once the abort is recorded. ``insert_frame`` is an
INSERT (or INSERT OVERWRITE) of a DataFrame through it, for ``AcidTable.insert`` and the
``df.write`` of a bucketed overwrite alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Literal

from pyspark.sql import DataFrame, SparkSession

from acidstore.api.warehouse import Warehouse
from acidstore.engine import idempotent
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import ChangeKind
from acidstore.engine.task_writes import (
    ROUTED_KINDS,
    TaskPlan,
    publish_tasks,
    remove_staging_of,
    task_plan,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import InvalidInputError
from acidstore.spark.jobs import group_buckets, routed, run_job
from acidstore.spark.options import Target
from acidstore.spark.settle import settled_jobs
from acidstore.spark.typed_errors import spark_errors, spark_write
from acidstore.spark.write_columns import add_new_columns, check_columns

__all__ = ["Changes", "insert_frame", "task_statement"]

#: the DataFrame of a statement's rows, built once its transaction and plan exist
Changes = Callable[[TransactionCore, TableHandle, TaskPlan], DataFrame]


def task_statement(spark: SparkSession, wh: Warehouse, name: str, kind: ChangeKind,
                   changes: Changes, *, app: idempotent.AppWrite | None = None,
                   whole_table: bool = False, source_rows: int = 0) -> WriteResult:
    """Run one statement of ``kind`` on table ``name`` whose rows ``changes`` computes, in a
    transaction of its own (``whole_table``: an INSERT OVERWRITE that empties the partitions
    it writes no rows to)."""
    what = f"{kind} of {name}"
    core = core_of(wh)
    plan: TaskPlan | None = None
    with spark_write(what, name) as attempt:
        try:
            with TransactionCore.begin(core) as txn:
                attempt.txn = txn
                table = TableHandle.open(core, name, txn)
                idempotent.claim(txn, table.name, app)
                plan = task_plan(table, txn, kind, emptied=core.metastore.list_partitions(
                    table.name) if whole_table else ())
                with settled_jobs(spark, what), spark_errors(what):
                    rows = changes(txn, table, plan)
                    results = run_job(routed(rows, plan) if kind in ROUTED_KINDS else rows,
                                      plan)
                done = publish_tasks(table, txn, plan, results, source_rows=source_rows)
        finally:
            if plan is not None:  # after the commit or the abort
                remove_staging_of(core.filesystem, plan.target.location, plan.txn_id)
    return dataclasses.replace(done, committed=True)


def insert_frame(spark: SparkSession, wh: Warehouse, target: Target, name: str,
                 data: DataFrame, *, overwrite: bool, app: idempotent.AppWrite | None,
                 merge_schema: bool, partition_overwrite_mode: Literal["dynamic", "static"]
                 ) -> WriteResult:
    """Append ``data`` to table ``name`` (the one ``target`` names), or replace the
    partitions it holds (the whole table with ``partition_overwrite_mode="static"``). An
    overwrite of a bucketed table is shuffled by bucket first: a ``base_w`` has no statement
    ids, so one task must write each bucket file."""
    if partition_overwrite_mode not in ("dynamic", "static"):
        raise InvalidInputError(f"partition_overwrite_mode={partition_overwrite_mode!r}: "
                                "use 'dynamic' or 'static'")
    if merge_schema:
        add_new_columns(target, data.schema)
    operation: ChangeKind = "overwrite" if overwrite else "insert"
    table = TableHandle.open(core_of(wh), name)
    check_columns(table.schema, data.schema, table.name, table.info.partition_schema.names)
    done = idempotent.skipped(table.metastore, table.name, app, operation)
    if done is not None:
        return done

    def changes(txn: TransactionCore, table: TableHandle, plan: TaskPlan) -> DataFrame:
        return group_buckets(data, plan) if overwrite and plan.target.bucket_by else data

    return task_statement(spark, wh, table.name, operation, changes, app=app,
                          whole_table=overwrite and partition_overwrite_mode == "static")
