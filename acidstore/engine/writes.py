"""The one write pipeline: every write is a plan of units, run by an executor, published
into its transaction.

``run_statement`` is the pipeline for INSERT, INSERT OVERWRITE, DELETE, UPDATE and MERGE:
``plan`` makes the statement's units at its transaction's snapshot (``engine.statement``:
one per partition, and per bucket of a bucketed table, each owning the bucket files it
writes), registers the directories they may write, an executor runs them (``run_units``:
threads of this process; Spark's tasks, ``engine.executors``), and ``publish_change`` turns
their outcomes into the transaction's components. The public ``Table``'s writes, Spark's
statements, streaming ingest and the MERGE front ends all come here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

import numpy as np
import pyarrow as pa

from acidstore.engine import idempotent
from acidstore.engine.handle import TableHandle
from acidstore.engine.merge_match import (
    MergeClause,
    MergeSpec,
    check_by_source,
    check_clause_order,
    clause_texts,
    not_matched_rows,
    plain_reference,
)
from acidstore.engine.publish import operation_of, publish_change
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import (
    ChangeKind,
    ChangeUnit,
    Executor,
    StatementTarget,
    UnitOutcome,
    conformed_parts,
    partition_inserts,
    pinned_buckets,
    plan_inserts,
    plan_units,
    planned_directories,
    run_units,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import InvalidExpressionError, InvalidInputError, required_condition
from acidstore.metastore import PlannedWrite, WriteComponent
from acidstore.sql.expressions import Predicate, SqlEvaluator
from acidstore.sql.literals import value_literals
from acidstore.write.conform import (
    PartitionData,
    conform,
    omittable,
    refuse_zone_drop,
    split_partitions,
    to_arrow_table,
)

__all__ = ["check_merge", "delete", "execute_merge", "insert", "insertable_columns", "plan_change",
           "plan_insert_units", "plan_merge_inserts", "register", "run_statement",
           "statement_target", "updatable_column", "update"]

#: what a SET clause maps a column to: SQL text here, a SQL string or Column on Spark
_Expression = TypeVar("_Expression")
#: a value given for a column, whatever its kind
_Value = TypeVar("_Value")


def statement_target(table: TableHandle) -> StatementTarget:
    """The table as the picklable values a statement's units write to."""
    info = table.info
    return StatementTarget(table.filesystem, table.location, table.name, info.schema,
                           info.partition_schema, tuple(info.bucket_by), info.buckets,
                           table.compression, info.file_schema)


# --- the public writes ------------------------------------------------------------------------


def insert(table: TableHandle, data: Any, operation: Literal["insert", "overwrite"], *,
           app_id: str | None = None, version: int | None = None,
           run: Executor = run_units, statement: str | None = None) -> WriteResult:
    """Append ``data`` (a pyarrow Table, RecordBatchReader or pandas DataFrame), or with
    "overwrite" replace the partitions it holds (the whole table if unpartitioned);
    idempotent with ``app_id`` and ``version`` (``engine.idempotent``). ``statement``: its
    name in history, when not the operation's (``publish.STATEMENT_NAMES``)."""
    table.check_exists()  # conform to the schema the statement's commit is checked against
    where = f"table {table.name}"
    rows = to_arrow_table(data, where)
    refuse_zone_drop(rows, table.schema, where=where)
    names = table.info.partition_schema.names
    parts = split_partitions(conform(rows, table.schema, where=where,
                                     omitted=omittable(table.schema, names)), names)
    app = idempotent.requested(app_id, version)
    # known before the transaction opens: a new transaction allocates and records it
    planned = PlannedWrite(table.name, tuple(p.path for p in parts), operation)
    return idempotent.write_once(
        table.metastore, table.name, app, operation,
        run=lambda body: table.run(body, writes=(planned,)),
        write=lambda txn: run_statement(table, txn, operation, parts=parts, run=run,
                                        statement=statement))


def delete(table: TableHandle, predicate: Predicate, *, run: Executor = run_units
           ) -> WriteResult:
    """Delete the rows matching ``predicate`` (``"true"`` for every row)."""
    required_condition(predicate, f"DELETE from {table.name}")
    return table.run(lambda txn: run_statement(table, txn, "delete", predicate=predicate,
                                               run=run),
                     writes=_planned_change(table, "delete"))


