"""The metastore's ``Transactions`` role (transactions and their commits): open, heartbeat and
abort transactions, allocate write ids, take snapshots, record what a writer is about to write,
and commit it with the write-write conflict check; idempotent application versions; the open
transactions and their locks as introspection shows them.

Callers: every writer (a statement, streaming ingest, a compactor) and every reader that takes
a snapshot. Facts come from Hive (the § numbers: docs/format.md, "The sections the code
cites"): §6.5 (a table's ``ValidWriteIdList`` from a transaction snapshot), §12 (allocation,
commit, write-write conflicts), §14 (heartbeats and the timeout).

What it promises (checked by ``TransactionsContract``, ``WriteIdsContract`` and
``CommitsContract`` of ``acidstore.metastore.testing``):
- allocation of txn ids, write ids and commit sequence numbers never repeats, across threads
  and processes; a table's write ids are contiguous, a txn's write id on a table is reused;
- a snapshot lists every open and aborted txn below its high watermark and never a committed
  one; a snapshot handed out never changes (values are frozen);
- first committer wins: a commit that overlaps a write committed after its snapshot (same
  table and partition, both update/delete/overwrite) aborts with Hive's message, and what it
  offered stays listed for the cleaner;
- calls that open, commit, heartbeat or build snapshots first abort open transactions whose
  last heartbeat is older than *their own* timeout: the ``timeout_seconds`` of the backend
  object that opened them, stored with them (§14), not the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.records import (
    AppVersion,
    CommitCheck,
    CommitInfo,
    CommittedWrite,
    CompactionOutput,
    LockInfo,
    PlannedWrite,
    StatementSummary,
    TxnInfo,
    TxnKind,
    WriteComponent,
)

__all__ = ["Transactions"]


@runtime_checkable
class Transactions(Protocol):
    """Transactions, snapshots, write ids and commits."""

    def open_transaction(self, *, user: str, host: str, kind: TxnKind = "default",
                         writes: Sequence[PlannedWrite] = ()) -> TxnInfo:
        """Allocate a global txn id and record its snapshot (§6.5). ``writes``: also allocate
        the write id of each planned write's table and record its directories, as
        ``allocate_write_id`` and ``record_write`` would right after, in the same durable
        metastore transaction (``TxnInfo.write_ids`` holds the ids)."""
        ...

    def heartbeat(self, txn_id: int) -> None:
        """Keep an open transaction alive past the timeout."""
        ...

    def open_transaction_batch(self, count: int, *, user: str, host: str,
                               writes: Sequence[PlannedWrite] = ()) -> list[TxnInfo]:
        """Open ``count`` (1 to 1000, Hive's ``hive.txn.max.open.batch``) transactions in
        one durable metastore transaction, in txn id order, each as ``open_transaction(
        writes=writes)`` opens one: Hive's ``openTxns`` for a streaming transaction batch.
        Each planned table's write ids are contiguous across the batch (one allocation,
        as Hive's ``allocateTableWriteIds`` for a batch); each txn's snapshot lists the
        batch's earlier txns as open."""
        ...

    def heartbeat_batch(self, txn_ids: Sequence[int]) -> list[int]:
        """Heartbeat every open txn of ``txn_ids`` in one metastore transaction (Hive's
        ``heartbeatTxnRange``); returns, sorted, the ids that are not open (aborted by the
        timeout or otherwise, committed, unknown): those are left as they are."""
        ...

    def allocate_write_id(self, txn_id: int, table: str) -> int:
        """The txn's write id on ``table``: allocated once, then reused (§12.1)."""
        ...

    def valid_txns(self, txn_id: int | None = None) -> ValidTxnList:
        """A fresh snapshot, or the one recorded when ``txn_id`` opened."""
        ...

    def valid_write_ids(
        self, table: str, snapshot: ValidTxnList, txn_id: int | None = None
    ) -> ValidWriteIdList:
        """``table``'s write-id list under ``snapshot``; ``txn_id``'s own writes are visible."""
        ...

    def record_write(self, txn_id: int, component: WriteComponent) -> None:
        """Register what a writer is about to write, before it writes any file."""
        ...

    def commit(
        self,
        txn_id: int,
        components: Sequence[WriteComponent],
        *,
        check: CommitCheck | None = None,
        outputs: Sequence[CompactionOutput] = (),
        statements: Sequence[StatementSummary] = (),
    ) -> CommitInfo:
        """Commit atomically, aborting instead on a write-write conflict (§12.2). A
        compaction passes the directories it wrote as ``outputs`` (no components: it cannot
        conflict); they are stored with the commit, and refused unless they carry this
        transaction's ``_v<txn_id>``. ``statements``, in the order they ran, name and count
        each table's history row (``HistoryEntry``; none: its components do)."""
        ...

    def overlapping_writes(
        self, txn_id: int, components: Sequence[WriteComponent]
    ) -> list[CommittedWrite]:
        """The committed writes ``commit`` would hand its ``check`` if it ran now, read
        without any lock: a committer reads their files first, so that the commit's critical
        section (which other commits and reader leases wait for) does no file IO. A commit
        may still find more (those that land in between); empty if the txn is not open."""
        ...

    def abort(self, txn_id: int, reason: str = "") -> None:
        """Abort an open transaction (no-op if already aborted)."""
        ...

    def record_app_version(self, txn_id: int, table: str, app_id: str, version: int) -> None:
        """Make ``txn_id`` an idempotent write of ``app_id`` at ``version`` on ``table``. Its
        commit then records the version in the same metastore transaction, or, if a version
        of ``app_id`` at least as high was committed to ``table`` meanwhile, aborts with
        ``ConcurrentTransactionError``. A second, different version of the same application
        and table in one transaction is refused (``InvalidInputError``)."""
        ...

    def app_versions(self, table: str, app_id: str | None = None) -> list[AppVersion]:
        """The committed version of each application id on ``table`` (only ``app_id``'s when
        given), ordered by application id."""
        ...

    # --- introspection ----------------------------------------------------------------------------

    def show_transactions(self) -> list[TxnInfo]:
        """Every transaction, ordered by txn id."""
        ...

    def show_locks(self) -> list[LockInfo]:
        """Locks of open transactions, ordered by lock id."""
        ...
