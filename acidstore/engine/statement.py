"""The statement core (layer L3): DELETE, UPDATE and MERGE as plan -> execute -> publish.

Both engines run the same code. The facade (``Table`` embedded, ``AcidTable`` on Spark) plans
a statement into ``ChangeUnit`` values at its transaction's snapshot; each unit is executed by
``run_unit`` wherever the engine likes (in this process, or in a Spark task's Python worker:
units are picklable and need only the filesystem, never the metastore); the facade publishes
the ``UnitOutcome``\\ s through its transaction. What travels back is small: directories,
counts and the deleted ROW__IDs, which the commit's conflict check uses without re-reading
files under the metastore's lock.

A unit owns whole buckets (one partition, and one bucket of a bucketed table; all of an
unbucketed partition, whose new rows all go to writer id 0 as an embedded write puts them), so
every ``bucket_N`` file of the statement is written by exactly one unit and row ids stay dense
per (write id, bucket, statement) with no coordination between tasks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.config import LOCAL_THREADS
from acidstore.engine.merge_by_source import with_by_source
from acidstore.engine.merge_match import (
    MergeSpec,
    kept_columns,
    match,
    merge_columns,
    merged_rows,
    update_rows,
)
from acidstore.engine.merge_probe import key_probe
from acidstore.engine.merge_routing import route_by_bucket
from acidstore.engine.restore_match import RestoreSpec, restore_diff, unit_splits
from acidstore.engine.unit_rows import kept_rows, row_ids, scan_unit
from acidstore.errors import InvalidInputError
from acidstore.format.layout import base_name, delta_name
from acidstore.format.orc.schema import ROW_ID_COLUMN
from acidstore.format.orc.types import cast_input
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.read.keys import KeyArrays
from acidstore.read.scan import PartitionDir, Scan
from acidstore.read.splits import Split
from acidstore.sql.expressions import Predicate, SqlEvaluator
from acidstore.sql.predicate_terms import equality_literals
from acidstore.write.bucketing import bucket_ids, buckets_of_values
from acidstore.write.conform import PartitionData, conform, split_partitions
from acidstore.write.files import WrittenDirectory, write_deletes, write_inserts

__all__ = ["ChangeKind", "ChangeUnit", "Changes", "Executor", "StatementTarget", "UnitOutcome",
           "cast_value", "partition_inserts", "pinned_buckets", "plan_inserts", "plan_units",
           "planned_directories", "row_ids", "run_unit", "run_units",
           "scan_unit", "write_changes"]

ChangeKind = Literal["delete", "update", "merge", "insert", "overwrite", "restore"]
#: the kinds whose units write given rows (and read nothing)
WRITING_KINDS = frozenset({"insert", "overwrite"})


@dataclass(frozen=True)
class StatementTarget:
    """The table a statement writes, as plain values (picklable)."""

    filesystem: pafs.FileSystem
    location: str
    name: str
    schema: pa.Schema
    partition_schema: pa.Schema
    bucket_by: tuple[str, ...]
    buckets: int
    compression: str
    #: the table's file schema when it differs from ``schema`` (``TableInfo.file_schema``:
    #: dropped columns keep their places in it)
    file_schema: pa.Schema | None = None

    @property
    def full_schema(self) -> pa.Schema:
        return pa.schema(list(self.schema) + list(self.partition_schema))

    @property
    def row_schema(self) -> pa.Schema:
        """The ``row`` struct its files are read and written with."""
        return self.file_schema if self.file_schema is not None else self.schema


@dataclass(frozen=True)
class ChangeUnit:
    """One task's share of a statement: for a DELETE, UPDATE or MERGE the splits of one
    partition (one bucket of it when the table is bucketed), read at the statement's
    snapshot; for kind "insert" the rows of one partition (an INSERT's, or a MERGE's WHEN
    NOT MATCHED ones); for kind "overwrite" the rows that replace one partition (its
    ``base_w``)."""

    target: StatementTarget
    kind: ChangeKind
    partition: str  # relative to the table location ("" when unpartitioned)
    txns: ValidTxnList
    write_ids: ValidWriteIdList
    write_id: int
    statement: int
    predicate: Predicate | None
    assignments: tuple[tuple[str, str], ...]
    planned: tuple[tuple[PartitionDir, Split], ...]
    #: why this unit may not write (its transaction already overwrote the partition: a base of
    #: the same write id would hide the change); raised only if a row matches
    refuse: str | None = None
    #: a MERGE unit's statement (its source and clauses)
    merge: MergeSpec | None = None
    #: an "insert" or "overwrite" unit's rows (user columns; None: an engine's tasks bring
    #: them)
    rows: pa.Table | None = None
    #: the bucket id of the new rows of an unbucketed table: Hive's writer id (0, or a Spark
    #: task's number where several tasks write one INSERT OVERWRITE's base)
    writer: int = 0
    #: a RESTORE unit's version to bring back (that snapshot's splits of the same bucket)
    restore: RestoreSpec | None = None

    @property
    def insert_statement(self) -> int:
        """The statement id of the unit's new rows: the one after its delete events' (Hive 4
        writes an UPDATE as delete events with statement s and new rows with s + 1); an
        "insert" unit has no delete events."""
        return self.statement if self.kind in WRITING_KINDS else self.statement + 1


@dataclass(frozen=True)
class UnitOutcome:
    """What a unit wrote (directories relative to the table) and which ROW__IDs it deleted."""

    partition: str
    directories: tuple[str, ...]
    rows_deleted: int
    rows_inserted: int
    files: int
    bytes: int
    deleted: KeyArrays
    #: a MERGE unit's source rows that matched one of its target rows
    matched_source: npt.NDArray[np.int64] | None = None
    #: (path relative to the table, bytes) of each file written (``WriteComponent``)
    bucket_files: tuple[tuple[str, int], ...] = ()


def pinned_buckets(target: StatementTarget, predicate: Predicate | None
                   ) -> frozenset[int] | None:
    """The buckets a row ``predicate`` is true for can sit in, when it pins the bucket
    columns to literals (``id = 7``, ``id IN (1, 2)``, ANDed with anything); None when it
    does not, or the table is not bucketed. Every writer puts a row in the bucket its
    bucket columns hash to, so a one-row UPDATE or DELETE of a table of ten buckets reads
    one; original files (adopted, pre-ACID) need not follow the hash, so the planner reads a
    partition holding one whole (``read.plan.plan_partition``)."""
    if not isinstance(predicate, str) or not target.bucket_by or target.buckets <= 0:
        return None
    by_lower = {f.name.lower(): f for f in target.schema}
    fields = [by_lower.get(name.lower()) for name in target.bucket_by]
    if any(f is None for f in fields):
        return None
    wanted = buckets_of_values(equality_literals(predicate),
                               [f for f in fields if f is not None], target.buckets)
    return None if wanted is None else frozenset(wanted)


def plan_units(target: StatementTarget, scan: Scan, kind: ChangeKind, *, write_id: int,
               statement: int, predicate: Predicate | None,
               assignments: Mapping[str, str] | None = None,
               merge: MergeSpec | None = None,
               planned: Sequence[tuple[PartitionDir, Split]] | None = None
               ) -> list[ChangeUnit]:
    """The units of one statement over the splits ``scan`` planned (partitions its predicate
    rules out are already gone), or over ``planned`` (some of them: ``pruned_to_buckets``), in
    partition then bucket order. ``statement`` is the id of the delete events; an UPDATE's or
    MERGE's new rows take the next one."""
    by_bucket = bool(target.bucket_by) and target.buckets > 0
    groups = unit_splits(target.location, by_bucket,
                         scan.planned if planned is None else planned)
    pairs = tuple((assignments or {}).items())
    routed = _routed(target, merge, [s for group in groups.values() for _, s in group]) \
        if by_bucket else None
    return [ChangeUnit(target, kind, relative, scan.txns, scan.write_ids, write_id, statement,
                       predicate, pairs, tuple(planned),
                       merge=routed[bucket] if routed is not None else merge)
            for (relative, bucket), planned in sorted(groups.items())]