def update(table: TableHandle, predicate: Predicate, assignments: Mapping[str, str] | None,
           *, new_values: Mapping[str, Any] | None = None, run: Executor = run_units
           ) -> WriteResult:
    """Set columns of the rows matching ``predicate`` to SQL expressions of the old row
    (``assignments``) and to Python values (``new_values``)."""
    required_condition(predicate, f"UPDATE of {table.name}")
    checked = check_assignments(table, set_clause(table, assignments, new_values, "update"))
    return table.run(lambda txn: run_statement(table, txn, "update", predicate=predicate,
                                               assignments=checked, run=run),
                     writes=_planned_change(table, "update"))


def execute_merge(table: TableHandle, spec: MergeSpec, *, run: Executor = run_units
                  ) -> WriteResult:
    """Run a planned MERGE in the handle's transaction (or its own)."""
    return table.run(lambda txn: run_statement(table, txn, "merge", merge=spec, run=run))


def _planned_change(table: TableHandle, operation: Literal["update", "delete"]
                    ) -> tuple[PlannedWrite, ...]:
    """What a DELETE or UPDATE that opens its own transaction writes, when that is known
    before the open: on an unpartitioned table its first statement can only write the
    directories ``PlannedWrite`` names, so the open allocates the write id and records them
    (two durable metastore transactions per statement instead of four, as for an insert).
    A partitioned table's partitions are known only once planned."""
    if table.txn is not None or len(table.info.partition_schema):
        return ()
    return (PlannedWrite(table.name, ("",), operation),)


# --- values a statement sets ------------------------------------------------------------------


def updatable_column(table: TableHandle, name: str) -> str:
    """The column ``name`` (any case) names, if an UPDATE may set it: partition and
    bucketing columns place rows in files, so they cannot change (as in Hive)."""
    by_lower = {f.name.lower(): f.name for f in table.info.schema}
    fixed = {n.lower() for n in table.info.partition_schema.names} | {
        n.lower() for n in table.info.bucket_by}
    if name.lower() in fixed:
        raise InvalidInputError(
            f"cannot update {name!r} of {table.name}: partition and bucketing columns "
            "cannot be updated (as in Hive)")
    if name.lower() not in by_lower:
        raise InvalidInputError(f"unknown column {name!r} in update of {table.name}")
    column: str = by_lower[name.lower()]
    return column


def insertable_columns(table: TableHandle, values: Mapping[str, _Value],
                       where: str = "MERGE insert") -> dict[str, _Value]:
    """``values`` keyed by the table's own spelling of each column (every column, partition
    ones included, may be given a value; ``where`` names the clause in errors)."""
    known = {n.lower(): n for n in table.schema.names}
    unknown = [c for c in values if c.lower() not in known]
    if unknown:
        raise InvalidInputError(f"unknown column(s) {unknown} in {where} of {table.name}")
    return {known[c.lower()]: v for c, v in values.items()}


def check_assignments(table: TableHandle, assignments: Mapping[str, str]) -> dict[str, str]:
    """An UPDATE's SET clause checked: at least one column, each updatable, each value a SQL
    expression string."""
    if not assignments:
        raise InvalidInputError("update needs at least one column to set")
    out = {}
    for name, expression in assignments.items():
        column = updatable_column(table, name)
        if not isinstance(expression, str):
            raise InvalidInputError(f"the value for {name!r} must be a SQL expression string")
        out[column] = expression
    return out


def set_clause(table: TableHandle, expressions: Mapping[str, _Expression] | None,
               new_values: Mapping[str, Any] | None, where: str
               ) -> dict[str, _Expression | str]:
    """One SET clause of SQL expressions (``expressions``) and Python values (``new_values``,
    as literals of their columns' types; ``where`` names the clause in errors). A column may
    be given once, in either."""
    clause: dict[str, _Expression | str] = dict(expressions or {})
    if not new_values:
        return clause
    given = {c.lower() for c in clause}
    twice = sorted(c for c in new_values if c.lower() in given)
    if twice:
        raise InvalidInputError(f"{where} of {table.name}: column(s) {twice} given both as "
                                "a SQL expression and as a new value")
    resolved = insertable_columns(table, new_values, where)
    clause.update(value_literals(resolved, table.schema, f"{where} of {table.name}"))
    return clause


