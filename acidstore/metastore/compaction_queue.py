"""The metastore's ``CompactionQueue`` role: the compaction queue (Hive's COMPACTION_QUEUE and
COMPLETED_COMPACTIONS) and the cleaner's bookkeeping.

The queue lives in the metastore so that initiators, workers and cleaners in different
processes (or on different machines) coordinate through it, and a dead worker's claim can be
taken over. An entry moves ``initiated -> working -> ready for cleaning -> succeeded``
(``failed``, ``refused`` and ``did not initiate`` end one without output; the value objects and
states are in ``queue``).

What it promises (checked by ``acidstore.metastore.testing.CompactionQueueContract``):
- at most one entry per partition is initiated or working; a claim hands out the oldest
  claimable entry, and never two entries of one partition at once;
- a claim is its worker's until it goes without a heartbeat for the window *that worker*
  claimed with; after that another worker takes it over and the first one's calls fail;
- an entry is ready for cleaning only once every transaction that was open when the
  compaction committed has finished (spec §11);
- ``forget_aborted`` drops only aborted writes, which then stop being exceptions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.queue import CompactionInfo, CompactionKind, CompactionState

__all__ = ["CompactionQueue"]


@runtime_checkable
class CompactionQueue(Protocol):
    """The compaction queue, and what the cleaner records as it goes."""

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

    def show_compactions(self) -> list[CompactionInfo]:
        """The queue and its history, ordered by id."""
        ...

    # --- the cleaner's needs ----------------------------------------------------------------------

    def compactions_ready_for_cleaning(self) -> list[CompactionInfo]:
        """Entries whose readers have all finished (spec §11)."""
        ...

    def begin_cleaning(self, table: str, partition: str, txns: ValidTxnList) -> list[int]:
        """Mark the compactions of ``partition`` that ``txns`` sees committed as being cleaned,
        before the cleaner removes anything they replaced; returns the entries marked."""
        ...

    def forget_aborted(self, table: str, write_ids: Iterable[int]) -> int:
        """Drop the metadata of aborted writes whose files are gone (they stop being
        exceptions in snapshots); returns how many write ids were forgotten."""
        ...