def _routed(target: StatementTarget, merge: MergeSpec | None, splits: Sequence[Split]
            ) -> dict[int, MergeSpec] | None:
    """A MERGE's source split by the bucket its ON key hashes to (``route_by_bucket``), when
    every split follows the hash: original files (adopted, pre-ACID) need not, and where one
    is planned every unit gets the whole source."""
    if merge is None or any(split.synthetic is not None for split in splits):
        return None
    return route_by_bucket(merge, target.schema, target.bucket_by, target.buckets)


def plan_inserts(target: StatementTarget, parts: Sequence[PartitionData], *,
                 txns: ValidTxnList, write_ids: ValidWriteIdList, write_id: int,
                 statement: int, kind: ChangeKind = "insert") -> list[ChangeUnit]:
    """One "insert" (or "overwrite") unit per partition of ``parts`` (rows split by
    ``write.conform.split_partitions`` after conforming them to the table): each partition's
    bucket files written by one task, as Hive writes a partition's buckets."""
    return [ChangeUnit(target, kind, part.path, txns, write_ids, write_id, statement, None,
                       (), (), rows=part.rows.select(target.schema.names)) for part in parts]


def conformed_parts(target: StatementTarget, rows: pa.Table, where: str
                    ) -> list[PartitionData]:
    """``rows`` (every column, partition ones included) conformed to the table and split
    by partition: what ``plan_inserts`` takes."""
    conformed = conform(rows, target.full_schema, where=where)
    return split_partitions(conformed, list(target.partition_schema.names))


