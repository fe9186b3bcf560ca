"""The shuffled MERGE on Spark: a source too large to hand whole to every unit.

The driver plans the MERGE's units as for a broadcast MERGE (``writes.plan_change``). Where the
ON condition equates the bucketing column to a source column, the source is shuffled to the
units of the bucket each row can match and no target row enters Spark
(``merge_shuffle_buckets``): one pass over the source, one job in the common case. Every other
large MERGE takes the path below, which joins in Spark.

Spark joins the source to the target's *join columns*: each unit decodes, in a Python worker, only
the target columns the MERGE's SQL names plus the ROW__ID, so the table's other columns never
enter the JVM. The matched pairs are shuffled by unit, and each unit applies the WHEN MATCHED
clauses to its pairs through the statement core (``statement_joined.run_joined_unit``), which
also checks cardinality in the same job. With WHEN NOT MATCHED BY SOURCE clauses every unit
also reads its own rows and applies them to those no pair holds, and the units no pair
reached run as the core's units with no source row, in one more job: such a MERGE reads
every row of the table. Source rows with no match go through the WHEN NOT MATCHED clauses in
the workers and are written one task per partition as the core's "insert" units. One
transaction publishes everything, as for every other statement.

The joined pairs are persisted between the two jobs so the target is decoded once and both
jobs see the same source rows (a non-deterministic source would otherwise match differently in
each).
"""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.broadcast import Broadcast
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)

