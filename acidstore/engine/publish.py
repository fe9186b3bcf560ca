"""Publishing a statement: what its units did becomes the transaction's components.

Every write ends here, whichever engine ran its units: per partition, one metastore
component per kind of change (a MERGE's updates, deletes and inserts each show in the
record), the deleted ROW__IDs travelling with the first for the commit's conflict check, and
under Serializable an empty component for every partition a statement read without changing
it. An INSERT OVERWRITE's partitions are published even where it wrote no row: its empty
base still replaces what was there. Each statement is also registered by name with its
user-level counts (``StatementSummary``), which the commit's history row shows, including a
statement that changed nothing and so has no component.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from acidstore.engine.handle import TableHandle
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import ChangeKind, ChangeUnit, UnitOutcome, by_partition
from acidstore.engine.transaction import TransactionCore
from acidstore.metastore import Operation, StatementSummary, WriteComponent
from acidstore.read.keys import KeyArrays

__all__ = ["STATEMENT_NAMES", "operation_of", "publish_change"]

#: what ``history()`` calls each kind of statement (Delta's names where it has them)
STATEMENT_NAMES: dict[str, str] = {
    "insert": "insert", "overwrite": "insert_overwrite", "update": "update",
    "delete": "delete", "merge": "merge", "restore": "restore"}


#: the metastore's operation of each kind (a MERGE and a RESTORE may delete and insert)
_OPERATIONS: dict[ChangeKind, Operation] = {
    "insert": "insert", "overwrite": "overwrite", "update": "update", "delete": "delete",
    "merge": "update", "restore": "update"}


def publish_change(table: TableHandle, txn: TransactionCore, kind: ChangeKind,
                   units: Sequence[ChangeUnit], outcomes: Sequence[UnitOutcome], *,
                   source_rows: int = 0, metadata_version: int | None = None,
                   statement: str | None = None) -> WriteResult:
    """Register the units' outcomes with ``txn``: per partition, one component per kind
    of change (a MERGE's updates, deletes and inserts each show in history), the deleted
    ROW__IDs travelling with the first for the commit's conflict check; and the statement
    (``statement``, default the kind's name in ``STATEMENT_NAMES``) with its counts.
    ``metadata_version``: the table's version the statement planned against (default: the
    handle's), which the commit checks."""
    txn.written_at(table.name, table.location)
    result = _publish(table, txn, kind, units, outcomes, source_rows=source_rows,
                      version=table.info.metadata_version if metadata_version is None
                      else metadata_version)
    txn.ran(StatementSummary(table.name, statement or STATEMENT_NAMES[kind],
                             result.rows_inserted, result.rows_updated, result.rows_deleted))
    return result


def _publish(table: TableHandle, txn: TransactionCore, kind: ChangeKind,
             units: Sequence[ChangeUnit], outcomes: Sequence[UnitOutcome], *,
             source_rows: int, version: int) -> WriteResult:
    # the write id the statement took (a committed no-op version when nothing matched)
    write_id = units[0].write_id if units else None
    pairs = list(zip(units, outcomes, strict=True))
    matched = by_partition([o for u, o in pairs if u.kind not in ("insert", "overwrite")])
    inserted = by_partition([o for u, o in pairs if u.kind == "insert"])
    # an INSERT OVERWRITE's partitions count even where no row was written
    replaced = by_partition([o for u, o in pairs if u.kind == "overwrite"], keep_empty=True)
    reads = kind in ("delete", "update", "merge", "restore") and \
        table.isolation_level == "Serializable"
    updated = deleted = restored = 0
    for partition, done in matched.items():
        assert write_id is not None
        if kind == "restore":
            # delete events and rows put back: a delete and an insert, no update between them
            restored, deleted = restored + done.rows_inserted, deleted + done.rows_deleted
            halves: tuple[tuple[Operation, UnitOutcome], ...] = (
                ("delete", _part(done, delete=True)), ("insert", _part(done, delete=False)))
            for operation, part in halves:
                if part.rows_deleted or part.rows_inserted:
                    txn.wrote(_changed(table, partition, operation, write_id, part.directories,
                                       inserted=part.rows_inserted, deleted=part.rows_deleted,
                                       files_of=part, read=reads, version=version),
                              part.deleted)
            continue
        # each update writes one delete event and one new row; the other delete events
        # are deletes (a DELETE, or a MERGE's WHEN MATCHED DELETE)
        new_rows = done.rows_inserted if kind != "delete" else 0
        updated, deleted = updated + new_rows, deleted + done.rows_deleted - new_rows
        keys: KeyArrays | None = done.deleted
        if new_rows:
            txn.wrote(_changed(table, partition, "update", write_id, done.directories,
                               inserted=new_rows, deleted=new_rows, files_of=done, read=reads,
                               version=version), keys)
            keys = None
        if done.rows_deleted > new_rows:
            dirs = tuple(d for d in done.directories if "delete_delta_" in d)
            txn.wrote(_changed(table, partition, "delete", write_id, dirs, inserted=0,
                               deleted=done.rows_deleted - new_rows,
                               files_of=done if keys is not None else None, read=reads,
                               version=version), keys)
    written_by: tuple[tuple[Operation, dict[str, UnitOutcome]], ...] = (
        ("insert", inserted), ("overwrite", replaced))
    for operation, written in written_by:
        for partition, done in written.items():
            assert write_id is not None
            txn.wrote(_changed(table, partition, operation, write_id, done.directories,
                               inserted=done.rows_inserted, deleted=0, files_of=done,
                               read=reads, version=version))
    if reads and write_id is not None:
        # partitions the statement read but changed nothing in: under Serializable an
        # append there after its snapshot is a row its WHERE/ON might have matched
        for partition in sorted({u.partition for u in units} - {*matched, *inserted}):
            txn.wrote(_changed(table, partition, operation_of(kind), write_id, (), inserted=0,
                               deleted=0, files_of=None, read=True, version=version))
    parts = tuple(sorted({*matched, *inserted, *replaced}))
    added = sum(o.rows_inserted for o in [*inserted.values(), *replaced.values()])
    if kind in ("insert", "overwrite"):
        return WriteResult(txn.txn_id, write_id, kind, rows_inserted=added, partitions=parts)
    if kind == "restore":
        return WriteResult(txn.txn_id, write_id, kind, rows_inserted=restored,
                           rows_deleted=deleted, partitions=parts,
                           metrics={"num_restored_rows": restored, "num_removed_rows": deleted})
    if kind != "merge":
        return WriteResult(txn.txn_id, write_id, kind, partitions=parts,
                           rows_deleted=deleted, rows_updated=updated)
    metrics = {"num_source_rows": source_rows, "num_target_rows_updated": updated,
               "num_target_rows_deleted": deleted, "num_target_rows_inserted": added}
    return WriteResult(txn.txn_id, write_id, "merge", rows_inserted=added,
                       rows_updated=updated, rows_deleted=deleted, partitions=parts,
                       metrics=metrics)


def _part(done: UnitOutcome, *, delete: bool) -> UnitOutcome:
    """The delete events (``delete``) or the new rows of one partition's outcome, with only
    their own directories and files, so that each component records exactly what its
    directories hold."""
    def is_delete(path: str) -> bool:
        return path.rstrip("/").rsplit("/", 1)[-1].startswith("delete_delta_")

    files = tuple(f for f in done.bucket_files if is_delete(f[0].rpartition("/")[0]) == delete)
    return dataclasses.replace(
        done, directories=tuple(d for d in done.directories if is_delete(d) == delete),
        rows_deleted=done.rows_deleted if delete else 0,
        rows_inserted=0 if delete else done.rows_inserted,
        files=len(files), bytes=sum(size for _, size in files), bucket_files=files,
        deleted=done.deleted if delete else KeyArrays.empty())


def _changed(table: TableHandle, partition: str, operation: Operation, write_id: int,
             directories: tuple[str, ...], *, inserted: int, deleted: int,
             files_of: UnitOutcome | None, read: bool, version: int) -> WriteComponent:
    """A component; ``files_of`` None when another component of the same directories
    already counts their files and bytes. ``read``: the statement read the partition (a
    Serializable table's conflict scope)."""
    return WriteComponent(table.name, partition, operation, write_id, directories,
                          rows_inserted=inserted, rows_deleted=deleted,
                          files=files_of.files if files_of else 0,
                          bytes=files_of.bytes if files_of else 0, read=read,
                          metadata_version=version,
                          bucket_files=files_of.bucket_files if files_of else None)


def operation_of(kind: ChangeKind) -> Operation:
    """The metastore's operation for units of ``kind`` (``_OPERATIONS``)."""
    return _OPERATIONS[kind]
