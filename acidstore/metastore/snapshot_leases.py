"""The metastore's ``Leases`` role: reader leases on snapshots, and what the cleaner must keep
for the readers that hold them.

A reader outside any transaction (``to_batches``, a Spark scan, a lazy frame) reads files a
cleaner could remove meanwhile. A lease names the snapshot it reads; the cleaner keeps every
file a live snapshot selects. The race in between (a compaction committing after the snapshot
but before the lease, then cleaned) is closed by ``unseen_replacements``: a reader asks it after
leasing and takes a new snapshot if anything replaced directories behind its back.

What it promises (checked by ``acidstore.metastore.testing.LeasesContract``):
- a lease lives until released or expired, and an expired one cannot be revived;
- ``live_snapshots`` lists every unexpired lease and every open transaction's snapshot, and
  ``opens_in_flight`` every txn id whose snapshot it cannot list yet;
- ``unseen_replacements`` is decided by txn ids, never by clocks.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.records import LeaseInfo

__all__ = ["Leases"]


@runtime_checkable
class Leases(Protocol):
    """Snapshot leases, and the live snapshots a cleaner must respect."""

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

    def unseen_replacements(self, table: str, snapshot: ValidTxnList) -> list[int]:
        """Txn ids, sorted, of the transactions that have committed although ``snapshot``
        does not see them committed, and that made directories of ``table`` obsolete: a
        compaction's output replaces what it read, an INSERT OVERWRITE's ``base_w`` hides
        older directories, and the cleaner removes both. A reader takes its snapshot before
        its lease, so it asks this after leasing and takes a new snapshot if there is one.
        Decided by txn ids, not by times: exact whatever the clocks, and costing what
        committed since the snapshot, never the table's history."""
        ...

    # --- what the cleaner keeps for them ----------------------------------------------------------

    def live_snapshots(self, table: str) -> list[tuple[ValidTxnList, ValidWriteIdList]]:
        """Every snapshot a reader may still be reading ``table`` with: unexpired leases and
        the snapshots of open transactions. The cleaner keeps whatever these select."""
        ...

    def opens_in_flight(self) -> list[int]:
        """Txn ids handed out whose transaction is not visible yet: opens still running, whose
        snapshots ``live_snapshots`` cannot list yet (or opens that died; PostgreSQL, whose
        opens take no global lock). Always empty where an open is atomic (SQLite)."""
        ...