from acidstore.engine import writes
from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_joined import run_joined_unit
from acidstore.engine.merge_match import (
    SOURCE_INDEX,
    MergeSpec,
    merge_columns,
    not_matched_rows,
)
from acidstore.engine.merge_routing import equality_key
from acidstore.engine.statement import (
    ChangeUnit,
    UnitOutcome,
    row_ids,
    scan_unit,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.read.keys import KeyArrays
from acidstore.spark.merge_shuffle_buckets import bucket_merge
from acidstore.spark.merge_shuffle_inserts import OUTPUT, every_outcome, slots, write_inserts
from acidstore.spark.schema_mapping import arrow_schema, spark_schema, to_spark_batch
from acidstore.spark.typed_errors import reporting
from acidstore.sql.expressions import SqlEvaluator
from acidstore.write.conform import conform

__all__ = ["MAX_SEMI_JOIN_KEYS", "shuffled_merge"]

_UNIT, _W, _B, _R = "__acid_unit", "__acid_w", "__acid_b", "__acid_r"
#: most distinct source join keys broadcast for the semi-join (beyond: every target key joins)
MAX_SEMI_JOIN_KEYS = 20_000_000


@dataclasses.dataclass(frozen=True)
class _Shape:
    """How the joined pairs' columns are named: source column ``i`` is ``__s{i}``, target
    column ``j`` (of those the MERGE names) is ``__t{j}``, so equal names on both sides never
    clash and any column name survives."""

    source: tuple[str, ...]
    target: tuple[str, ...]

    def split(self, pairs: pa.Table) -> tuple[pa.Table, pa.Table, KeyArrays]:
        source = pa.table([pairs.column(f"__s{i}") for i in range(len(self.source))],
                          names=list(self.source))
        target = pa.table([pairs.column(f"__t{j}") for j in range(len(self.target))],
                          names=list(self.target))
        def ints(name: str) -> npt.NDArray[np.int64]:
            return np.asarray(pairs.column(name).to_numpy(zero_copy_only=False), np.int64)

        keys = KeyArrays(ints(_W), ints(_B).astype(np.int32), ints(_R))
        return source, target, keys


def shuffled_merge(spark: SparkSession, txn: TransactionCore, table: TableHandle,
                   spec: MergeSpec, *,
                   source: DataFrame, on: Column, units: Sequence[ChangeUnit]
                   ) -> tuple[list[ChangeUnit], list[UnitOutcome], int]:
    """Run a MERGE whose ``spec`` carries no source rows (only the source's columns): the rows
    come from ``source``, shuffled by bucket where the ON condition allows it
    (``merge_shuffle_buckets``), else joined on ``on`` (the ON condition as a Spark Column
    over the aliased sides). Returns every unit (the matched ones and the "insert" ones) with
    its outcome, for ``TableHandle.publish_change``, and the source's row count."""
    routed = bucket_merge(spark, txn, table, spec, source=source, units=units)
    if routed is not None:
        return routed
    count = source.count()
    target = writes.statement_target(table)
    names = merge_columns(spec, target.full_schema.names)
    shape = _Shape(tuple(source.columns), tuple(names))
    keys = _target_keys(spark, units, names, target.full_schema,
                        _semi_join(spark, spec, source, target.full_schema))
    # Spark cannot size the keys (a Python map over unit numbers looks tiny) and would
    # broadcast all of a large table's keys to every task: a shuffled hash join instead
    aliased_source, aliased_keys = source.alias(spec.source_alias), keys.alias(
        spec.target_alias).hint("shuffle_hash")
    joined = aliased_source.join(aliased_keys, on=on,
                                 how="left" if spec.not_matched else "inner").select(
        *[aliased_source[n].alias(f"__s{i}") for i, n in enumerate(shape.source)],
        *[aliased_keys[n].alias(f"__t{j}") for j, n in enumerate(shape.target)],
        aliased_keys[_UNIT], aliased_keys[_W], aliased_keys[_B], aliased_keys[_R])
    joined = joined.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        outcomes = _apply_matched(spark, joined, units, shape)
        inserts, written = _insert_not_matched(txn, table, spec, joined, shape)
    finally:
        joined.unpersist()
    return [*units, *inserts], [*outcomes, *written], count


@dataclasses.dataclass(frozen=True)
class _SemiJoin:
    """The target column of an equality in the ON condition, and the source's distinct
    values of the other side, broadcast: a target row without one of them matches nothing."""

    column: str
    values: Broadcast[pa.Array]


def _semi_join(spark: SparkSession, spec: MergeSpec, source: DataFrame, full: pa.Schema
               ) -> _SemiJoin | None:
    """The source's distinct join keys, when the ON condition equates a target column with a
    source column of the same kind of type and the keys are few enough to broadcast
    (``MAX_SEMI_JOIN_KEYS``): the units then send only target rows that can match into
    Spark's join, not the whole table's keys."""
    key = equality_key(spec, full.names, source.columns)
    if key is None:
        return None
    target_type = full.field(key[0]).type
    values = source.select(F.col(f"`{key[1]}`")).where(F.col(f"`{key[1]}`").isNotNull()) \
        .distinct().limit(MAX_SEMI_JOIN_KEYS + 1).toArrow().column(0).combine_chunks()
    same = values.type.equals(target_type) or (
        pa.types.is_integer(values.type) and pa.types.is_integer(target_type)) or (
        pa.types.is_string(values.type) and pa.types.is_string(target_type))
    if len(values) > MAX_SEMI_JOIN_KEYS or not same:
        return None
    try:
        values = values.cast(target_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # a source key no target value can equal: the join finds that out
    return _SemiJoin(key[0], spark.sparkContext.broadcast(_both_zeros(values)))


def _both_zeros(values: pa.Array) -> pa.Array:
    """``values`` with 0.0 and -0.0 both in it where either is (floating point only): SQL's
    and Spark's join say -0.0 = 0.0, Arrow's hash lookup (``is_in``) tells them apart, and a
    target row dropped by the semi-join is never matched (its source row would be inserted
    as a second row). NaN needs nothing: Arrow finds NaN as Spark's join matches it."""
    if not pa.types.is_floating(values.type) or not pc.any(
            pc.equal(values, pa.scalar(0, values.type))).as_py():
        return values
    return pa.concat_arrays([values, pa.array([0.0, -0.0], values.type)])


def _target_keys(spark: SparkSession, units: Sequence[ChangeUnit], names: Sequence[str],
                 full: pa.Schema, semi: _SemiJoin | None) -> DataFrame:
    """One row per target row: the columns the MERGE names, its unit and its ROW__ID,
    decoded unit by unit in the workers (no other column is read); with ``semi``, only the
    rows whose join key the source has."""
    schema = spark_schema(pa.schema([*(full.field(n) for n in names),
                                     pa.field(_UNIT, pa.int32()), pa.field(_W, pa.int64()),
                                     pa.field(_B, pa.int32()), pa.field(_R, pa.int64())]))
    wire = arrow_schema(schema)
    plan = list(units)

    @reporting
    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        wanted = semi.values.value if semi is not None else None
        for batch in batches:
            for index in batch.column("id").to_pylist():
                for decoded in scan_unit(plan[index], list(names)):
                    part = decoded if semi is None else decoded.filter(
                        pc.is_in(decoded.column(semi.column), value_set=wanted))
                    if not part.num_rows:
                        continue
                    keys = row_ids([part])
                    columns = [*(part.column(n) for n in names),
                               pa.array(np.full(part.num_rows, index, np.int32)),
                               pa.array(keys.write_id), pa.array(keys.bucket),
                               pa.array(keys.row_id)]
                    yield to_spark_batch(pa.RecordBatch.from_arrays(columns, schema=pa.schema(
                        [*(full.field(n) for n in names), *list(wire)[len(names):]])), wire)

    return spark.range(0, len(plan), 1, slots(spark, len(plan))).mapInArrow(decode, schema)


def _apply_matched(spark: SparkSession, joined: DataFrame, units: Sequence[ChangeUnit],
                   shape: _Shape) -> list[UnitOutcome]:
    """Each unit's pairs in one task: the clauses applied and written by the core."""
    plan = list(units)

    @reporting
    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        given = list(batches)
        if not given:
            return
        pairs = pa.Table.from_batches(given)
        evaluator = SqlEvaluator()
        try:
            unit_of = pairs.column(_UNIT)
            for index in pc.unique(unit_of).to_pylist():
                mine = pairs.filter(pc.equal(unit_of, index))
                source, target, keys = shape.split(mine)
                outcome = run_joined_unit(plan[index], source, target, keys, evaluator)
                yield pa.RecordBatch.from_pydict({OUTPUT: [pickle.dumps((index, outcome))]})
        finally:
            evaluator.close()

    matched = joined.filter(F.col(_UNIT).isNotNull())
    rows = matched.repartition(slots(spark, len(plan)), _UNIT).mapInArrow(
        apply, f"{OUTPUT} binary").collect()
    done: dict[int, UnitOutcome] = dict(pickle.loads(row[OUTPUT]) for row in rows)
    return every_outcome(spark, plan, done)


def _insert_not_matched(txn: TransactionCore, table: TableHandle, spec: MergeSpec,
                        joined: DataFrame, shape: _Shape
                        ) -> tuple[list[ChangeUnit], list[UnitOutcome]]:
    """The WHEN NOT MATCHED rows: computed by the core in the workers, then written one task
    per partition (each partition's bucket files by one writer), after the driver registered
    the partitions' directories with the transaction."""
    if not spec.not_matched:
        return [], []
    target = writes.statement_target(table)
    full = target.full_schema
    parts = list(target.partition_schema.names)
    where = f"MERGE insert into {target.name}"
    bare = dataclasses.replace(spec, source=spec.source.drop_columns([SOURCE_INDEX]))

    @reporting
    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        evaluator = SqlEvaluator()
        wire = arrow_schema(spark_schema(full))
        try:
            for batch in batches:
                source = pa.Table.from_batches([batch]).rename_columns(list(shape.source))
                numbered = MergeSpec.build(
                    source, spec.condition, source_alias=spec.source_alias,
                    target_alias=spec.target_alias, matched=bare.matched,
                    not_matched=bare.not_matched)
                rows = conform(not_matched_rows(numbered, np.zeros(0, np.int64), full,
                                                evaluator), full, where=where)
                for out in rows.to_batches():
                    yield to_spark_batch(out, wire)
        finally:
            evaluator.close()

    left = joined.filter(F.col(_UNIT).isNull()).select(
        *[F.col(f"__s{i}") for i in range(len(shape.source))])
    rows = left.mapInArrow(compute, spark_schema(full)).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        present = rows.select(*parts).distinct().toArrow() if parts else (
            pa.table({}) if rows.isEmpty() else pa.table({"__one": [1]}))
        return write_inserts(txn, table, rows, present)
    finally:
        rows.unpersist()
