"""The metastore seam: the role protocols every backend implements, the ``Metastore`` protocol
that combines them, and the few intersections callers that need two roles depend on.

The metastore is the only shared mutable state of a warehouse: the catalog, the global
transaction ids, the per-table write ids and the commit log. Everything above it (writers,
readers, compaction) talks to it through these protocols only, so SQLite (one machine) and a
server database (many machines) are interchangeable and are held to one contract suite
(``acidstore.metastore.testing``, which a new backend's tests subclass).

The roles, one module each (a method belongs to exactly one):
- ``Catalog`` (``table_catalog``): tables, partitions, original files, the warehouse binding;
- ``Transactions`` (``transactions``): open, heartbeat, abort, write ids, snapshots,
  recorded writes and commits, application versions, locks;
- ``Leases`` (``snapshot_leases``): reader leases, and the live snapshots a cleaner keeps;
- ``CompactionQueue`` (``compaction_queue``): the queue, and the cleaner's bookkeeping;
- ``History`` (``history``): committed and aborted writes, commit times, what time travel and
  the change feed ask (and ``CommitLog``, an optional extension of it).

A caller depends on the roles it uses, so a reader cannot commit by accident, a test double
implements only what its caller needs, and what a caller can do shows in its signature. The
value objects the calls pass are in ``records`` and ``queue``: frozen, so that a snapshot
handed out can never change under a reader.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from acidstore.metastore.compaction_queue import CompactionQueue
from acidstore.metastore.history import CommitLog, History
from acidstore.metastore.snapshot_leases import Leases
from acidstore.metastore.table_catalog import Catalog
from acidstore.metastore.transactions import Transactions

__all__ = ["Catalog", "CommitLog", "CompactionQueue", "History", "Leases", "Metastore",
           "SnapshotLeasing", "TableRecord", "Transactions"]


@runtime_checkable
class Metastore(Catalog, Transactions, Leases, CompactionQueue, History, Protocol):
    """Every role of the metastore: what a backend implements and a warehouse holds.

    Contract shared by every role (checked by ``acidstore.metastore.testing``):
    - every mutating call is one serialized metastore transaction, safe across threads and
      processes sharing the store;
    - a refused call (an invalid argument, a state error) changes nothing.

    ``close`` belongs to no role: whoever opened the store owns its whole ``Metastore`` and
    closes it; a caller handed one role borrows the store and has no business closing it.
    """

    def close(self) -> None:
        """Release connections; the object is unusable afterwards."""
        ...


@runtime_checkable
class TableRecord(Catalog, History, Protocol):
    """A table's definition and the record of its writes: what a reader plans from (the
    committed writes, compaction outputs and original files it must find on disk) and what
    time travel resolves a moment with (the table's creation and commit times)."""


@runtime_checkable
class SnapshotLeasing(Leases, History, Protocol):
    """What a reader needs to lease a snapshot safely, the past ones included: the lease,
    the replacements it may have missed, and the compactions a past snapshot reads around."""
