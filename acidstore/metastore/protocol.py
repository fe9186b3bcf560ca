"""The metastore seam: the ``Metastore`` protocol every backend implements (the value objects
its calls take and return are in ``records``).

The metastore is the only shared mutable state of a warehouse: the catalog, the global
transaction ids, the per-table write ids and the commit log. Everything above it (writers,
readers, compaction) talks to it through this protocol only, so SQLite (one machine) and a
server database (many machines) are interchangeable and are held to one contract test suite
(``tests/test_metastore_contract.py``).

Facts come from Hive (the § numbers: docs/format.md, "The sections the code cites"): §6.5
(how a table's ``ValidWriteIdList`` is built from a transaction snapshot), §12 (allocation,
commit, write-write conflicts), §14 (heartbeats and the 300 s timeout). Values are frozen so
that a snapshot handed out can never change under a reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

import pyarrow as pa

from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.queue import (
    CompactionCommit,
    CompactionInfo,
    CompactionKind,
    CompactionState,
)
from acidstore.metastore.records import (
    AppVersion,
    CommitCheck,
    CommitInfo,
    CommittedWrite,
    CompactionOutput,
    ComponentLog,
    HistoryEntry,
    LeaseInfo,
    LockInfo,
    NewTable,
    OriginalFile,
    PlannedWrite,
    TableInfo,
    TxnInfo,
    TxnKind,
    WarehouseBinding,
    WriteComponent,
)

__all__ = ["CommitLog", "Metastore"]


@runtime_checkable
class Metastore(Protocol):
    """Catalog, transactions, write ids and commit log (layer L2).

    Contract shared by every backend (checked by the contract test suite):
    - table names are ``db.name`` or ``name`` (meaning ``default.name``), case-insensitive;
    - every mutating call is one serialized metastore transaction, safe across threads and
      processes; allocation of txn ids, write ids and commit sequence numbers never repeats;
    - calls that open, commit, heartbeat or build snapshots first abort open transactions whose
      last heartbeat is older than *their own* timeout: the ``timeout_seconds`` of the backend
      object that opened them, stored with them (§14), not the caller's.
    """

    # --- catalog ------------------------------------------------------------------------------

    def create_table(self, info_without_id: NewTable) -> TableInfo:
        """Register a table (and its database, implicitly); ``TableExistsError`` if taken."""
        ...

    def get_table(self, name: str) -> TableInfo:
        """The table, or ``TableNotFoundError``."""
        ...

    def list_tables(self, database: str | None = None) -> list[str]:
        """Full names, sorted; all databases when ``database`` is None."""
        ...

    def drop_table(self, name: str) -> TableInfo:
        """Remove the catalog entry and return what it was; history rows may stay."""
        ...

    def add_columns(self, table: str, columns: pa.Schema) -> TableInfo:
        """Append nullable ``columns`` to the table's schema and bump its
        ``metadata_version``, in one metastore transaction ordered with commits (a commit
        either precedes it or sees the new version)."""
        ...

    def add_partitions(self, table: str, partitions: Iterable[str]) -> None:
        """Register partition directories (idempotent)."""
        ...

    def list_partitions(self, table: str) -> list[str]:
        """Registered partition directories, sorted."""
        ...

    def check_writable(self) -> None:
        """Raise ``ReadOnlyWarehouseError`` when the store is read-only (an archived copy):
        asked by callers that remove files before (or without) any metastore write."""
        ...

    def record_originals(self, table: str, files: Iterable[OriginalFile]) -> None:
        """Record the original files adoption placed in ``table`` (idempotent per file):
        they belong to no write, and fsck must accept them and nothing else of their kind.
        Their partitions join ``list_partitions``, as a commit's do."""
        ...

    def original_files(self, table: str) -> list[OriginalFile]:
        """The original files recorded for ``table``, ordered by partition and name."""
        ...

    # --- transactions -------------------------------------------------------------------------

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
    ) -> CommitInfo:
        """Commit atomically, aborting instead on a write-write conflict (§12.2). A
        compaction passes the directories it wrote as ``outputs`` (no components: it cannot
        conflict); they are stored with the commit, and refused unless they carry this
        transaction's ``_v<txn_id>``."""
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

    def commit_info(self, txn_id: int) -> CommitInfo | None:
        """The commit of ``txn_id`` if it committed, else None (open, aborted or unknown).

        The truth a client asks for after a commit call failed without an answer: the request
        may have landed before the acknowledgement was lost."""
        ...

    def aborted_components(self, table: str) -> list[WriteComponent]:
        """Components of aborted transactions on ``table``: directories a cleaner may remove."""
        ...

    def committed_components(self, table: str, *, partition: str | None = None,
                             min_write_id: int | None = None,
                             below_write_id: int | None = None) -> list[WriteComponent]:
        """Components of committed transactions on ``table``: the directories and bucket
        files each committed write made, which readers must find unless replaced.

        A reader needs only the writes its selected base has not replaced, and a table keeps
        every committed write forever: ``min_write_id`` / ``below_write_id`` (write ids in
        ``[min, below)``) and ``partition`` narrow the rows so that a read costs what was
        written since its base, not the table's whole history. Ordered by txn id."""
        ...

    def compaction_outputs(self, table: str, *, partition: str | None = None,
                           txn_ids: Iterable[int] | None = None) -> list[CompactionOutput]:
        """Directories committed compactions wrote on ``table``, with their file counts:
        what a reader that selects one must find in it. ``txn_ids`` (the ``_v`` txns of the
        directories a reader selected) and ``partition`` narrow the rows."""
        ...

    # --- introspection ------------------------------------------------------------------------

    def history(self, table: str) -> list[HistoryEntry]:
        """One entry per committed write id, ordered by write id."""
        ...

    def show_transactions(self) -> list[TxnInfo]:
        """Every transaction, ordered by txn id."""
        ...

    def show_locks(self) -> list[LockInfo]:
        """Locks of open transactions, ordered by lock id."""
        ...

    def write_id_commit_times(self, table: str) -> dict[int, datetime]:
        """Committed write id -> commit time (for ``as_of`` a datetime)."""
        ...

    # --- snapshot leases ----------------------------------------------------------------------

    def acquire_lease(
        self,
        table: str,
        snapshot: ValidTxnList,
        write_ids: ValidWriteIdList,
        ttl_seconds: float,
    ) -> int:
        """Protect a reader's snapshot from the cleaner for ``ttl_seconds``. A store opened
        read-only, which no cleaner can change, records nothing and returns an id whose
        renewal and release do nothing."""
        ...

    def renew_lease(self, lease_id: int, ttl_seconds: float) -> None:
        """Extend a live lease; an expired or unknown one cannot be revived."""
        ...

    def release_lease(self, lease_id: int) -> None:
        """Drop a lease (idempotent)."""
        ...

    def active_leases(self, table: str) -> list[LeaseInfo]:
        """Unexpired leases of ``table``, ordered by lease id."""
        ...

    def live_snapshots(self, table: str) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
        """Every snapshot a reader may still be reading ``table`` with: unexpired leases and
        the snapshots of open transactions. The cleaner keeps whatever these select."""
        ...

    def opens_in_flight(self) -> list[int]:
        """Txn ids handed out whose transaction is not visible yet: opens still running, whose
        snapshots ``live_snapshots`` cannot list yet (or opens that died; PostgreSQL, whose
        opens take no global lock). Always empty where an open is atomic (SQLite)."""
        ...

    def forget_aborted(self, table: str, write_ids: Iterable[int]) -> int:
        """Drop the metadata of aborted writes whose files are gone (they stop being
        exceptions in snapshots); returns how many write ids were forgotten."""
        ...

    # --- the compaction queue -----------------------------------------------------------------

    def enqueue_compaction(self, table: str, partition: str, kind: CompactionKind,
                           reason: str) -> CompactionInfo | None:
        """Queue a compaction; None if one is already initiated or working there."""
        ...

    def log_compaction(self, table: str, partition: str, kind: CompactionKind,
                       state: CompactionState, reason: str) -> CompactionInfo:
        """Record a finished decision (``did not initiate``, ``refused``) for the history."""
        ...

    def record_compaction(self, table: str, partition: str, kind: CompactionKind,
                          reason: str, *, txn_id: int,
                          compactor_write_ids: ValidWriteIdList,
                          worker: str) -> CompactionInfo:
        """Record a compaction that runs outside the queue (``compact()`` called directly)
        *before* its transaction commits, as a ``working`` entry of ``worker`` naming
        ``txn_id`` (heartbeat now): so a committed compaction is never missing from the
        queue. The caller moves it on with ``compaction_compacted`` after the commit (or
        ``finish_compaction(..., "failed")`` once the txn is aborted); if the caller dies,
        the entry goes stale and a Worker's claim takes it over."""
        ...

    def claim_compaction(self, worker: str, stale_seconds: float) -> CompactionInfo | None:
        """Hand the oldest claimable entry to ``worker`` (taking over dead workers' ones).
        ``stale_seconds`` is stored with the claim: another worker takes it over only after
        that long without ``heartbeat_compaction``, whatever window that worker has."""
        ...

    def heartbeat_compaction(self, compaction_id: int, worker: str, *,
                             txn_id: int | None = None,
                             compactor_write_ids: ValidWriteIdList | None = None) -> None:
        """Keep a claim alive (``TransactionStateError`` once lost); records the txn."""
        ...

    def compaction_compacted(self, compaction_id: int, worker: str) -> None:
        """The compaction committed: the entry is ready for cleaning."""
        ...

    def finish_compaction(self, compaction_id: int, state: CompactionState,
                          error: str | None = None) -> None:
        """End an entry (succeeded, failed, refused)."""
        ...

    def compactions_ready_for_cleaning(self) -> list[CompactionInfo]:
        """Entries whose readers have all finished (spec §11)."""
        ...

    def show_compactions(self) -> list[CompactionInfo]:
        """The queue and its history, ordered by id."""
        ...

    def begin_cleaning(self, table: str, partition: str, txns: ValidTxnList) -> list[int]:
        """Mark the compactions of ``partition`` that ``txns`` sees committed as being cleaned,
        before the cleaner removes anything they replaced; returns the entries marked."""
        ...

    def compactions_committed_after(self, table: str, point: int | datetime
                                    ) -> list[CompactionCommit]:
        """Compactions of ``table`` committed after ``point``: after the commit that made the
        write ids up to ``point`` visible (an int), or after a moment (a datetime)."""
        ...

    def unseen_replacements(self, table: str, snapshot: ValidTxnList) -> list[int]:
        """Txn ids, sorted, of the transactions that have committed although ``snapshot``
        does not see them committed, and that made directories of ``table`` obsolete: a
        compaction's output replaces what it read, an INSERT OVERWRITE's ``base_w`` hides
        older directories, and the cleaner removes both. A reader takes its snapshot before
        its lease, so it asks this after leasing and takes a new snapshot if there is one.
        Decided by txn ids, not by times: exact whatever the clocks, and costing what
        committed since the snapshot, never the table's history."""
        ...

    # --- the store's clock and the warehouse it serves ------------------------------------------

    @property
    def url(self) -> str:
        """The store as a URL without a password (``sqlite:///path``,
        ``postgresql://user@host:port/db``), as messages and a warehouse's marker name it."""
        ...

    def current_time(self) -> datetime:
        """Now, on the clock commit times come from (PostgreSQL: the server's; SQLite: this
        machine's), so that a client compares a commit time with a time of the same clock
        (the cleaner's retention) whatever its own clock says."""
        ...

    def warehouse_binding(self) -> WarehouseBinding | None:
        """The warehouse this store serves, as recorded by ``bind_warehouse``; None if no
        warehouse has bound it yet (a new store, or one made before schema version 13)."""
        ...

    def bind_warehouse(self, binding: WarehouseBinding, *, replacing: WarehouseBinding | None,
                       warehouse: str) -> WarehouseBinding | None:
        """Record ``binding`` if the recorded one is ``replacing`` (None: none), atomically;
        return the binding in place afterwards, which the caller compares with its own (a
        client binding the same new store at the same moment may have won). Once the store
        holds ``binding``, this object creates and drops tables only while it still does:
        a store relocated to another warehouse since refuses them with
        ``MetastoreMismatchError`` naming ``warehouse`` (the root ``binding`` stands for)."""
        ...

    def close(self) -> None:
        """Release connections; the object is unusable afterwards."""
        ...


@runtime_checkable
class CommitLog(Protocol):
    """A metastore whose commits are numbered in the order readers see them, so that a
    reader can hold a table's committed components and ask only for those committed since
    (``read.record_memory``). SQLite's are (one database write lock, WAL snapshots);
    PostgreSQL's are not (commits on different tables run in parallel, so a sequence number
    can be seen before a smaller one commits), so it does not offer this."""

    def committed_log(self, table: str, *, min_write_id: int = 0,
                      after_seq: int | None = None) -> ComponentLog:
        """Components of ``table`` in one snapshot: of every committed write with write id
        at least ``min_write_id`` (``after_seq`` None), or of every commit numbered above
        ``after_seq`` whatever its write id; ordered by txn id, then component id."""
        ...
