"""Statements whose rows an engine's tasks bring: INSERT, INSERT OVERWRITE, and DELETE,
UPDATE or MERGE whose changes Spark computed (a DataFrame, a Column condition).

The pipeline is the statement core's: each task runs the statement's units for the rows it
holds (``write_task``: one unit per partition, written by ``statement.write_changes``, the
same writer every engine ends in) and returns their outcomes; the driver publishes them
(``publish_tasks``: the directories registered with the transaction, the files moved in,
``publish.publish_change``). What differs is where the rows come from and where the files
first go:

- rows arrive as a task's share of a DataFrame, so a task's units are known only once it
  runs. A DELETE, UPDATE or MERGE routes its rows by unit (partition, and bucket of the
  target row for a bucketed table; a MERGE's inserts by partition), so every task writes
  with the statement's own ids, sorted as the statement core sorts (delete events and
  updated rows by ROW__ID, a MERGE's inserts in source order, ``ORDER_COLUMN``): the files
  and ROW__IDs are the embedded engine's. An INSERT of a DataFrame writes each task's rows
  as they come, so each task takes a block of statement ids of its own
  (``TaskPlan.statement``; task 0 takes the embedded engine's), and tasks never write the
  same file;
- a task attempt writes below ``<table>/_acidstore_staging/txn_<id>/attempt_<n>/`` (hidden
  from readers), and only the driver moves files into place, for the attempts Spark reports
  as successful, so a failed or retried task never duplicates rows.

A task's rows carry the event columns of the change: ``DELETE_COLUMN`` (the ROW__ID a row
deletes, null: none) and ``INSERT_COLUMN`` (whether its values are a new row); a MERGE's
rows also ``CLAUSE_COLUMN``. An UPDATE's (or a MERGE's matched) new rows are written with
the statement id after its delete events', a MERGE's inserts with the one after that, as
the statement core does.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_match import check_cardinality
from acidstore.engine.publish import publish_change
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import (
    ChangeKind,
    Changes,
    ChangeUnit,
    StatementTarget,
    UnitOutcome,
    write_changes,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.writes import register, statement_target
from acidstore.errors import InvalidInputError
from acidstore.format.layout import STAGING_DIR
from acidstore.format.orc.codec import MAX_BUCKET_ID, MAX_STATEMENT_ID
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.read.keys import KeyArrays
from acidstore.write.conform import conform, omittable, split_partitions

__all__ = ["BUCKET_COLUMN", "CLAUSE_COLUMN", "DELETE_COLUMN", "INSERT_COLUMN", "ORDER_COLUMN",
           "ROUTED_KINDS", "TaskPlan", "TaskResult", "conform_inserted", "make_staging_dir",
           "publish_tasks", "remove_staging_of", "staging_of", "task_plan", "write_task"]

#: event columns: which MERGE clause a row belongs to, the ROW__ID it deletes (null: none)
#: and whether its values are a new row; plain inserts have none of them
CLAUSE_COLUMN, DELETE_COLUMN, INSERT_COLUMN = "__acid_clause", "__acid_delete", "__acid_insert"
#: the Hive bucket of a row, added where rows are shuffled so that one task holds a bucket
BUCKET_COLUMN = "__acid_bucket"
#: a MERGE source row's place in the source: its inserts are written in that order
ORDER_COLUMN = "__acid_order"
_EVENT_COLUMNS = (CLAUSE_COLUMN, DELETE_COLUMN, INSERT_COLUMN, BUCKET_COLUMN, ORDER_COLUMN)
#: the kinds whose rows are routed by unit, so that every task writes the statement's ids
ROUTED_KINDS = frozenset({"delete", "update", "merge"})
#: statement ids a task takes per kind: delete events, an update's new rows, a MERGE's inserts
_SPAN: dict[str, int] = {"insert": 1, "overwrite": 1, "delete": 1, "update": 2, "merge": 3}


@dataclass(frozen=True)
class TaskPlan:
    """One statement whose rows tasks bring: everything a task needs (picklable)."""

    target: StatementTarget
    kind: ChangeKind
    txn_id: int
    txns: ValidTxnList
    write_ids: ValidWriteIdList
    write_id: int
    first_statement: int
    #: the table's metadata version the statement planned against (its commit checks it)
    metadata_version: int
    #: an overwrite of the whole table (``partitionOverwriteMode=static``): the partitions it
    #: empties unless a task writes rows into them
    emptied: tuple[str, ...] = ()

    @property
    def staging(self) -> str:
        return staging_of(self.target.location, self.txn_id)

    def statement(self, task: int) -> int:
        """The first statement id ``task`` writes with: the statement's own for a routed
        kind, else the first of ``task``'s block."""
        if self.kind in ROUTED_KINDS:
            return self.first_statement
        statement = self.first_statement + task * _SPAN[self.kind]
        if statement + _SPAN[self.kind] - 1 > MAX_STATEMENT_ID:
            raise InvalidInputError(
                f"Spark task {task} of the write to {self.target.name} would need statement "
                f"id {statement} > {MAX_STATEMENT_ID}: coalesce() the DataFrame to fewer "
                "partitions")
        return statement


