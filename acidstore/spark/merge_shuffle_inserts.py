"""The WHEN NOT MATCHED rows of a shuffled MERGE, written by Spark's tasks (and the other
steps both ways of the shuffled MERGE share: the outcomes of units no task ran).

Both ways of the shuffled MERGE (``merge_shuffle``: Spark joins the source to the target's
join columns; ``merge_shuffle_buckets``: the source is shuffled by target bucket) compute the
rows to insert in Spark's workers, and neither may collect them: the source was too large to
collect in the first place. The driver registers the partitions' insert directories with the
transaction (before any task writes, so that a crash leaves a record), then each task writes
the rows it was given as the statement core's "insert" units do, with the MERGE's own
statement id. Several tasks may share a partition's insert delta as long as no two write one
bucket file: the rows are grouped by whole partitions, or by (partition, bucket).
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from acidstore.engine import writes
from acidstore.engine.handle import TableHandle
from acidstore.engine.statement import (
    ChangeUnit,
    UnitOutcome,
    conformed_parts,
    plan_inserts,
    run_units,
    write_changes,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import InvalidInputError
from acidstore.spark.jobs import run_units as spark_units
from acidstore.spark.typed_errors import reporting
from acidstore.write.conform import conform, split_partitions

__all__ = ["OUTPUT", "every_outcome", "plan_partitions", "slots", "write_inserts", "write_planned"]

#: the one binary column a task returns its pickled outcomes in
OUTPUT = "output"


def slots(spark: SparkSession, count: int) -> int:
    """Tasks for ``count`` pieces of work: at most one per task slot of the session."""
    return max(1, min(count, spark.sparkContext.defaultParallelism))


def every_outcome(spark: SparkSession, plan: Sequence[ChangeUnit], done: dict[int, UnitOutcome]
                  ) -> list[UnitOutcome]:
    """Every unit's outcome in plan order, given those the tasks ran (``done``, by index):
    WHEN NOT MATCHED BY SOURCE acts on the rows of units no task ran too, so those run now
    as the core's units with no source row (the spec holds none), in one more job; the
    others changed nothing."""
    alone = [i for i, unit in enumerate(plan) if i not in done and unit.merge is not None
             and unit.merge.not_matched_by_source]
    if alone:
        done.update(zip(alone, spark_units(spark, [plan[i] for i in alone]), strict=True))
    return [done.get(i) or write_changes(unit, None) for i, unit in enumerate(plan)]


def plan_partitions(txn: TransactionCore, table: TableHandle, present: pa.Table
                    ) -> dict[str, ChangeUnit]:
    """The "insert" unit (no rows) of each partition of ``present`` (its partition columns,
    one row per partition; an unpartitioned table's one row), its directories registered
    with ``txn`` now, before any task writes."""
    target = writes.statement_target(table)
    parts = list(target.partition_schema.names)
    if not present.num_rows:
        return {}
    shape = conform(present.select(parts), target.partition_schema,
                    where=f"MERGE insert into {target.name}")
    return {u.partition: u for u in writes.plan_insert_units(
        table, txn, split_partitions(shape, list(parts)), partitions_only=True)}


def write_planned(planned: dict[str, ChangeUnit], given: pa.Table, order: Sequence[str] = ()
                  ) -> list[tuple[str, UnitOutcome]]:
    """Write ``given`` (the table's columns, conformed, plus any helper columns) in a task as
    the "insert" units ``planned`` (``plan_partitions``) of its partitions, sorted by the
    helper columns ``order`` first (the statement core's row order, so the ROW__IDs are
    those of a broadcast MERGE): (partition, outcome) per partition written."""
    first = next(iter(planned.values()))
    target = first.target
    if order:
        given = given.sort_by([(name, "ascending") for name in order])
    parts_given = conformed_parts(target, given.select(target.full_schema.names),
                                  f"MERGE into {target.name}")
    mine = plan_inserts(target, parts_given, txns=first.txns, write_ids=first.write_ids,
                        write_id=first.write_id, statement=first.statement)
    out = []
    for unit in mine:
        if unit.partition not in planned:
            raise InvalidInputError(f"MERGE into {target.name}: partition "
                                    f"{unit.partition!r} was not planned")
        ready = dataclasses.replace(unit, refuse=planned[unit.partition].refuse)
        out.append((unit.partition, run_units([ready], threads=1)[0]))
    return out


def write_inserts(txn: TransactionCore, table: TableHandle, rows: DataFrame, present: pa.Table,
                  *, group: Sequence[str] = (), order: Sequence[str] = (),
                  tasks: int | None = None) -> tuple[list[ChangeUnit], list[UnitOutcome]]:
    """Write ``rows`` (the table's columns, conformed, plus any helper columns) as the MERGE's
    inserts in one more job: ``present`` holds one row per partition they fall in (see
    ``plan_partitions``; none when nothing is inserted). ``group``: the columns whose equal
    values one task writes (default: the partition columns, else one task); ``order``: as
    ``write_planned``; ``tasks``: how many (default: one per partition, at most one per task
    slot). Returns a unit and outcome per partition a task wrote (a unit repeats where
    several tasks wrote its partition)."""
    planned = plan_partitions(txn, table, present)
    if not planned:
        return [], []
    parts = list(writes.statement_target(table).partition_schema.names)

    @reporting
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        batched = list(batches)
        if not batched:
            return
        for done in write_planned(planned, pa.Table.from_batches(batched), order):
            yield pa.RecordBatch.from_pydict({OUTPUT: [pickle.dumps(done)]})

    keys = list(group) or parts
    grouped = rows.repartition(slots(rows.sparkSession, tasks or len(planned)), *keys) \
        if keys else rows.coalesce(1)
    done = sorted((pickle.loads(r[OUTPUT]) for r in
                   grouped.mapInArrow(write, f"{OUTPUT} binary").collect()),
                  key=lambda pair: pair[0])
    return [planned[p] for p, _ in done], [outcome for _, outcome in done]