def partition_inserts(target: StatementTarget, partitions: pa.Table, *, txns: ValidTxnList,
                      write_ids: ValidWriteIdList, write_id: int, statement: int
                      ) -> list[ChangeUnit]:
    """The "insert" units ``plan_inserts`` gives rows of these partitions, without the rows:
    ``partitions`` holds the partition columns only, one row per partition (an engine that
    computes the rows in its tasks registers the units' directories first)."""
    where = f"MERGE insert into {target.name}"
    conformed = conform(partitions.select(target.partition_schema.names),
                        target.partition_schema, where=where)
    return [ChangeUnit(target, "insert", part.path, txns, write_ids, write_id, statement, None,
                       (), ()) for part in split_partitions(
                           conformed, list(target.partition_schema.names))]


def planned_directories(units: Sequence[ChangeUnit]) -> dict[str, tuple[str, ...]]:
    """Partition -> the directories its units may write (relative to the table), registered
    with the transaction before any file is written so that a crash leaves a record."""
    out: dict[str, tuple[str, ...]] = {}
    for unit in units:
        if unit.kind == "overwrite":
            names = [base_name(unit.write_id)]
        else:
            names = [] if unit.kind == "insert" else [
                delta_name(unit.write_id, unit.write_id, unit.statement, delete=True)]
            if unit.kind != "delete":
                names.append(delta_name(unit.write_id, unit.write_id, unit.insert_statement))
        paths = [f"{unit.partition}/{n}" if unit.partition else n for n in names]
        out[unit.partition] = tuple(dict.fromkeys([*out.get(unit.partition, ()), *paths]))
    return out


def cast_value(column: pa.ChunkedArray, target: pa.Field, expression: str) -> pa.ChunkedArray:
    """A SET value cast to its column's type, or a SchemaMismatchError naming both."""
    out: pa.ChunkedArray = cast_input(
        column, target.type, f"value {expression!r} for column {target.name!r} is "
        f"{column.type}, which does not convert to {target.type}")
    return out


def updated_rows(old: pa.Table, assignments: Mapping[str, str], target: StatementTarget,
                 evaluator: SqlEvaluator) -> pa.Table:
    """``old`` (every column, partition ones included) with the SET values applied."""
    values = evaluator.evaluate(old, dict(assignments))
    new = old
    for name, expression in assignments.items():
        field = target.schema.field(name)
        new = new.set_column(new.schema.get_field_index(name), field,
                             cast_value(values.column(name), field, expression))
    return conform(new, target.full_schema, where=f"table {target.name}")


def bucket_of_rows(target: StatementTarget, rows: pa.Table, writer: int = 0
                   ) -> npt.NDArray[np.int32]:
    """Hive's bucket of each new row; the writer id (0 unless several writers share a
    directory) for every row of an unbucketed table."""
    if target.bucket_by and target.buckets > 0:
        return bucket_ids(rows, list(target.bucket_by), target.buckets)
    return np.full(rows.num_rows, writer, dtype=np.int32)


def _empty(partition: str) -> UnitOutcome:
    none = KeyArrays.empty()
    return UnitOutcome(partition, (), 0, 0, 0, 0, none)


@dataclass(frozen=True)
class Changes:
    """What one unit deletes (ROW__IDs) and inserts, found but not yet written."""

    deleted: KeyArrays
    inserted: pa.Table | None
    matched_source: npt.NDArray[np.int64] | None = None


def _update(unit: ChangeUnit, evaluator: SqlEvaluator) -> Changes | None:
    batches = scan_unit(unit, None, unit.predicate)
    if not batches:
        return None
    old = pa.Table.from_batches(batches).drop_columns([ROW_ID_COLUMN])
    return Changes(row_ids(batches), updated_rows(old, dict(unit.assignments), unit.target,
                                                   evaluator))


