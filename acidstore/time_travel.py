"""Time travel: the snapshot (txn list + write-id list) of a table as of a write id or a moment.

The write ids of the past are easy: those committed by then. The directories are not: a
compaction that committed later has already replaced the deltas (and base) that the past read,
and its output, visible in today's txn list, folds in rows written after the point (a major
compaction also drops the rows deleted after it). So a past snapshot also treats those
compactions' transactions as not yet committed, and reads the directories they replaced, which
the cleaner keeps for ``retention_seconds`` (and while a lease on such a snapshot lives).

Once the cleaner has begun on a compaction's partition, what it replaced may be partly gone:
such a compaction stays visible, so a read that needs the history it folded away raises
``NotEnoughHistoryError`` (a major compaction) instead of silently missing rows, and a minor
compaction's delta still serves the past (it keeps every event with its write id).
"""

from __future__ import annotations

from datetime import UTC, datetime

from acidstore.errors import InvalidInputError
from acidstore.metastore import Metastore
from acidstore.writeids import ValidTxnList, ValidWriteIdList

__all__ = ["AsOf", "hidden_compactions", "past_snapshot", "past_write_ids"]

AsOf = int | datetime


def _point(as_of: AsOf) -> AsOf:
    if isinstance(as_of, datetime):
        return as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)
    if isinstance(as_of, int) and not isinstance(as_of, bool):
        if as_of < 0:
            raise InvalidInputError(f"as_of write id must be >= 0, got {as_of}")
        return as_of
    raise InvalidInputError(f"as_of must be a write id or a datetime, not {as_of!r}")


def past_write_ids(metastore: Metastore, table: str, as_of: AsOf,
                   current: ValidWriteIdList) -> ValidWriteIdList:
    """The write ids valid at ``as_of``: committed by then (a moment), or up to it (a write
    id) and valid now; aborted ones stay aborted, the rest are open as of then."""
    point = _point(as_of)
    if isinstance(point, datetime):
        times = metastore.write_id_commit_times(table)
        valid = {w for w, t in times.items() if t <= point}
        high = max(valid, default=0)
    else:
        if point > current.high_watermark:
            # the future is not the present: answering with today's rows would pass for a
            # version the table never had (Delta refuses a versionAsOf past the latest too)
            raise InvalidInputError(
                f"as_of write id {point} of {table} is after its latest write id "
                f"{current.high_watermark}")
        high = point
        valid = {w for w in range(1, high + 1) if current.is_write_id_valid(w)}
    invalid = [w for w in range(1, high + 1) if w not in valid]
    aborted = tuple(w for w in invalid if current.is_write_id_aborted(w))
    opened = tuple(w for w in invalid if not current.is_write_id_aborted(w))
    return ValidWriteIdList(table, high, opened, aborted)


def hidden_compactions(metastore: Metastore, table: str, as_of: AsOf) -> frozenset[int]:
    """Transactions of compactions committed after ``as_of`` whose replaced directories are
    all still there (the cleaner has not begun on any partition they compacted)."""
    later = metastore.compactions_committed_after(table, _point(as_of))
    cleaning = {c.txn_id for c in later if c.cleaning}
    return frozenset(c.txn_id for c in later if c.txn_id not in cleaning)


def past_snapshot(metastore: Metastore, table: str, as_of: AsOf, txns: ValidTxnList,
                  write_ids: ValidWriteIdList
                  ) -> tuple[ValidTxnList, ValidWriteIdList, frozenset[int]]:
    """(txns, write ids) of ``table`` at ``as_of``, from a current snapshot, plus the
    compaction txns it hides (a caller that leases the snapshot checks them again after)."""
    past = past_write_ids(metastore, table, as_of, write_ids)
    hidden = hidden_compactions(metastore, table, as_of)
    extra = {t for t in hidden if txns.is_txn_valid(t)}
    if not extra:
        return txns, past, hidden
    return ValidTxnList(txns.high_watermark, tuple(sorted({*txns.open_txn_ids, *extra})),
                        txns.aborted_txn_ids), past, hidden
