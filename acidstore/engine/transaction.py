"""Transactions in the engine: one snapshot, many statements and tables, one commit.

A transaction opens in the metastore (a global txn id and a fixed snapshot), allocates one write
id per table it writes, numbers its statements per table, is told what its writers write, and
publishes it all with one metastore commit, after the write-write check of
``conflict_check``. A failed transaction refuses further use; an aborted one removes its files
once the metastore has recorded the abort. The public ``acidstore.Transaction`` wraps one.
"""

from __future__ import annotations

import contextlib
import getpass
import socket
import threading
from collections import defaultdict
from collections.abc import Sequence
from types import TracebackType
from typing import Literal

import pyarrow.fs as pafs

from acidstore.engine.conflict_check import ConflictCheck
from acidstore.engine.core import WarehouseCore
from acidstore.engine.heartbeat import Heartbeat
from acidstore.errors import (
    AcidStoreError,
    CommitFailedError,
    CommitStateUnknownError,
    InvalidInputError,
    MetastoreError,
    NestedTransactionError,
    StorageError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import durable
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import (
    CommitInfo,
    CompactionOutput,
    PlannedWrite,
    StatementSummary,
    TxnInfo,
    TxnKind,
    WriteComponent,
)
from acidstore.read.keys import KeyArrays

__all__ = ["State", "TransactionCore", "current_user"]

# "unknown": the metastore could not say whether the commit landed; the files stay
State = Literal["open", "committed", "aborted", "unknown"]


@storage_boundary
class TransactionCore:
    """An open transaction of ``warehouse``. Its heartbeat thread (every
    ``heartbeat_interval`` seconds, None: none) starts once it is due."""

    def __init__(self, warehouse: WarehouseCore, *, heartbeat_interval: float | None,
                 attach: tuple[int, ValidTxnList] | None = None,
                 kind: TxnKind = "default", writes: Sequence[PlannedWrite] = ()) -> None:
        self.core = warehouse
        self._warehouse = warehouse
        self._metastore = warehouse.metastore
        #: write ids and records the open already made (``writes``): not asked for again
        self._allocated: dict[str, int] = {}
        self._recorded: list[WriteComponent] = []
        if attach is None:
            if kind != "compaction":  # rewrites rows, changes none: independent by nature
                _refuse_nested(warehouse)
            info = self._metastore.open_transaction(user=current_user(),
                                                    host=socket.gethostname(),
                                                    kind=kind, writes=writes)
            self.txn_id: int = info.txn_id
            self.snapshot: ValidTxnList = info.snapshot
            self._allocated = dict(info.write_ids)
            self._recorded = [c for w in writes
                              for c in w.components(info.write_ids[w.table])]
        else:
            self.txn_id, self.snapshot = attach
        self.kind: TxnKind = kind
        self._state: State = "open"
        #: the error of a statement that failed and so aborted the transaction (``fail``)
        self._failure: BaseException | None = None
        self._components: list[WriteComponent] = []
        #: a compaction's output directories, stored by its commit (``compacted``)
        self._outputs: list[CompactionOutput] = []
        #: what writers announced (``will_write``): removed on abort even if never published
        self._planned: list[WriteComponent] = []
        self._deleted: dict[tuple[str, str], list[KeyArrays]] = defaultdict(list)
        self._statements: dict[str, int] = defaultdict(int)
        #: the statements published, in order: what the commit's history rows show
        self._ran: list[StatementSummary] = []
        self._overwritten: set[tuple[str, str]] = set()
        #: table -> where its statements wrote (``written_at``): what the commit flushes
        self._locations: dict[str, str] = {}
        self._heartbeat = Heartbeat(self._metastore, self.txn_id, heartbeat_interval) \
            if heartbeat_interval is not None else None

    @classmethod
    def attach(cls, warehouse: WarehouseCore, txn_id: int, snapshot: ValidTxnList
               ) -> TransactionCore:
        """An open transaction begun by another process, to publish or abort its work there.

        Spark's Python data source plans a write in one driver-side worker process and
        commits it in another; the second one attaches. No heartbeat thread runs here: the
        process that attaches only commits or aborts.
        """
        return cls(warehouse, heartbeat_interval=None, attach=(txn_id, snapshot))

    @classmethod
    def of_batch(cls, warehouse: WarehouseCore, opened: TxnInfo,
                 writes: Sequence[PlannedWrite] = ()) -> TransactionCore:
        """A transaction of a streaming batch, opened with ``writes`` by
        ``Metastore.open_transaction_batch``: its write ids and recorded directories are
        known, and no heartbeat thread runs here (the batch heartbeats its open
        transactions together, in one metastore call)."""
        txn = cls(warehouse, heartbeat_interval=None, attach=(opened.txn_id, opened.snapshot))
        txn._allocated = dict(opened.write_ids)
        txn._recorded = [c for w in writes for c in w.components(opened.write_ids[w.table])]
        return txn

    @classmethod
    def begin(cls, warehouse: WarehouseCore, *, kind: TxnKind = "default",
              writes: Sequence[PlannedWrite] = ()) -> TransactionCore:
        """A new transaction of ``warehouse`` (its heartbeat interval). ``writes``: the
        INSERTs it starts with, when known up front (their write ids are allocated and
        directories recorded as it opens, which saves two metastore round trips)."""
        return cls(warehouse, heartbeat_interval=warehouse.heartbeat_interval, kind=kind,
                   writes=writes)

    # --- state, commit and abort ---------------------------------------------------------------

    @property
    def state(self) -> State:
        return self._state

    def check_open(self) -> None:
        """Refuse use of a transaction that is no longer open (``TransactionStateError``)."""
        self._check_open()

    def commit(self) -> CommitInfo:
        """Publish every write of the transaction at once, or raise and publish nothing.

        A commit call that fails without a clear answer (a lost acknowledgement, a metastore
        that failed mid-way) is settled with the metastore before anything is removed: if it
        landed, this returns its commit; files are deleted only once the metastore says the
        transaction is aborted; when nobody can tell, ``CommitStateUnknownError`` is raised
        and the files stay for the cleaner to judge.
        """
        self._check_open()
        self._stop_heartbeat()
        if self._heartbeat is not None and self._heartbeat.error is not None:
            self._settle_aborted(f"heartbeat failed: {self._heartbeat.error}")
            raise TransactionAbortedError(
                f"transaction {self.txn_id} was aborted while it ran: {self._heartbeat.error}")
        try:
            self._flush_files()
        except OSError as exc:
            self._settle_aborted(f"flushing its files failed: {exc}")
            raise afs.storage_error(
                exc, None, action=f"flush the files of transaction {self.txn_id} to disk (it "
                "is aborted and nothing of it is visible)") from exc
        check = ConflictCheck(self._warehouse, self.txn_id, self._deleted)
        check.prefetch(self._metastore, self._components)
        try:
            info = self._metastore.commit(self.txn_id, self._components, check=check,
                                          outputs=self._outputs, statements=self._ran)
        except (CommitFailedError, StorageError):
            # a definite answer: the metastore aborted the transaction before refusing it,
            # or rolled its commit back (a storage failure under the metastore or of a file
            # the conflict check read); the files go once the abort is recorded
            self._settle_aborted("commit refused")
            raise
        except Exception as exc:
            landed = self._settle_aborted(f"commit failed: {type(exc).__name__}: {exc}")
            if landed is not None:
                self._state = "committed"
                return landed
            if self._state == "unknown":
                raise CommitStateUnknownError(
                    f"transaction {self.txn_id}: the commit failed ({exc}) and the metastore "
                    "cannot tell whether it landed; its files are kept. Read the table (or "
                    "show_transactions) before retrying") from exc
            if isinstance(exc, AcidStoreError) and not isinstance(exc, MetastoreError):
                raise  # already says what was wrong (bad input, a dropped table)
            raise CommitFailedError(
                f"transaction {self.txn_id} did not commit ({exc}); it is aborted and nothing "
                "of it is visible, so it is safe to retry") from exc
        self._state = "committed"
        return info

    def abort(self, reason: str = "aborted by the caller") -> None:
        """Abort: nothing this transaction wrote becomes visible; its files are removed once
        the metastore has recorded the abort (otherwise ``CommitStateUnknownError``)."""
        self._failure = None  # the caller has dealt with a failed statement
        if self._state == "aborted":
            return
        self._check_open()
        self._stop_heartbeat()
        landed = self._settle_aborted(reason)
        if landed is not None:
            self._state = "committed"
            raise TransactionStateError(
                f"transaction {self.txn_id} is committed (by another process); it cannot abort")
        if self._state == "unknown":
            raise CommitStateUnknownError(
                f"transaction {self.txn_id}: the metastore could not record the abort; its "
                "files are kept until it times out and the cleaner removes them")

    def __enter__(self) -> TransactionCore:
        if self.kind != "compaction":
            _refuse_nested(self._warehouse)
            _blocks()[id(self._warehouse)] = self
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if _blocks().get(id(self._warehouse)) is self:
            del _blocks()[id(self._warehouse)]
        if exc_type is None and self._failure is not None:
            # the statement's error was caught inside the block: leaving it normally must not
            # look like a commit
            raise TransactionAbortedError(
                f"transaction {self.txn_id} did not commit: a statement in it failed and "
                f"aborted it ({type(self._failure).__name__}: {self._failure}); nothing of it "
                "is visible") from self._failure
        if self._state != "open":
            return
        if exc_type is None:
            self.commit()
        else:
            # the caller's exception is what matters; an abort the metastore could not record
            # leaves the state "unknown" and the files for the cleaner
            with contextlib.suppress(AcidStoreError):
                self.abort(f"{exc_type.__name__}: {exc}")

    # --- used by tables writing inside this transaction ----------------------------------------

    def write_id(self, table: str) -> int:
        self._check_open()
        allocated = self._allocated.get(table.lower())
        if allocated is None:
            # the metastore returns a transaction the same write id per table (Hive's
            # allocate_table_write_ids), so one durable call per table is enough; each later
            # statement of a multi-statement transaction reads it from here
            allocated = self._metastore.allocate_write_id(self.txn_id, table)
            self._allocated[table.lower()] = allocated
        return allocated

    def next_statement_id(self, table: str) -> int:
        statement = self._statements[table]
        self._statements[table] += 1
        return statement

    def used_statement_ids(self, table: str, through: int) -> None:
        """Statement ids up to ``through`` were taken by writers elsewhere (one per Spark task):
        later statements of this transaction must number above them."""
        self._statements[table] = max(self._statements[table], through + 1)

    def write_ids(self, table: str) -> ValidWriteIdList:
        """This transaction's view of ``table``: its snapshot plus its own writes."""
        self._check_open()
        return self._metastore.valid_write_ids(table, self.snapshot, self.txn_id)

    def own_write_ids(self, table: str) -> frozenset[int]:
        """The write ids this transaction wrote (or is about to write) ``table`` with: its
        own reads see their directories, which no committed record lists yet."""
        return frozenset(c.write_id for c in [*self._components, *self._planned]
                         if c.table == table)

    def will_write(self, component: WriteComponent) -> None:
        """Tell the metastore where files are about to go, so a crash leaves a cleanable trace."""
        self._check_open()
        refused = self.overwrote(component.table, component.partition, component.write_id)
        if refused is not None:
            raise InvalidInputError(refused)
        if component in self._recorded:
            self._recorded.remove(component)  # recorded by the open (``writes``)
        else:
            self._metastore.record_write(self.txn_id, component)
        self._planned.append(component)

    def write_app_version(self, table: str, app_id: str, version: int) -> None:
        """Make this transaction the idempotent write of ``version`` of ``app_id`` on
        ``table`` (``acidstore.engine.idempotent``): recorded in the metastore, so whichever process
        commits it, the commit records the version or fails with ConcurrentTransactionError."""
        self._check_open()
        self._metastore.record_app_version(self.txn_id, table, app_id, version)

    def overwrote(self, table: str, partition: str, write_id: int) -> str | None:
        """Why this transaction may not write ``partition`` of ``table`` any more (it
        overwrote it: ``base_w`` hides every delta of write ids <= w, its own later ones
        too), or None."""
        if (table, partition) not in self._overwritten:
            return None
        where = table + (f" partition {partition}" if partition else "")
        return (f"transaction {self.txn_id} already overwrote {where}: a later write there "
                f"would be hidden by base_{write_id:07d} of the same write id; commit the "
                "overwrite first")

    def wrote(self, component: WriteComponent, deleted: KeyArrays | None = None) -> None:
        """Register what a statement wrote (and the ROW__IDs it deleted, for conflicts; when
        they are not given, a conflict check reads them back from the delete deltas)."""
        self._components.append(component)
        if component.operation == "overwrite":
            self._overwritten.add((component.table, component.partition))
        if deleted is not None and len(deleted):
            self._deleted[(component.table, component.partition)].append(deleted)

    def written_at(self, table: str, location: str) -> None:
        """Where this transaction's statements wrote ``table``'s files (their handle's
        location): the commit flushes the directories there, without asking the metastore
        where the table is (a catalog read per commit). It is where the files are, whatever
        became of the table's name since: a table dropped meanwhile fails the commit, and
        its directories, gone or not, are flushed or skipped harmlessly first."""
        self._locations[table.lower()] = location

    def ran(self, statement: StatementSummary) -> None:
        """Register a statement that ran, whatever it wrote (a DELETE that matched no row
        included): the commit names and counts each table's history row by them."""
        self._ran.append(statement)

    def compacted(self, outputs: Sequence[CompactionOutput]) -> None:
        """Register the directories a compaction wrote: the commit records them, so readers
        can tell a bucket file removed from one from a bucket that never had rows."""
        self._check_open()
        self._outputs.extend(outputs)

    def fail(self, error: BaseException) -> None:
        """A statement failed half-way: the transaction can no longer commit."""
        if self._state == "open":
            with contextlib.suppress(AcidStoreError):  # the statement's error is raised
                self.abort(f"statement failed: {type(error).__name__}: {error}")
            self._failure = error

    # --- internals -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != "open":
            why = "" if self._failure is None else (
                f" (a statement in it failed: {type(self._failure).__name__}: {self._failure})")
            raise TransactionStateError(
                f"transaction {self.txn_id} is {self._state}{why}; start a new transaction")

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.stop()

    def _settle_aborted(self, reason: str) -> CommitInfo | None:
        """End the transaction as aborted in the metastore, which is the truth: returns its
        commit if it turns out to have committed; otherwise sets the state to "aborted" (and
        removes the files) only when the metastore recorded the abort, else to "unknown"."""
        try:
            self._metastore.abort(self.txn_id, reason)  # a no-op when already aborted
        except AcidStoreError:
            try:
                landed = self._metastore.commit_info(self.txn_id)
            except AcidStoreError:
                landed = None
            if landed is not None:
                return landed
            self._state = "unknown"
            return None
        self._finish_aborted()
        return None

    def _finish_aborted(self) -> None:
        """Only after the metastore recorded the abort: remove what the transaction wrote."""
        self._state = "aborted"
        self._stop_heartbeat()
        fs = self._warehouse.filesystem
        removed: set[tuple[str, str]] = set()
        for component in [*self._components, *self._planned]:
            location = self._warehouse.location_of(component.table)
            if location is None:  # its table is gone, and its directory another's
                continue
            for directory in component.directories:
                if (location, directory) not in removed:
                    removed.add((location, directory))
                    _remove_quietly(fs, afs.join(location, directory))

    def _flush_files(self) -> None:
        """Put every directory the commit will publish on disk first (``acidstore.io.durable``):
        the metastore's commit is durable, so what it names must be too."""
        if not durable.flush_enabled():
            return
        by_table: dict[str, list[str]] = {}
        for component in self._components:
            by_table.setdefault(component.table, []).extend(component.directories)
        for output in self._outputs:
            by_table.setdefault(output.table, []).append(output.directory)
        for table, directories in by_table.items():
            location = (self._locations.get(table.lower()) or self._warehouse.location_of(table)
                        ) if directories else None
            if location is not None:  # (None: nothing written, or gone: the commit fails)
                durable.flush_written(self._warehouse.filesystem, location, directories)

#: per thread, the transaction of the ``with`` block it is in, by warehouse connection
_active = threading.local()


def _blocks() -> dict[int, TransactionCore]:
    blocks: dict[int, TransactionCore] | None = getattr(_active, "blocks", None)
    if blocks is None:
        blocks = _active.blocks = {}
    return blocks


def _refuse_nested(warehouse: WarehouseCore) -> None:
    """Refuse a transaction begun on a warehouse connection inside the ``with`` block of
    another one of the same connection, in the same thread: it would commit on its own, so
    an outer block that then failed would leave the inner work committed; writes meant for
    the outer transaction go through ``txn.table``. (Two connections are two clients, whose
    transactions are independent by design.)"""
    outer = _blocks().get(id(warehouse))
    if outer is not None:
        raise NestedTransactionError(
            f"a transaction cannot begin inside the `with` block of transaction "
            f"{outer.txn_id}: it would commit on its own even if that block failed; write "
            "through the outer transaction instead (txn.table(name).insert(...))")


def _remove_quietly(fs: pafs.FileSystem, path: str) -> None:
    """Best effort: an aborted write's files are invisible anyway; the cleaner gets leftovers."""
    with contextlib.suppress(OSError):
        fs.delete_dir(path)


def current_user() -> str:
    """Who opens transactions (shown by ``show_transactions``), as Hive records it."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
