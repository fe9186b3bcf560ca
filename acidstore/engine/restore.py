"""RESTORE (Delta's): a table's rows become those of an earlier version, as a new commit.

It is a statement of the one write pipeline, as DELETE, UPDATE and MERGE are: planned at its
transaction's snapshot into units any engine runs (``run``: this process's threads, or Spark's
tasks), published by ``publish_change`` and committed with the transaction, so it is atomic,
runs inside ``wh.transaction()`` too, and meets concurrent writers with the commit's row-level
conflict check (its delete events are compared as an UPDATE's are).

The plan reads the version to restore as ``to_arrow(as_of=...)`` does (the same snapshot,
leased while the statement runs, so the cleaner keeps what it reads), with today's schema (a
column added since reads NULL in the rows it writes back). Both snapshots' splits are grouped
by the unit that owns them (a partition, and a bucket of a bucketed table): a unit compares
their ROW__IDs (``restore_match``), writes delete events for the rows present now and absent
then, and writes again, with new ROW__IDs, the rows present then and absent now. Rows in both
are neither read nor written: the table is never rewritten.
"""

from __future__ import annotations

from datetime import datetime

from acidstore.config import LEASE_TTL_SECONDS
from acidstore.engine.handle import TableHandle
from acidstore.engine.publish import publish_change
from acidstore.engine.restore_match import RestoreSpec, unit_splits
from acidstore.engine.results import WriteResult
from acidstore.engine.statement import ChangeUnit, Executor, run_units
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.writes import register, statement_target
from acidstore.errors import InvalidInputError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.read.time_travel import lease_snapshot, past_snapshot, release_lease

__all__ = ["plan_restore", "restore", "run_restore"]


def restore(table: TableHandle, version: int | datetime, *, run: Executor = run_units
            ) -> WriteResult:
    """Restore ``table`` to ``version`` (a committed write id, or a moment) in the handle's
    transaction, or in one of its own."""
    return table.run(lambda txn: run_restore(table, txn, version, run=run))


def run_restore(table: TableHandle, txn: TransactionCore, version: int | datetime, *,
                run: Executor = run_units) -> WriteResult:
    """Plan, execute (``run``) and publish one RESTORE in ``txn``."""
    _check_version(table, txn, version)
    metastore, name = table.metastore, table.name
    # the version's snapshot as time travel takes it from this transaction's, leased while
    # the statement reads it (the transaction's own snapshot needs no lease of its own)
    txns, write_ids, lease = lease_snapshot(
        metastore, name, lambda: past_snapshot(metastore, name, version, txn.snapshot,
                                               txn.write_ids(name)),
        as_of=version, own_transaction=True, ttl_seconds=LEASE_TTL_SECONDS)
    try:
        units = plan_restore(table, txn, txns, write_ids)
        return publish_change(table, txn, "restore", units, run(units))
    finally:
        release_lease(metastore, lease)


def plan_restore(table: TableHandle, txn: TransactionCore, txns: ValidTxnList,
                 write_ids: ValidWriteIdList) -> list[ChangeUnit]:
    """The units of a RESTORE to the snapshot (``txns``, ``write_ids``), one per partition
    (and bucket) that holds files now or then, their directories registered. No units, and
    no write id taken, when neither snapshot has a file."""
    target = statement_target(table)
    now = table.scan_at(txn.snapshot, txn.write_ids(table.name), columns=[], with_row_id=True)
    then = table.scan_at(txns, write_ids, columns=[], with_row_id=True)
    bucketed = bool(target.bucket_by) and target.buckets > 0
    current = unit_splits(target.location, bucketed, now.planned)
    past = unit_splits(target.location, bucketed, then.planned)
    if not current and not past:
        return []
    write_id = txn.write_id(table.name)
    statement = txn.next_statement_id(table.name)
    txn.next_statement_id(table.name)  # the rows written back (Hive 4: delete events s, rows s+1)
    return register(table, txn, [
        ChangeUnit(target, "restore", key[0], now.txns, now.write_ids, write_id, statement, None,
                   (), tuple(current.get(key, ())),
                   restore=RestoreSpec(then.txns, then.write_ids, tuple(past.get(key, ()))))
        for key in sorted({*current, *past})])


def _check_version(table: TableHandle, txn: TransactionCore, version: object) -> None:
    """A write id must be a committed version this transaction sees: ``as_of`` reads one that
    never committed as the version below it, which a RESTORE must not silently take."""
    where = f"RESTORE of {table.name}"
    if isinstance(version, bool) or not isinstance(version, (int, datetime)):
        raise InvalidInputError(f"{where} takes the version to restore: a write id (an int "
                                f"from history()) or a datetime, got {version!r}")
    if isinstance(version, int) and (
            version not in table.metastore.write_id_commit_times(table.name)
            or not txn.write_ids(table.name).is_write_id_valid(version)):
        raise InvalidInputError(
            f"{where}: write id {version} is not a committed version of {table.name} (a write "
            "id whose statement failed or aborted, or that is still open or not taken yet, "
            "never becomes one); restore to a write id that history() lists")
