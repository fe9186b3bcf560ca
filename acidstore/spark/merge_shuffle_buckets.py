"""The shuffled MERGE by bucket: a large source sent to the units of the bucket it can match.

When the ON condition equates the table's (single) bucketing column to a source column of the
same kind (``merge_routing.source_buckets``: integers or strings) and no pre-ACID original file
is planned, a source row can only match target rows of the bucket its key hashes to: every
writer put each row in the bucket Hive's hash gives its value. So the source needs no join
with the target in the JVM. One pass over it in the workers tags each row with that bucket and
its place in the source; Spark shuffles the rows to the task that runs the bucket's units (of
every partition); the task runs them as the broadcast MERGE's units run, each with its share
of the source (``statement.run_unit``: the core's join, clauses, WHEN NOT MATCHED BY SOURCE
and cardinality check, in the same job). No other task can match the task's source rows, so
it also computes the WHEN NOT MATCHED rows of those no unit matched. Where each insert row
falls in its source row's bucket and the table has one partition (``_inserts_stay``: the
common upsert, ``INSERT *`` of the key), the task writes them itself, its buckets' files only:
one job. Otherwise they stay in Spark, persisted beside the tasks' outcomes, and one more job
writes them by (partition, bucket) once the driver registered their partitions
(``merge_shuffle_inserts``). Either way each bucket file is written in the order of the
broadcast MERGE's (clause, then source row): its files and ROW__IDs are the broadcast
MERGE's. The source is read once, its rows counted in the same pass, so a non-deterministic
source is seen one way.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel, TaskContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StructField,
    StructType,
)

from acidstore.engine import writes
from acidstore.engine.executors import pack
from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_match import (
    SOURCE_INDEX,
    MergeClause,
    MergeSpec,
    not_matched_rows,
    plain_reference,
)
from acidstore.engine.merge_routing import equality_keys, source_buckets
from acidstore.engine.statement import (
    ChangeUnit,
    StatementTarget,
    UnitOutcome,
    bucket_of_rows,
    run_unit,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.spark.jobs import unit_bytes
from acidstore.spark.merge_shuffle_inserts import (
    OUTPUT,
    every_outcome,
    plan_partitions,
    slots,
    write_inserts,
    write_planned,
)
from acidstore.spark.merge_shuffle_tags import partition_keys
from acidstore.spark.schema_mapping import arrow_schema, spark_schema, to_spark_batch
from acidstore.spark.typed_errors import reporting
from acidstore.sql.expressions import SqlEvaluator, quote
from acidstore.write.conform import conform

__all__ = ["bucket_merge", "partition_keys"]

_TASK, _BUCKET, _ORDER, _CLAUSE = "__acid_task", "__acid_bucket", "__acid_order", "__acid_clause"
#: the bucket of the rows (one per task, no source values) that make every task run its
#: units, also those no source row reaches (WHEN NOT MATCHED BY SOURCE acts on their rows)
_MARK = -2
#: bits of a source row's place within its Spark partition (``monotonically_increasing_id``'s)
_ROW_BITS = 33


@dataclasses.dataclass(frozen=True)
class _Routing:
    """Which task runs which units: ``shares`` (unit indexes per task; every unit of a bucket
    in one share), ``keys`` (the partition key Spark sends to each task), ``buckets`` (each
    unit's bucket)."""

    plan: list[ChangeUnit]
    shares: list[list[int]]
    keys: list[int]
    buckets: list[int]
    spec: MergeSpec
    target: StatementTarget
    #: the source's column names
    names: list[str]
    #: the "insert" units the tasks write their inserts with (``_inserts_stay``), or None:
    #: the tasks leave them to one more job
    inserts: dict[str, ChangeUnit] | None

    def task_of_buckets(self) -> npt.NDArray[np.int32]:
        """The task of each bucket (by bucket id); a bucket no unit has (no file yet) is task
        0's."""
        out = np.zeros(max(self.target.buckets, 1), np.int32)
        for task, share in enumerate(self.shares):
            out[[self.buckets[i] for i in share]] = task
        return out


@dataclasses.dataclass(frozen=True)
class _Report:
    """What one task returns besides any insert rows it leaves to the next job: its units'
    outcomes (by unit index), its inserts' outcomes (by partition) where it wrote them, how
    many source rows it was given, and the partitions of the insert rows it left."""

    outcomes: tuple[tuple[int, UnitOutcome], ...]
    written: tuple[tuple[str, UnitOutcome], ...]
    source_rows: int
    left: int
    partitions: pa.Table


def bucket_merge(spark: SparkSession, txn: TransactionCore, table: TableHandle,
                 spec: MergeSpec, *, source: DataFrame, units: Sequence[ChangeUnit]
                 ) -> tuple[list[ChangeUnit], list[UnitOutcome], int] | None:
    """Run the shuffled MERGE by bucket: every unit (matched, then "insert" ones) with its
    outcome, and the source's row count; None when the MERGE cannot be routed so (then
    Spark joins it: ``merge_shuffle``). Where each insert row is known to fall in the bucket
    its source row was routed to and the table has one partition (``_inserts_stay``), the
    tasks write their inserts themselves: one job, nothing persisted."""
    target = writes.statement_target(table)
    plan = list(units)
    buckets = _unit_buckets(target, spec, plan)
    if buckets is None:
        return None
    costs = [unit_bytes(u) for u in plan]
    shares = pack(list(range(len(plan))), costs, slots(spark, len(set(buckets))),
                  keys=buckets, bundle_limit=sum(costs) + 1)
    stay = _inserts_stay(target, spec, list(source.columns))
    routing = _Routing(plan, shares, partition_keys(len(shares)), buckets, spec, target,
                       list(source.columns), plan_partitions(txn, table, pa.table(
                           {"__one": [1]})) if stay and spec.not_matched else None)
    tagged = source.mapInArrow(_tagger(routing, arrow_schema(source.schema)), StructType([
        StructField(_TASK, IntegerType()), StructField(_BUCKET, IntegerType()),
        StructField(_ORDER, LongType()),
        *(StructField(f.name, f.dataType, True) for f in source.schema.fields)]))
    out = tagged.repartition(len(shares), _TASK).mapInArrow(_runner(routing), StructType([
        *(StructField(f.name, f.dataType, True)
          for f in spark_schema(target.full_schema).fields),
        StructField(_CLAUSE, IntegerType()), StructField(_ORDER, LongType()),
        StructField(_BUCKET, IntegerType()), StructField(OUTPUT, BinaryType())]))
    if stay or not spec.not_matched:
        reports = _reports(out)
        return _finish(spark, routing, reports, [], [])
    out = out.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        reports = _reports(out)
        parts = list(target.partition_schema.names)
        left = sum(r.left for r in reports)
        present = pa.concat_tables([r.partitions for r in reports]).group_by(parts).aggregate(
            []) if parts and left else pa.table({"__one": [1] if left else []})
        more, written = write_inserts(txn, table, out.where(F.col(OUTPUT).isNull()).drop(
            OUTPUT), present, group=[*parts, _BUCKET], order=[_CLAUSE, _ORDER],
            tasks=present.num_rows * target.buckets)
    finally:
        out.unpersist()
    return _finish(spark, routing, reports, more, written)


def _reports(out: DataFrame) -> list[_Report]:
    rows = out.where(F.col(OUTPUT).isNotNull()).select(OUTPUT).collect()
    return [pickle.loads(r[OUTPUT]) for r in rows]


def _finish(spark: SparkSession, routing: _Routing, reports: Sequence[_Report],
            more: list[ChangeUnit], written: list[UnitOutcome]
            ) -> tuple[list[ChangeUnit], list[UnitOutcome], int]:
    """Every unit with its outcome (``every_outcome``; then the inserts the tasks wrote, then
    ``more`` with ``written``, those of the next job) and the source's row count."""
    planned = routing.inserts or {}
    mine = sorted((pair for r in reports for pair in r.written), key=lambda pair: pair[0])
    return ([*routing.plan, *(planned[p] for p, _ in mine), *more],
            [*every_outcome(spark, routing.plan, _done(reports)), *(o for _, o in mine), *written],
            sum(r.source_rows for r in reports))


def _done(reports: Sequence[_Report]) -> dict[int, UnitOutcome]:
    return {index: outcome for report in reports for index, outcome in report.outcomes}


def _inserts_stay(target: StatementTarget, spec: MergeSpec, names: Sequence[str]) -> bool:
    """Whether the task that matched a source row can write its insert row too: an
    unpartitioned table (its one insert directory is registered before the job) and every
    WHEN NOT MATCHED clause setting the bucketing column to the ON condition's source key as
    it is (``INSERT *`` of a same-named key, or ``x = s.key``), so that the insert row falls
    in the bucket the source row was routed to (a NULL key's row in bucket 0, where Hive's
    hash puts NULL). No other task then writes that bucket's file."""
    if target.partition_schema.names or len(target.bucket_by) != 1:
        return False
    column = target.bucket_by[0]
    key = next((sc for tc, sc in equality_keys(spec, target.schema.names, names)
                if tc.lower() == column.lower()), None)
    for clause in spec.not_matched:
        given = {n.lower(): v for n, v in clause.values or ()}
        text = given.get(column.lower()) if clause.values is not None else (
            f"{spec.source_alias}.{quote(column)}")
        if key is None or text is None or plain_reference(
                text, spec.source_alias, names) != key:
            return False
    return True


def _unit_buckets(target: StatementTarget, spec: MergeSpec, units: Sequence[ChangeUnit]
                  ) -> list[int] | None:
    """Each unit's bucket, when the MERGE can be routed by bucket: a bucketed table, an ON
    condition ``source_buckets`` can route by, and no original file planned (one need not
    hold only its bucket's rows). None otherwise."""
    if not units or not target.bucket_by or target.buckets <= 0:
        return None
    if any(split.synthetic is not None for unit in units for _, split in unit.planned):
        return None
    if source_buckets(spec, target.schema, target.bucket_by, target.buckets) is None:
        return None
    return [unit.planned[0][1].bucket_id for unit in units]


Batches = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _tagger(routing: _Routing, wire: pa.Schema) -> Batches:
    """The pass over the source: each row gets the partition key of the task that runs its
    bucket, its bucket (-1: it can match nothing; such rows are spread over the tasks) and its
    place in the source (Spark partition, then row: the order a collected source has). The
    source's first partition also emits one row per task (``_MARK``)."""
    spec, target, names = routing.spec, routing.target, routing.names
    count, task_of = len(routing.keys), routing.task_of_buckets()
    key_of = np.asarray(routing.keys, np.int32)

    def extra(tasks: npt.NDArray[np.int32], bucket: npt.NDArray[np.int32],
              order: npt.NDArray[np.int64]) -> list[pa.Array]:
        return [pa.array(key_of[tasks]), pa.array(bucket), pa.array(order)]

    @reporting
    def tag(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
        seen, schema = 0, wire
        for batch in batches:
            schema = batch.schema
            rows = pa.Table.from_batches([batch]).rename_columns(names)
            bucket = source_buckets(dataclasses.replace(spec, source=rows), target.schema,
                                    target.bucket_by, target.buckets)
            assert bucket is not None, "a routable MERGE's source rows route"
            order = (part << _ROW_BITS) + seen + np.arange(batch.num_rows, dtype=np.int64)
            # a row of no bucket matches nothing; where the tasks write their inserts it
            # goes to bucket 0's task (its insert row's NULL key hashes there), else anywhere
            other = task_of[0] if routing.inserts is not None else order % count
            tasks = np.where(bucket >= 0, task_of[np.maximum(bucket, 0)], other)
            seen += batch.num_rows
            yield pa.RecordBatch.from_arrays(
                [*extra(tasks.astype(np.int32), bucket, order), *batch.columns],
                names=[_TASK, _BUCKET, _ORDER, *batch.schema.names])
        if part == 0:
            marks = np.arange(count, dtype=np.int32)
            yield pa.RecordBatch.from_arrays(
                [*extra(marks, np.full(count, _MARK, np.int32), np.full(count, -1, np.int64)),
                 *(pa.nulls(count, f.type) for f in schema)],
                names=[_TASK, _BUCKET, _ORDER, *schema.names])

    return tag


def _runner(routing: _Routing) -> Batches:
    """A task of the shuffled MERGE: the units of its buckets, each with its share of the
    task's source rows, then the WHEN NOT MATCHED rows of the rows none of them matched,
    written (``_Routing.inserts``) or yielded with their order and bucket; last a row with
    its ``_Report``."""
    plan, shares, buckets = routing.plan, routing.shares, routing.buckets
    spec, target, names = routing.spec, routing.target, routing.names
    task_of_key = {key: task for task, key in enumerate(routing.keys)}
    full = target.full_schema
    wire = arrow_schema(spark_schema(full))

    @reporting
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        given = list(batches)
        if not given:
            return  # not even a mark: the driver runs what no task ran
        table = pa.Table.from_batches(given)
        mine = sorted({task_of_key[k] for k in pc.unique(table.column(_TASK)).to_pylist()})
        rows = table.filter(pc.not_equal(table.column(_BUCKET), _MARK)).sort_by(_ORDER)
        source = pa.table([rows.column(3 + i) for i in range(len(names))], names=names) \
            .append_column(SOURCE_INDEX, rows.column(_ORDER))
        by_bucket = _by_bucket(source, np.asarray(rows.column(_BUCKET).to_numpy(), np.int32))
        evaluator = SqlEvaluator()
        try:
            done = []
            for index in (i for task in mine for i in shares[task]):
                share = dataclasses.replace(spec, source=by_bucket.get(
                    buckets[index], source.schema.empty_table()))
                done.append((index, run_unit(dataclasses.replace(plan[index], merge=share),
                                             evaluator)))
            matched = [o.matched_source for _, o in done if o.matched_source is not None]
            new = _insert_rows(spec, source, np.concatenate(matched) if matched else
                               np.zeros(0, np.int64), target, evaluator)
        finally:
            evaluator.close()
        new = new.append_column(_BUCKET, pa.array(bucket_of_rows(target, new)))
        written: list[tuple[str, UnitOutcome]] = []
        if routing.inserts is not None and new.num_rows:
            # the buckets routed to this task (``task_of_buckets``, as the tagger routed
            # them): its units' and, for task 0, those with no unit (no file yet), whose
            # source rows the tagger sends it, so that it writes their inserts alone
            tasks = routing.task_of_buckets()
            owned = {b for b in range(len(tasks)) if int(tasks[b]) in mine}
            if not set(pc.unique(new.column(_BUCKET)).to_pylist()) <= owned:
                raise AssertionError(f"MERGE into {target.name}: an insert row fell outside "
                                     "the buckets of the task that computed it")
            written = write_planned(routing.inserts, new, [_CLAUSE, _ORDER])
        elif new.num_rows:
            for batch in new.to_batches():
                yield pa.RecordBatch.from_arrays(
                    [*to_spark_batch(batch.select(full.names), wire).columns,
                     *batch.select([_CLAUSE, _ORDER, _BUCKET]).columns,
                     pa.nulls(batch.num_rows, pa.binary())],
                    names=[*full.names, _CLAUSE, _ORDER, _BUCKET, OUTPUT])
        left = new.num_rows if routing.inserts is None else 0
        parts = new.select(list(target.partition_schema.names))
        report = _Report(tuple(done), tuple(written), source.num_rows, left,
                         parts.group_by(parts.column_names).aggregate([])
                         if parts.num_columns else parts)
        yield pa.RecordBatch.from_arrays(
            [*(pa.nulls(1, f.type) for f in wire), pa.nulls(1, pa.int32()),
             pa.nulls(1, pa.int64()), pa.nulls(1, pa.int32()),
             pa.array([pickle.dumps(report)], pa.binary())],
            names=[*full.names, _CLAUSE, _ORDER, _BUCKET, OUTPUT])

    return run


def _by_bucket(source: pa.Table, bucket: npt.NDArray[np.int32]) -> dict[int, pa.Table]:
    """``source``'s rows per bucket, each in source order (rows of no bucket left out)."""
    order = np.argsort(bucket, kind="stable")
    present, starts = np.unique(bucket[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    return {int(b): source.take(pa.array(order[bounds[i]:bounds[i + 1]]))
            for i, b in enumerate(present.tolist()) if b >= 0}


def _insert_rows(spec: MergeSpec, source: pa.Table, matched: npt.NDArray[np.int64],
                 target: StatementTarget, evaluator: SqlEvaluator) -> pa.Table:
    """The WHEN NOT MATCHED rows of ``source``'s rows not in ``matched`` (conformed to the
    table), each with its source row's place (``_ORDER``) and the clause that took it
    (``_CLAUSE``): the broadcast MERGE inserts them clause by clause, each clause's rows in
    source order. The clause is evaluated only where more than one can take a row (the first
    has a condition, and others follow); else it is 0 for every row."""
    full = target.full_schema
    tracked = dataclasses.replace(spec, source=source.append_column(
        _ORDER, source.column(SOURCE_INDEX)))
    wanted = pa.schema([*full, pa.field(_ORDER, pa.int64())])
    several = len(spec.not_matched) > 1 and spec.not_matched[0].condition is not None
    if several:
        wanted = wanted.append(pa.field(_CLAUSE, pa.int32()))
        tracked = dataclasses.replace(tracked, not_matched=tuple(MergeClause(
            c.kind, c.condition, (
                *(c.values if c.values is not None else
                  ((n, tracked.source_column(n)) for n in full.names)),
                (_ORDER, f"{spec.source_alias}.{_ORDER}"), (_CLAUSE, str(j))))
            for j, c in enumerate(spec.not_matched)))
    rows = not_matched_rows(tracked, matched, wanted, evaluator)
    conformed = conform(rows.select(full.names), full, where=f"MERGE insert into {target.name}")
    clause = rows.column(_CLAUSE).cast(pa.int32()) if several else pa.chunked_array(
        [np.zeros(rows.num_rows, np.int32)], pa.int32())
    return conformed.append_column(_ORDER, rows.column(_ORDER).cast(pa.int64())) \
        .append_column(_CLAUSE, clause)