@dataclass(frozen=True)
class TaskResult:
    """A task attempt's result: where its files wait, and the units it ran with their
    outcomes (directories relative to the table, as once moved)."""

    task: int
    attempt: int
    root: str
    units: tuple[ChangeUnit, ...] = ()
    outcomes: tuple[UnitOutcome, ...] = ()

    @property
    def last_statement(self) -> int:
        return max((u.statement + (u.kind in ("update", "merge")) for u in self.units),
                   default=-1)


def task_plan(table: TableHandle, txn: TransactionCore, kind: ChangeKind, *,
              emptied: Sequence[str] = ()) -> TaskPlan:
    """The plan of one statement of ``txn`` on ``table`` (allocates the write id and takes
    the next statement id: task 0's block starts there)."""
    return TaskPlan(statement_target(table), kind, txn.txn_id, txn.snapshot,
                    txn.write_ids(table.name), txn.write_id(table.name),
                    txn.next_statement_id(table.name), table.info.metadata_version,
                    tuple(emptied))


def write_task(plan: TaskPlan, batches: Iterable[pa.RecordBatch], task: int, attempt: int
               ) -> TaskResult:
    """Write one task's rows (in its Python worker) into its attempt's staging area: one
    unit per partition, and per event kind, each through ``write_changes``."""
    root = afs.join(plan.staging, f"attempt_{attempt}")
    collected = [b for b in batches if b.num_rows]
    if not collected:
        return TaskResult(task, attempt, root)
    rows = pa.Table.from_batches(collected)
    target = dataclasses.replace(plan.target, location=root)
    first = plan.statement(task)
    deleted = _deleted_keys(plan, rows)
    new, added = _new_rows(plan, rows)
    make_staging_dir(plan.target.filesystem, root)
    units: list[ChangeUnit] = []
    outcomes: list[UnitOutcome] = []
    main_kind = plan.kind
    writer = task if plan.kind == "overwrite" and not (
        plan.target.bucket_by and plan.target.buckets > 0) else 0
    if writer > MAX_BUCKET_ID:
        raise InvalidInputError(
            f"an overwrite of {plan.target.name} from {task + 1}+ Spark tasks exceeds "
            f"{MAX_BUCKET_ID + 1} writers: coalesce() the DataFrame")
    for partition in sorted({*deleted, *new}):
        unit = ChangeUnit(target, main_kind, partition, plan.txns, plan.write_ids,
                          plan.write_id, first, None, (), (), writer=writer)
        changes = Changes(deleted.get(partition, KeyArrays.empty()), new.get(partition))
        units.append(unit)
        outcomes.append(write_changes(unit, changes))
    for partition in sorted(added):
        unit = ChangeUnit(target, "insert", partition, plan.txns, plan.write_ids,
                          plan.write_id, first + 2, None, (), ())
        units.append(unit)
        outcomes.append(write_changes(unit, Changes(KeyArrays.empty(), added[partition])))
    return TaskResult(task, attempt, root, tuple(units), tuple(outcomes))