def check_merge(table: TableHandle, source: pa.Schema, aliases: tuple[str, str],
                clauses: Sequence[MergeClause], by_source: Sequence[MergeClause] = ()) -> None:
    """The checks of a MERGE's clauses that every front end (the embedded builder, Spark's
    in each of its ways to run) makes before anything is planned: what an UPDATE sets may be
    updated and what an INSERT names is a column (``updatable_column``,
    ``insertable_columns``), the WHEN NOT MATCHED BY SOURCE clauses (``by_source``) follow
    their rules (``merge_match.check_by_source``) and bind over the target alone, and a zoned
    source timestamp a clause copies into a column without a zone is refused, as ``insert``
    refuses it (``refuse_zone_drop``: the cast would keep the UTC wall clock and drop the
    zone). Copies are SET * / INSERT * (same names) and values that are just a source column
    (``s.ts``); an expression over one is the user's SQL. ``aliases``: the source's, the
    target's."""
    source_alias, target_alias = aliases
    check_clause_order([c for c in clauses if c.kind != "insert"], "WHEN MATCHED")
    check_clause_order([c for c in clauses if c.kind == "insert"], "WHEN NOT MATCHED")
    check_by_source(by_source, source_alias)
    if by_source:
        _check_target_only(table, by_source, target_alias)
    names = {n.lower(): n for n in source.names}
    copied: dict[str, str] = {}  # target column -> source column
    for clause in clauses:
        if clause.kind == "delete":
            continue
        if clause.values is None:
            copied.update((n, names[n.lower()]) for n in table.schema.names
                          if n.lower() in names)
            continue
        given = dict(clause.values)
        if clause.kind == "update":
            for column in given:
                updatable_column(table, column)
        else:
            insertable_columns(table, given)
        for column, text in given.items():
            found = plain_reference(text, source_alias, source.names)
            if found is not None:
                copied[column] = found
    if copied:
        refuse_zone_drop(pa.schema([pa.field(t, source.field(s).type)
                                    for t, s in copied.items()]).empty_table(),
                         table.schema, where=f"table {table.name} (MERGE)")


def _check_target_only(table: TableHandle, clauses: Sequence[MergeClause], alias: str) -> None:
    """WHEN NOT MATCHED BY SOURCE clauses set updatable columns and bind over the target
    alone (``alias``), before anything runs: a source column named bare has no row to come
    from. Bound over no rows, in the sandbox (nothing is evaluated)."""
    evaluator = SqlEvaluator()
    try:
        for number, clause in enumerate(clauses, 1):
            for column, _ in clause.values or ():
                updatable_column(table, column)
            try:
                evaluator.check_row_wise({alias: table.schema}, clause_texts([clause]))
            except InvalidExpressionError as exc:
                raise InvalidExpressionError(
                    f"WHEN NOT MATCHED BY SOURCE clause {number} of the MERGE into "
                    f"{table.name} names only the target's columns: {exc}") from exc
    finally:
        evaluator.close()


# --- plan -> execute -> publish -----------------------------------------------------------------


def run_statement(table: TableHandle, txn: TransactionCore, kind: ChangeKind, *,
                  predicate: Predicate | None = None,
                  assignments: Mapping[str, str] | None = None,
                  merge: MergeSpec | None = None, parts: Sequence[PartitionData] = (),
                  run: Executor = run_units, statement: str | None = None) -> WriteResult:
    """Plan, execute (``run``: this process, or an engine's tasks) and publish one
    statement in ``txn``: the one path of every write of both engines. ``parts``: an
    INSERT's (or INSERT OVERWRITE's) rows, conformed and split by partition; ``statement``:
    its name in history, when not the kind's."""
    if kind in ("insert", "overwrite"):
        units = plan_insert_units(table, txn, parts, kind=kind)
    else:
        units = plan_change(table, txn, kind, predicate, assignments=assignments,
                            merge=merge)
    outcomes = run(units)
    if merge is not None:
        inserts = plan_merge_inserts(table, txn, merge, outcomes)
        units, outcomes = [*units, *inserts], [*outcomes, *run(inserts)]
    return publish_change(table, txn, kind, units, outcomes,
                          source_rows=merge.source.num_rows if merge else 0, statement=statement)


