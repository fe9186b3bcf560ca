"""The vectorized reader (the default): a delete registry per split, then whole-batch masks.

For each split it loads the valid delete events of the split's bucket into a
``DeleteRegistry`` and drops every decoded row whose ROW__ID is in it (spec §8.1). When the
split's delete events exceed the registry limit it hands the split to the streaming merge,
exactly as Hive falls back to its SortMergedDeleteEventRegistry.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow.fs as pafs

from acidstore.config import DELETE_EVENT_LIMIT
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read.heap_merge import merge_split
from acidstore.read.registry import DeleteCache, load_registry
from acidstore.read.split_source import Probe, SplitBatch, split_batches
from acidstore.read.splits import Split

__all__ = ["read_split"]


def read_split(fs: pafs.FileSystem, split: Split, write_ids: ValidWriteIdList,
               positions: Sequence[int] | None, *, with_row_id: bool,
               delete_event_limit: int = DELETE_EVENT_LIMIT,
               cache: DeleteCache | None = None, probe: Probe | None = None,
               batch_rows: int | None = None) -> Iterator[SplitBatch]:
    """Visible rows of ``split`` in file order, as decoded batches (``probe``: stripes whose
    rows cannot pass the read's filter are skipped, see ``Probe``; ``batch_rows``: batches
    of at most that many rows rather than stripes, see ``split_batches``)."""
    registry = load_registry(fs, split, write_ids, limit=delete_event_limit, cache=cache) \
        if split.deletes else None
    if split.deletes and registry is None:
        yield from merge_split(fs, split, write_ids, positions, with_row_id=with_row_id,
                               batch_rows=batch_rows)
        return
    apply = registry is not None and registry.touches(split.min_write_id, split.max_write_id)
    for decoded in split_batches(fs, split, write_ids, positions,
                                 need_keys=apply or with_row_id, probe=probe,
                                 batch_rows=batch_rows):
        batch = decoded
        if not apply:
            yield batch
            continue
        assert registry is not None and batch.keys is not None
        deleted = registry.deleted(batch.keys)
        if not with_row_id:
            batch = SplitBatch(batch.num_rows, batch.positions, batch.row, None, batch.filtered)
        if not deleted.any():
            yield batch
        elif not deleted.all():
            yield batch.filter(~deleted)