def _merge(unit: ChangeUnit, evaluator: SqlEvaluator) -> Changes | None:
    """One unit of a MERGE: match on the columns the MERGE names (the rows no source row
    matched then go through WHEN NOT MATCHED BY SOURCE), then (only where an UPDATE clause
    keeps old values) decode the columns it keeps of the rows it updates (``kept_rows``).
    With an ON key equality the read keeps only the rows whose key some source row has
    (``merge_probe``), and decodes the kept columns with them when every such row is
    updated; a MERGE that may leave them alone reads every row as before."""
    spec, target = unit.merge, unit.target
    assert spec is not None
    if not spec.source.num_rows and not spec.not_matched_by_source:
        return None  # nothing to match (the unit's share of a routed source)
    names = target.full_schema.names
    columns = merge_columns(spec, names)
    kept = kept_columns(spec, target.schema.names)
    rest = [n for n in kept if n not in columns]
    keyed = key_probe(spec, target.schema, target.row_schema)
    if keyed is not None and rest and not keyed.decides_updates:
        keyed = None  # kept_rows' second scan reads every row: so must the first
    early = rest if keyed is not None else []
    batches = scan_unit(unit, [*columns, *early], probe=keyed.probe if keyed else None)
    if not batches:
        return None
    where = f"MERGE into {target.name}"
    rows = pa.Table.from_batches(batches).drop_columns([ROW_ID_COLUMN])
    on = rows.select(columns) if early else rows  # the join sees what it always saw
    found = with_by_source(spec, match(spec, on, target.schema.names, where, evaluator), on,
                           evaluator)
    keys = row_ids(batches, found.positions)
    updates = update_rows(spec, found)
    new = None
    if updates.any():
        old = kept_rows(unit, rows, found.positions[updates], keys.take(updates), kept,
                        where=where) if kept else None
        new = merged_rows(spec, found, old, target.schema, where)
    return Changes(keys, new, found.matched_source)


def _restore(unit: ChangeUnit) -> Changes | None:
    """One unit of a RESTORE (``restore_match``): ROW__IDs of both snapshots first, then the
    values of only the rows it writes back."""
    assert unit.restore is not None
    past = replace(unit, txns=unit.restore.txns, write_ids=unit.restore.write_ids,
                   planned=unit.restore.planned)
    now, then = scan_unit(unit, []), scan_unit(past, [])
    deleted, back = restore_diff(row_ids(now) if now else None, row_ids(then) if then else None)
    if not len(back):
        return Changes(deleted, None) if len(deleted) else None
    full = scan_unit(past, None)
    if not np.array_equal(row_ids(full, back).row_id, row_ids(then, back).row_id):
        raise AssertionError(f"RESTORE of {unit.target.name}: two scans of one snapshot disagree")
    return Changes(deleted, pa.Table.from_batches(full).drop_columns([ROW_ID_COLUMN]).take(
        pa.array(back)))


def _changes(unit: ChangeUnit, evaluator: SqlEvaluator) -> Changes | None:
    """What one unit deletes and inserts, before anything is written (a bad SET value or a
    cardinality violation writes nothing); None when no row of the unit is involved."""
    if unit.kind in WRITING_KINDS:
        assert unit.rows is not None
        return Changes(KeyArrays.empty(), unit.rows)
    if unit.kind == "update":
        return _update(unit, evaluator)
    if unit.kind == "merge":
        return _merge(unit, evaluator)
    if unit.kind == "restore":
        return _restore(unit)
    batches = scan_unit(unit, [], unit.predicate)
    return Changes(row_ids(batches), None) if batches else None


def run_unit(unit: ChangeUnit, evaluator: SqlEvaluator | None = None, *,
             threads: int = 1) -> UnitOutcome:
    """Execute one unit: find its rows (a DELETE decodes only the predicate's columns and the
    ROW__ID), then write their delete events and new rows (``threads``: for the bucket files
    of the new rows, as ``write_changes``)."""
    own = evaluator is None
    evaluator = evaluator or SqlEvaluator()
    try:
        changes = _changes(unit, evaluator)
    finally:
        if own:
            evaluator.close()
    return write_changes(unit, changes, threads=threads)