def plan_change(table: TableHandle, txn: TransactionCore, kind: ChangeKind,
                predicate: Predicate | None, *, assignments: Mapping[str, str] | None = None,
                merge: MergeSpec | None = None) -> list[ChangeUnit]:
    """Plan a DELETE, UPDATE or MERGE at ``txn``'s snapshot into units any engine can run,
    and register the directories they may write (before any file exists). No units, and no
    write id taken, when no file can hold a matching row."""
    target = statement_target(table)
    # under Serializable every partition a statement read is a conflict scope (a later
    # append there could be a phantom), so it reads them whole; pruning buckets could leave
    # a partition unread
    serializable = table.isolation_level == "Serializable"
    scan = table.scan_at(txn.snapshot, txn.write_ids(table.name), columns=[],
                         filter=predicate, with_row_id=True,
                         buckets=None if serializable else pinned_buckets(target, predicate))
    planned = list(scan.planned)
    if not planned:
        return []
    write_id = txn.write_id(table.name)
    statement = txn.next_statement_id(table.name)
    if kind != "delete":
        txn.next_statement_id(table.name)  # the new rows' (Hive 4: delete events s, rows s+1)
    return register(table, txn, plan_units(
        target, scan, kind, write_id=write_id, statement=statement, predicate=predicate,
        assignments=assignments, merge=merge, planned=planned))


def plan_merge_inserts(table: TableHandle, txn: TransactionCore, spec: MergeSpec,
                       outcomes: Sequence[UnitOutcome]) -> list[ChangeUnit]:
    """The "insert" units of a MERGE's WHEN NOT MATCHED clauses, over the source rows no
    unit of the MERGE matched (their statement id follows the units')."""
    matched = [o.matched_source for o in outcomes if o.matched_source is not None]
    target = statement_target(table)
    evaluator = SqlEvaluator()
    try:
        rows = not_matched_rows(spec, np.concatenate(matched) if matched else
                                np.zeros(0, np.int64), target.full_schema, evaluator)
    finally:
        evaluator.close()
    if not rows.num_rows:
        return []
    return plan_insert_units(table, txn, conformed_parts(
        target, rows, f"MERGE insert into {table.name}"))


def plan_insert_units(table: TableHandle, txn: TransactionCore,
                      parts: Sequence[PartitionData], *, kind: ChangeKind = "insert",
                      partitions_only: bool = False) -> list[ChangeUnit]:
    """The "insert" (or "overwrite") units of ``parts``, one per partition, with the next
    statement id, their directories registered. ``partitions_only``: ``parts`` hold just
    the partition columns, for an engine that computes the rows in its tasks and plans the
    same units again there (``partition_inserts``); the units then carry no rows."""
    if not parts:
        return []
    target = statement_target(table)
    write_id = txn.write_id(table.name)
    statement = txn.next_statement_id(table.name)
    if partitions_only:
        rows = pa.concat_tables([p.rows for p in parts])
        units = partition_inserts(target, rows, txns=txn.snapshot,
                                  write_ids=txn.write_ids(table.name), write_id=write_id,
                                  statement=statement)
    else:
        units = plan_inserts(target, parts, txns=txn.snapshot,
                             write_ids=txn.write_ids(table.name), write_id=write_id,
                             statement=statement, kind=kind)
    return register(table, txn, units)


def register(table: TableHandle, txn: TransactionCore, units: list[ChangeUnit]
             ) -> list[ChangeUnit]:
    """Record the directories ``units`` may write with ``txn`` (a crash then leaves a
    record to clean), and mark units of partitions ``txn`` overwrote as refused."""
    if not units:
        return units
    write_id = units[0].write_id
    for partition, directories in planned_directories(units).items():
        if txn.overwrote(table.name, partition, write_id) is None:
            txn.will_write(WriteComponent(table.name, partition, operation_of(units[0].kind),
                                          write_id, directories))
    return [dataclasses.replace(u, refuse=txn.overwrote(table.name, u.partition, write_id))
            for u in units]

