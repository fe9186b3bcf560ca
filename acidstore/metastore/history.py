"""The metastore's ``History`` role: the record of what was written and when. Every call only
reads.

Callers: readers check what they list against the committed writes' record and the
compactions' outputs (``read.recorded``); time travel and the change feed turn moments into
write ids and find the compactions committed since; fsck and the cleaner ask when a directory
became visible and which aborted writes left files; ``Table.history()`` shows one row per
committed write id and per committed compaction. ``CommitLog`` is an optional extension for
stores whose commits are numbered in the order readers see them.

What it promises (checked by ``acidstore.metastore.testing.HistoryContract``):
- a committed component never changes and is never removed (only aborted writes' are);
- commit times come from the store's clock (``current_time``) and rise with commit order;
- narrowed answers (a partition, a write-id range, some txns, many partitions at once) are
  exactly the rows of the whole answer that match, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol, runtime_checkable

from acidstore.metastore.queue import CompactionCommit
from acidstore.metastore.records import (
    CommitInfo,
    CompactionOutput,
    ComponentLog,
    HistoryEntry,
    WriteComponent,
)

__all__ = ["CommitLog", "History"]


@runtime_checkable
class History(Protocol):
    """Committed and aborted writes, compaction outputs, and their commit times."""

    def history(self, table: str) -> list[HistoryEntry]:
        """One entry per committed write id, ordered by write id, and one per committed
        compaction (its ``write_id`` None) before the first write that committed after it."""
        ...

    def write_id_commit_times(self, table: str) -> dict[int, datetime]:
        """Committed write id -> commit time (for ``as_of`` a datetime)."""
        ...

    def commit_info(self, txn_id: int) -> CommitInfo | None:
        """The commit of ``txn_id`` if it committed, else None (open, aborted or unknown).

        The truth a client asks for after a commit call failed without an answer: the request
        may have landed before the acknowledgement was lost."""
        ...

    def current_time(self) -> datetime:
        """Now, on the clock commit times come from (PostgreSQL: the server's; SQLite: this
        machine's), so that a client compares a commit time with a time of the same clock
        (the cleaner's retention) whatever its own clock says."""
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

    def compaction_outputs_by_partition(self, table: str, partitions: Iterable[str]
                                        ) -> dict[str, list[CompactionOutput]]:
        """``compaction_outputs(table, partition=p)`` of each of ``partitions`` at once:
        every partition asked for is a key (its list may be empty), its outputs in the same
        order. What a read of many partitions plans from: one request to the store for all
        of them rather than one each (a network round trip each on a server)."""
        ...

    def committed_components_by_partition(self, table: str, floors: Mapping[str, int]
                                          ) -> dict[str, list[WriteComponent]]:
        """``committed_components(table, partition=p, min_write_id=floor)`` of each
        ``(p, floor)`` of ``floors`` at once: every partition asked for is a key, its
        components in the same (txn) order. Each partition has a floor of its own (its
        selected base's write id) so that no partition's writes below its base are read."""
        ...

    def aborted_components(self, table: str) -> list[WriteComponent]:
        """Components of aborted transactions on ``table``: directories a cleaner may remove."""
        ...

    def compactions_committed_after(self, table: str, point: int | datetime
                                    ) -> list[CompactionCommit]:
        """Compactions of ``table`` committed after ``point``: after the commit that made the
        write ids up to ``point`` visible (an int), or after a moment (a datetime)."""
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
