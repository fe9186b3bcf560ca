"""Where a stream of an acidstore table may go next: the driver's side of its offsets.

A write id is only a safe offset once every write id below it is settled: write ids are
taken when a transaction opens, so write 6 may commit while write 5 is still open, and a
stream that moved past 6 would never see 5. The stream's *frontier* is the highest write id
with none open at or below it.

Without the change feed a stream emits inserted rows only, as Delta's source does: a write
that updated, deleted or overwrote rows (a *change write*) stops it with an error, or with
``skipChangeCommits`` emits nothing of that write. A micro-batch never spans a change write:
its writes are either all plain inserts (read at the snapshot of its last write id, where no
row they inserted can be missing) or a run of change writes alone.
"""

from __future__ import annotations

from acidstore.engine.handle import TableHandle
from acidstore.errors import UnsupportedOperationError
from acidstore.format.writeids import ValidWriteIdList
from acidstore.spark.stream_options import Offset, StreamReadOptions

__all__ = ["change_writes", "frontier", "next_end", "refuse_changes"]


def frontier(write_ids: ValidWriteIdList) -> int:
    """The highest write id with no open write id at or below it."""
    if write_ids.min_open_write_id is not None:
        return min(write_ids.high_watermark, write_ids.min_open_write_id - 1)
    return write_ids.high_watermark


def change_writes(table: TableHandle, first: int, last: int) -> dict[int, str]:
    """The committed write ids in ``first..last`` that did more than insert rows, each with
    what it did (``update``, ``delete``, ``overwrite``, as its components say)."""
    if last < first:
        return {}
    found: dict[int, set[str]] = {}
    for component in table.metastore.committed_components(
            table.name, min_write_id=first, below_write_id=last + 1):
        found.setdefault(component.write_id, set()).add(component.operation)
    return {w: ",".join(sorted(ops - {"insert"})) for w, ops in found.items()
            if ops - {"insert"}}


def refuse_changes(table: str, changed: dict[int, str]) -> None:
    """The error of a plain stream that reached a change write (Delta's, in acidstore's
    words): say which write, and the two ways on."""
    write_id = min(changed)
    raise UnsupportedOperationError(
        f"the stream of {table} reached write id {write_id}, which changed existing rows "
        f"({changed[write_id]}); a stream without the change feed emits inserted rows only. "
        "Restart the query with .option('skipChangeCommits', 'true') to pass over such "
        "writes, or read the change feed with .option('readChangeFeed', 'true') (a new "
        "checkpointLocation)")


def next_end(table: TableHandle, start: Offset, options: StreamReadOptions, limit: int | None,
             ceiling: int | None) -> Offset:
    """The end of the next micro-batch from ``start``: at most ``limit`` write ids on, never
    past the frontier (nor ``ceiling``, the frontier when ``Trigger.AvailableNow`` began),
    and never across a change write of a stream without the change feed. ``start`` itself
    when there is nothing new."""
    top = frontier(table.snapshot()[1])
    if ceiling is not None:
        top = min(top, ceiling)
    if start.initial and start.snapshot is None:  # fix the snapshot the stream starts with
        if top <= 0:
            return Offset(0)
        start = Offset(0, top)
    if start.snapshot is not None and start.write_id < start.snapshot:
        end = start.snapshot if limit is None else min(start.snapshot, start.write_id + limit)
        return Offset(end, start.snapshot)
    low = start.write_id
    high = top if limit is None else min(top, low + limit)
    if high <= low:
        return start
    if options.change_feed:
        return Offset(high)
    changed = change_writes(table, low + 1, high)
    if low + 1 not in changed:
        return Offset(min(changed) - 1 if changed else high)
    if not options.skip_change_commits:
        refuse_changes(table.name, changed)
    end = low + 1
    while end + 1 in changed:  # a run of change writes goes in one (empty) batch
        end += 1
    return Offset(end)