def write_changes(unit: ChangeUnit, changes: Changes | None, *, threads: int = 1
                  ) -> UnitOutcome:
    """Write what one unit found: its delete events and new rows, with the unit's statement
    ids (every engine's way to find the changes ends here). ``threads`` encode the new rows'
    bucket files (a MERGE's "insert" unit writes every bucket of its partition)."""
    if changes is None:
        return _empty(unit.partition)
    touched = len(changes.deleted) or (changes.inserted is not None
                                       and changes.inserted.num_rows)
    if (touched or unit.kind == "overwrite") and unit.refuse is not None:
        raise InvalidInputError(unit.refuse)
    target, keys, new = unit.target, changes.deleted, changes.inserted
    written: list[WrittenDirectory | None] = []
    if unit.kind == "overwrite":
        # a base always exists once written: an empty one still hides what was there
        assert new is not None
        written.append(write_inserts(
            target.filesystem, target.location, unit.partition, new.select(target.schema.names),
            bucket_of_rows(target, new, unit.writer), write_id=unit.write_id, statement_id=0,
            schema=target.row_schema, kind="base", compression=target.compression,
            threads=threads))
        return _outcome(unit, written, keys, new.num_rows, changes)
    if len(keys):
        written.append(write_deletes(
            target.filesystem, target.location, unit.partition,
            (keys.write_id, keys.bucket, keys.row_id), write_id=unit.write_id,
            statement_id=unit.statement, schema=target.row_schema, compression=target.compression))
    if new is not None and new.num_rows:
        written.append(write_inserts(
            target.filesystem, target.location, unit.partition, new.select(target.schema.names),
            bucket_of_rows(target, new, unit.writer), write_id=unit.write_id,
            statement_id=unit.insert_statement, schema=target.row_schema,
            compression=target.compression, threads=threads))
    return _outcome(unit, written, keys, new.num_rows if new is not None else 0, changes)


def _outcome(unit: ChangeUnit, written: Sequence[WrittenDirectory | None], keys: KeyArrays,
             inserted: int, changes: Changes) -> UnitOutcome:
    """The one way a unit's writes become its outcome."""
    done = [w for w in written if w is not None]
    return UnitOutcome(unit.partition, tuple(w.path for w in done), len(keys), inserted,
                       sum(len(w.files) for w in done), sum(w.bytes for w in done), keys,
                       changes.matched_source,
                       bucket_files=tuple(f for w in done for f in w.bucket_files))


Executor = Callable[[Sequence[ChangeUnit]], list[UnitOutcome]]
"""How an engine runs units: in this process (``run_units``) or in its tasks."""


def run_units(units: Sequence[ChangeUnit], threads: int | None = None) -> list[UnitOutcome]:
    """Run ``units`` in this process on ``threads`` threads (default: up to 4, one per core;
    pyarrow and DuckDB release the GIL while they decode, evaluate and encode), sharing one
    SQL evaluator; outcomes in unit order. The embedded engine's executor, and each Spark
    task's over its share of the units (there with one thread: Spark runs a task per core)."""
    budget = threads or LOCAL_THREADS
    workers = max(1, min(len(units), budget))
    inner = max(1, budget // max(1, len(units)))  # threads left over, for each unit's files
    evaluator = SqlEvaluator()
    try:
        if workers == 1:
            return [run_unit(unit, evaluator, threads=inner) for unit in units]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda unit: run_unit(unit, evaluator, threads=inner), units))
    finally:
        evaluator.close()


def by_partition(outcomes: Sequence[UnitOutcome], *, keep_empty: bool = False
                 ) -> dict[str, UnitOutcome]:
    """The outcomes of one statement summed per partition (its component), partitions where
    nothing matched left out unless ``keep_empty``."""
    grouped: dict[str, list[UnitOutcome]] = defaultdict(list)
    for outcome in outcomes:
        if keep_empty or outcome.rows_deleted or outcome.rows_inserted:
            grouped[outcome.partition].append(outcome)
    out = {}
    for partition, items in grouped.items():
        out[partition] = UnitOutcome(
            partition, tuple(dict.fromkeys(d for o in items for d in o.directories)),
            sum(o.rows_deleted for o in items), sum(o.rows_inserted for o in items),
            sum(o.files for o in items), sum(o.bytes for o in items),
            KeyArrays(np.concatenate([o.deleted.write_id for o in items]),
                      np.concatenate([o.deleted.bucket for o in items]),
                      np.concatenate([o.deleted.row_id for o in items])),
            bucket_files=tuple(f for o in items for f in o.bucket_files))
    return out