def _deleted_keys(plan: TaskPlan, rows: pa.Table) -> dict[str, KeyArrays]:
    """The ROW__IDs the task's rows delete, by partition; a target row matched twice (one
    ROW__ID in two rows) fails the statement (Hive's cardinality check): a MERGE sends every
    pair of a target row to one task, so the check runs where the rows are written."""
    if DELETE_COLUMN not in rows.column_names:
        return {}
    deleting = rows.filter(pc.is_valid(rows.column(DELETE_COLUMN)))
    if not deleting.num_rows:
        return {}
    target = plan.target
    names = list(target.partition_schema.names)
    keyed = conform(deleting.select([*names, DELETE_COLUMN]), pa.schema(
        [*target.partition_schema, deleting.schema.field(DELETE_COLUMN)]),
        where=f"the rows deleted from {target.name}")
    ids = keyed.column(DELETE_COLUMN).combine_chunks()
    check_cardinality([*(keyed.column(n) for n in names),
                       *(ids.field(i) for i in range(ids.type.num_fields))],
                      f"MERGE into {target.name}")
    if CLAUSE_COLUMN in deleting.column_names:
        # a matched pair no clause takes (clause -1) is there for the check only
        keyed = keyed.filter(pc.greater_equal(deleting.column(CLAUSE_COLUMN), 0))
    out: dict[str, KeyArrays] = {}
    for part in split_partitions(keyed, names):
        key = part.rows.column(DELETE_COLUMN).combine_chunks()
        out[part.path] = KeyArrays(
            np.asarray(key.field("writeid").to_numpy(zero_copy_only=False), np.int64),
            np.asarray(key.field("bucketid").to_numpy(zero_copy_only=False), np.int32),
            np.asarray(key.field("rowid").to_numpy(zero_copy_only=False), np.int64))
    return out


def conform_inserted(target: StatementTarget, rows: pa.Table) -> pa.Table:
    """Rows a task inserts (a DataFrame's), conformed to ``target`` as an embedded insert
    conforms them: nullable columns that are not partition columns may be left out."""
    schema = target.full_schema
    return conform(rows, schema, where=f"table {target.name}",
                   omitted=omittable(schema, target.partition_schema.names))


def _new_rows(plan: TaskPlan, rows: pa.Table
              ) -> tuple[dict[str, pa.Table], dict[str, pa.Table]]:
    """The task's new rows by partition: those of the statement's own kind (an INSERT's, an
    UPDATE's or a MERGE's updated rows), and a MERGE's inserted ones."""
    if INSERT_COLUMN in rows.column_names:
        inserting = rows.filter(pc.fill_null(rows.column(INSERT_COLUMN), False))
    elif DELETE_COLUMN in rows.column_names:  # a DELETE: no new rows
        return {}, {}
    else:  # an INSERT: every row is new
        inserting = rows
    if not inserting.num_rows:
        return {}, {}
    inserting = _in_core_order(inserting)
    extra = [c for c in _EVENT_COLUMNS if c in inserting.column_names]
    replacing = pc.is_valid(inserting.column(DELETE_COLUMN)) \
        if DELETE_COLUMN in inserting.column_names else None
    target = plan.target
    data = conform_inserted(target, inserting.drop_columns(extra))
    names = list(target.partition_schema.names)
    if replacing is None or plan.kind != "merge":
        return {p.path: p.rows for p in split_partitions(data, names)}, {}
    updated = data.filter(replacing)
    added = data.filter(pc.invert(replacing))
    return ({p.path: p.rows for p in split_partitions(updated, names)} if updated.num_rows
            else {},
            {p.path: p.rows for p in split_partitions(added, names)} if added.num_rows
            else {})


def _in_core_order(rows: pa.Table) -> pa.Table:
    """New rows in the order the statement core writes them: those that replace a row by
    the ROW__ID they replace (scan order), a MERGE's inserts by their place in the source."""
    keys: list[tuple[str, str]] = []
    if DELETE_COLUMN in rows.column_names:
        ids = rows.column(DELETE_COLUMN).combine_chunks()
        rows = rows.append_column("__k_present", pc.is_valid(ids))
        for i, name in enumerate(("__k_w", "__k_b", "__k_r")):
            rows = rows.append_column(name, ids.field(i))
        keys += [("__k_present", "descending"), ("__k_w", "ascending"),
                 ("__k_b", "ascending"), ("__k_r", "ascending")]
    if ORDER_COLUMN in rows.column_names:
        keys.append((ORDER_COLUMN, "ascending"))
    if not keys:
        return rows
    ordered = rows.take(pc.sort_indices(rows, sort_keys=keys))
    return ordered.drop_columns([c for c in ordered.column_names if c.startswith("__k_")])


