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

import contextlib
from collections.abc import Callable
from datetime import datetime

from acidstore.errors import AcidStoreError, InvalidInputError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore import History, Leases, SnapshotLeasing, TableRecord

__all__ = ["AsOf", "hidden_compactions", "lease_snapshot", "past_snapshot", "past_write_ids",
           "release_lease"]

AsOf = int | datetime


def _point(as_of: AsOf) -> AsOf:
    """``as_of`` checked, a datetime made aware. A naive one is local time, as Python's own
    ``datetime.timestamp()`` and ``astimezone()`` take it: read as UTC, ``as_of=
    datetime.now()`` named another moment in every zone but UTC (hours of commits early or
    late). An aware one keeps its zone. Every time travel (``to_arrow``, ``scan``,
    ``to_batches``, Spark's ``asOf``/``timestampAsOf``, views) resolves its point here."""
    if isinstance(as_of, datetime):
        if as_of.tzinfo is not None and as_of.utcoffset() is not None:
            return as_of
        return as_of.astimezone()  # naive: the local time it names, with its local offset
    if isinstance(as_of, int) and not isinstance(as_of, bool):
        if as_of < 0:
            raise InvalidInputError(f"as_of write id must be >= 0, got {as_of}")
        return as_of
    raise InvalidInputError(f"as_of must be a write id or a datetime, not {as_of!r}")


def past_write_ids(metastore: TableRecord, table: str, as_of: AsOf,
                   current: ValidWriteIdList) -> ValidWriteIdList:
    """The write ids valid at ``as_of``: committed by then (a moment), or up to it (a write
    id) and valid now; aborted ones stay aborted, the rest are open as of then."""
    point = _point(as_of)
    if isinstance(point, datetime):
        created = metastore.get_table(table).created
        if point < created:
            # the table did not exist then: an empty answer would pass for a version it
            # never had (Delta and Iceberg refuse a moment before their first version too)
            raise InvalidInputError(
                f"as_of {point.isoformat()} is before {table} was created "
                f"({created.isoformat()})")
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


def hidden_compactions(metastore: History, table: str, as_of: AsOf) -> frozenset[int]:
    """Transactions of compactions committed after ``as_of`` whose replaced directories are
    all still there (the cleaner has not begun on any partition they compacted)."""
    later = metastore.compactions_committed_after(table, _point(as_of))
    cleaning = {c.txn_id for c in later if c.cleaning}
    return frozenset(c.txn_id for c in later if c.txn_id not in cleaning)


def past_snapshot(metastore: TableRecord, table: str, as_of: AsOf, txns: ValidTxnList,
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


def lease_snapshot(metastore: SnapshotLeasing, table: str,
                   take: Callable[[], tuple[ValidTxnList, ValidWriteIdList, frozenset[int]]],
                   *, as_of: AsOf | None, own_transaction: bool, ttl_seconds: float
                   ) -> tuple[ValidTxnList, ValidWriteIdList, int]:
    """The snapshot ``take`` returns (txns, write ids, the compactions it hides) with a
    metastore lease on it. A past snapshot reads around the compactions committed after it;
    if the cleaner began on one of those before the lease was in place, the snapshot is taken
    again without hiding it (its replaced directories may be partly gone)."""
    while True:
        # a compaction that commits between the snapshot and the lease can be cleaned
        # before the lease exists: its replaced directories are what the snapshot reads.
        # So after the lease is in place, look for compactions the snapshot does not see
        # that have committed, and take a new snapshot if there is one. An INSERT
        # OVERWRITE's base hides older directories just as a compaction's output replaces
        # them, and the cleaner removes both. The metastore finds them by txn id, not by
        # commit time: no clock (the client's, the server's) and no commit still in flight
        # when the snapshot was taken can make it miss one.
        txns, write_ids, hidden = take()
        lease = metastore.acquire_lease(table, txns, write_ids, ttl_seconds)
        # (a transaction's own snapshot needs no such check: the cleaner keeps what the
        # snapshots of open transactions read, and retaking it would change nothing)
        missed = [] if own_transaction else [
            txn for txn in metastore.unseen_replacements(table, txns) if txn not in hidden]
        if not missed and (as_of is None or hidden <= hidden_compactions(
                metastore, table, as_of)):
            return txns, write_ids, lease
        release_lease(metastore, lease)


def release_lease(metastore: Leases, lease: int) -> None:
    """Best effort: a reader collected after its warehouse closed has nothing to release to,
    and a lease that is never released still expires."""
    with contextlib.suppress(AcidStoreError):
        metastore.release_lease(lease)
