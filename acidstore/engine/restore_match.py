"""What a RESTORE changes in one unit (a partition, or one bucket of it): the rows present now
and absent from the version it restores get delete events, the rows of that version absent
now are written again, the rows in both are left alone.

A ROW__ID names one inserted row for good: an UPDATE writes a new row (a new ROW__ID) and a
compaction keeps every row's ROW__ID. So two snapshots of one bucket hold the same row
exactly when they hold the same ROW__ID, and a RESTORE compares ROW__IDs only: it decodes the
values of just the rows it writes back, and never rewrites the table. The unit scans both
snapshots (``statement``); the comparison is here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.read.keys import KeyArrays
from acidstore.read.scan import PartitionDir
from acidstore.read.splits import Split

__all__ = ["RestoreSpec", "contains", "packed_keys", "restore_diff", "unit_splits"]


@dataclass(frozen=True)
class RestoreSpec:
    """The version one RESTORE unit brings its bucket back to: that snapshot, and the splits
    it reads there (planned on the driver, as the unit's current splits are)."""

    txns: ValidTxnList
    write_ids: ValidWriteIdList
    planned: tuple[tuple[PartitionDir, Split], ...]


def packed_keys(parts: Sequence[KeyArrays]) -> npt.NDArray[np.void]:
    """ROW__IDs as one structured array, so numpy compares whole keys (``np.isin``)."""
    keys = np.empty(sum(len(p) for p in parts),
                    dtype=[("w", "<i8"), ("b", "<i4"), ("r", "<i8")])
    start = 0
    for p in parts:
        end = start + len(p)
        keys["w"][start:end], keys["b"][start:end], keys["r"][start:end] = (
            p.write_id, p.bucket, p.row_id)
        start = end
    return keys


def contains(among: KeyArrays, keys: KeyArrays) -> npt.NDArray[np.bool_]:
    """Per key of ``keys``: whether ``among`` holds it."""
    if not len(keys) or not len(among):
        return np.zeros(len(keys), np.bool_)
    found: npt.NDArray[np.bool_] = np.isin(packed_keys([keys]), packed_keys([among]))
    return found


def restore_diff(current: KeyArrays | None, restored: KeyArrays | None
                 ) -> tuple[KeyArrays, npt.NDArray[np.intp]]:
    """(the ROW__IDs of ``current`` to delete, the positions in ``restored`` of the rows to
    write again): the rows a unit holds now (``current``, None: none) against those of the
    version it restores (``restored``)."""
    now = current if current is not None else KeyArrays.empty()
    then = restored if restored is not None else KeyArrays.empty()
    return now.take(~contains(then, now)), np.flatnonzero(~contains(now, then))


def unit_splits(location: str, by_bucket: bool, planned: Sequence[tuple[PartitionDir, Split]]
                ) -> dict[tuple[str, int], list[tuple[PartitionDir, Split]]]:
    """Splits by the statement unit that owns them: (partition relative to the table
    ``location``, bucket if ``by_bucket``, else 0). Every statement's planner groups so; a
    RESTORE groups both of its snapshots so, which pairs each unit's splits of now with its
    splits of the version it restores."""
    groups: dict[tuple[str, int], list[tuple[PartitionDir, Split]]] = defaultdict(list)
    for partition, split in planned:
        groups[(afs.relative(location, partition.path),
                split.bucket_id if by_bucket else 0)].append((partition, split))
    return groups