def publish_tasks(table: TableHandle, txn: TransactionCore, plan: TaskPlan,
                  results: Sequence[TaskResult], *, source_rows: int = 0,
                  statement: str | None = None) -> WriteResult:
    """Register the successful attempts' units with ``txn``, move their files into the table
    and publish their outcomes (on the driver). The caller commits; on any error it aborts,
    which removes them. ``statement`` names the statement in history (default: the kind's
    name)."""
    units = [u for r in results for u in r.units]
    outcomes = [o for r in results for o in r.outcomes]
    roots = [r.root for r in results if r.units]
    if plan.kind == "overwrite":
        # an INSERT OVERWRITE of an unpartitioned table replaces its rows even when it
        # writes none, and one of a whole partitioned table empties the partitions it writes
        # none to
        written = {u.partition for u in units}
        emptied = [p for p in (plan.emptied if plan.target.partition_schema.names else [""])
                   if p not in written]
        root = afs.join(plan.staging, "empty")
        for partition in emptied:
            target = dataclasses.replace(plan.target, location=root)
            unit = ChangeUnit(target, "overwrite", partition, plan.txns, plan.write_ids,
                              plan.write_id, plan.first_statement, None, (), ())
            units.append(unit)
            outcomes.append(write_changes(unit, Changes(
                KeyArrays.empty(), plan.target.full_schema.empty_table())))
        if emptied:
            roots.append(root)
    for kind in dict.fromkeys(u.kind for u in units):
        for unit in register(table, txn, [u for u in units if u.kind == kind]):
            if unit.refuse is not None:
                raise InvalidInputError(unit.refuse)
    for root in roots:
        _move_tree(table.filesystem, root, table.location)
    placed = [dataclasses.replace(u, target=plan.target) for u in units]
    result = publish_change(table, txn, plan.kind, placed, outcomes, source_rows=source_rows,
                            metadata_version=plan.metadata_version, statement=statement)
    last = max((r.last_statement for r in results), default=-1)
    if last >= 0:
        txn.used_statement_ids(table.name, last)
    return result


def _move_tree(fs: pafs.FileSystem, source: str, target: str) -> None:
    """Move every file below ``source`` to the same relative place below ``target``."""
    made: set[str] = set()
    for relative, _ in afs.list_files_recursive(fs, source):
        parent = relative.rpartition("/")[0]
        if parent not in made:
            afs.make_dirs(fs, afs.join(target, parent) if parent else target)
            made.add(parent)
        with afs.storage_errors(afs.join(target, relative), action="move a staged file"):
            fs.move(afs.join(source, relative), afs.join(target, relative))


def staging_of(location: str, txn_id: int) -> str:
    """The staging area of transaction ``txn_id`` in the table at ``location``: one per
    transaction, so that only its owner ever removes it."""
    return afs.join(location, STAGING_DIR, f"txn_{txn_id}")


#: how often a task makes its staging directory again when a parent vanished meanwhile
_MAKE_ATTEMPTS = 5


def make_staging_dir(fs: pafs.FileSystem, path: str) -> None:
    """Make ``path`` and its parents below the table's staging root. Another job's writer
    removes that root when it finds it empty (``remove_staging_of``), which can happen
    between making the root and making the directory inside it: the directory is then made
    again from the root. Once it exists the root is not empty, and nobody else removes it."""
    for _ in range(_MAKE_ATTEMPTS - 1):
        try:
            fs.create_dir(path, recursive=True)
            return
        except FileNotFoundError:
            continue
    afs.make_dirs(fs, path)


def remove_staging_of(fs: pafs.FileSystem, location: str, txn_id: int) -> None:
    """Drop transaction ``txn_id``'s staging area (failed attempts' files included), then
    the table's staging root if that is empty now (``fs.remove_empty_directory``: never
    another job's files; that job removes the root itself when it ends). Best effort:
    leftovers are hidden from readers, and the cleaner removes the staging areas of
    transactions that are no longer open."""
    with contextlib.suppress(OSError):
        fs.delete_dir(staging_of(location, txn_id))
    afs.remove_empty_directory(fs, afs.join(location, STAGING_DIR))
