"""The streaming reader: a heap-based k-way merge of a split with its delete deltas (spec §5).

This is the reference reader and the fallback for splits with too many delete events. It keeps
one decoded stripe per open file and never more, so memory is bounded by the number of open
files, not by their size or by the number of deletes.

The merge works on batches, not rows: a heap orders the delete streams by their next key; for
each decoded batch of the split's file it pops every stream whose next events fall at or below
the batch's last key, takes exactly those events, and merges them with the batch in Hive's key
order (originalWriteId, bucket, rowId ascending; a delete before an insert of the same key).
As in ``OrcRawRecordMerger`` with ``collapse=true``, the first event of a key wins, so a row
whose key has a valid delete event is dropped.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow.fs as pafs

from acidstore.format.orc.acid_metadata import RowKey
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read.keys import KeyArrays, key_le
from acidstore.read.registry import delete_events, in_write_id_range
from acidstore.read.split_source import SplitBatch, split_batches
from acidstore.read.splits import Split

__all__ = ["merge_split", "surviving"]

Bool = npt.NDArray[np.bool_]


class _DeleteStream:
    """One delete file as a sorted stream of key chunks, consumed up to a bound."""

    def __init__(self, chunks: Iterator[KeyArrays]) -> None:
        self._chunks = chunks
        self._current: KeyArrays | None = None
        self._advance()

    def _advance(self) -> None:
        self._current = None
        for chunk in self._chunks:
            if len(chunk):
                self._current = chunk
                return

    @property
    def head(self) -> RowKey | None:
        return self._current.first() if self._current is not None else None

    def take_upto(self, bound: RowKey) -> list[KeyArrays]:
        """Consume and return every event with key ≤ ``bound``."""
        taken: list[KeyArrays] = []
        while self._current is not None:
            chunk = self._current
            count = int(np.count_nonzero(key_le(chunk, bound)))  # sorted: a prefix
            if count == len(chunk):
                taken.append(chunk)
                self._advance()
                continue
            if count:
                taken.append(chunk.take(np.arange(count)))
                self._current = chunk.take(np.arange(count, len(chunk)))
            break
        return taken


def surviving(rows: KeyArrays, deletes: KeyArrays) -> Bool:
    """Merge sorted insert keys with delete keys in Hive's order; True where the row survives.

    Equal keys sort delete first, and the first event of each key is the one emitted
    (collapse): an insert survives iff it opens its key group.
    """
    n_del = len(deletes)
    w = np.concatenate([deletes.write_id, rows.write_id])
    b = np.concatenate([deletes.bucket, rows.bucket])
    r = np.concatenate([deletes.row_id, rows.row_id])
    is_insert = np.concatenate([np.zeros(n_del, np.int8), np.ones(len(rows), np.int8)])
    order = np.lexsort((is_insert, r, b, w))
    sw, sb, sr, si = w[order], b[order], r[order], is_insert[order]
    opens = np.ones(len(order), dtype=np.bool_)
    opens[1:] = (sw[1:] != sw[:-1]) | (sb[1:] != sb[:-1]) | (sr[1:] != sr[:-1])
    keep_sorted = opens & (si == 1)
    keep = np.empty(len(order), dtype=np.bool_)
    keep[order] = keep_sorted
    out: Bool = keep[n_del:]
    return out


def merge_split(fs: pafs.FileSystem, split: Split, write_ids: ValidWriteIdList,
                positions: Sequence[int] | None, *, with_row_id: bool,
                batch_rows: int | None = None) -> Iterator[SplitBatch]:
    """Visible rows of ``split`` in file order, merged with its delete events as they stream
    (``batch_rows``: see ``split_batches``)."""
    del with_row_id  # keys are always decoded here; the caller decides whether to show them
    lo, hi = split.min_write_id, split.max_write_id
    streams = [
        _DeleteStream(in_write_id_range(c, lo, hi) for c in delete_events(fs, source, write_ids))
        for source in split.deletes
    ]
    heap: list[tuple[RowKey, int]] = []
    for index, stream in enumerate(streams):
        if stream.head is not None:
            heap.append((stream.head, index))
    heapq.heapify(heap)
    for decoded in split_batches(fs, split, write_ids, positions, need_keys=True,
                                 batch_rows=batch_rows):
        assert decoded.keys is not None
        batch = decoded
        bound = decoded.keys.last()
        taken: list[KeyArrays] = []
        while heap and heap[0][0] <= bound:
            _, index = heapq.heappop(heap)
            taken.extend(streams[index].take_upto(bound))
            head = streams[index].head
            if head is not None:
                heapq.heappush(heap, (head, index))
        if taken:
            deletes = KeyArrays(np.concatenate([t.write_id for t in taken]),
                                np.concatenate([t.bucket for t in taken]),
                                np.concatenate([t.row_id for t in taken]))
            keep = surviving(decoded.keys, deletes)
            if not keep.all():
                batch = batch.filter(keep)
                if not batch.num_rows:
                    continue
        yield batch
