"""The row-level write-write check of one commit (spec §12.2, finer than Hive's).

The metastore hands over the committed update/delete/overwrite writes that overlapped the
committing transaction on the same partitions; two writes conflict when both deleted (an
update deletes too) one ROW__ID, when either replaced the partition (INSERT OVERWRITE), or,
on a Serializable table, when the other wrote to a partition a statement of ours read.
Different rows of one partition never conflict. The delete deltas compared are read before
the metastore's commit lock is taken (``prefetch``), so that lock, which other commits wait
for, is never held across file IO; under the lock only what the prefetch missed is read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow.fs as pafs

from acidstore.engine.core import WarehouseCore
from acidstore.engine.restore_match import packed_keys
from acidstore.errors import AcidStoreError, ConcurrentAppendError
from acidstore.io import fs as afs
from acidstore.metastore import CommittedWrite, Metastore, WriteComponent
from acidstore.metastore.conflicts import conflict_error
from acidstore.read.keys import KeyArrays
from acidstore.read.registry import directory_delete_keys, write_delete_keys

__all__ = ["ConflictCheck"]


class ConflictCheck:
    """The conflict check of transaction ``txn_id``'s commit: ``prefetch`` before the
    commit, then the metastore calls it (``check(mine, overlapping)``) under its lock.
    ``deleted``: the ROW__IDs its statements registered, by (table, partition); those
    written by other processes (Spark tasks) are read back from its delete deltas."""

    def __init__(self, core: WarehouseCore, txn_id: int,
                 deleted: Mapping[tuple[str, str], Sequence[KeyArrays]]) -> None:
        self._core = core
        self.txn_id = txn_id
        self._deleted = deleted
        self._keys = _DeleteKeys(core.filesystem)

    def __call__(self, mine: Sequence[WriteComponent],
                 overlapping: Sequence[CommittedWrite]) -> None:
        self._conflicts(mine, overlapping, self._keys)

    def prefetch(self, metastore: Metastore, components: Sequence[WriteComponent]) -> None:
        """Read the delete deltas the check will compare *before* the metastore's commit
        lock is taken: other commits wait for that lock, so it must not be held across file
        IO. Best effort: whatever fails here (or commits in between) is read under the
        lock, where an error aborts the commit as it always did."""
        keys = self._keys
        if not any(c.operation in ("update", "delete") for c in components):
            return  # nothing of ours is compared by row
        try:
            overlapping = metastore.overlapping_writes(self.txn_id, components)
        except AcidStoreError:
            return
        for other in overlapping:
            ours = _ours_against(components, other)
            if ours and _by_rows(ours, other):
                for path in self._delete_paths(other.table, other.directories):
                    keys.prefetch(path, other.write_id)
                if not self._deleted.get((other.table, other.partition)):
                    for path in self._delete_paths(
                            other.table, [d for c in ours for d in c.directories]):
                        keys.prefetch(path)

    def _conflicts(self, mine: Sequence[WriteComponent], overlapping: Sequence[CommittedWrite],
                   keys: _DeleteKeys) -> None:
        """Raise a WriteConflictError when a committed overlapping write changed a row we
        changed, replaced a partition we wrote (or we replace one it wrote), or wrote to a
        partition a statement of ours read on a Serializable table. Runs under the commit
        lock: files are read only for writes ``prefetch`` did not see."""
        for other in overlapping:
            ours = _ours_against(mine, other)
            theirs = [keys.of_write(p, other.write_id)
                      for p in self._delete_paths(other.table, other.directories)] if (
                ours and _by_rows(ours, other)) else []
            if ours and None in theirs:
                raise conflict_error(
                    self.txn_id, None, other.table, partition=other.partition,
                    operation=ours[0].operation, other=other,
                    detail=": a compaction folded its delete events into a base (and the "
                    "cleaner removed its delete delta), so the rows it changed cannot be told")
            if ours and (not _by_rows(ours, other) or _intersects(
                    self._own_deletes(other.table, other.partition, ours, keys),
                    [k for k in theirs if k is not None])):
                raise conflict_error(self.txn_id, None, other.table,
                                     partition=other.partition, operation=ours[0].operation,
                                     other=other)
            reading = [c for c in mine if c.table == other.table
                       and c.partition == other.partition and c.read]
            if reading:
                raise conflict_error(
                    self.txn_id, None, other.table, partition=other.partition,
                    operation=reading[0].operation, other=other, kind=ConcurrentAppendError,
                    detail=": the table is Serializable and a statement of this transaction "
                    "read the partition before that write")

    def _own_deletes(self, table: str, partition: str, ours: Sequence[WriteComponent],
                     keys: _DeleteKeys) -> list[KeyArrays]:
        """The ROW__IDs this transaction deleted in a partition: as registered, or read back
        from its delete deltas when the writers ran in other processes."""
        known = self._deleted.get((table, partition))
        if known:
            return list(known)
        return [keys.of(p) for p in self._delete_paths(
            table, [d for c in ours for d in c.directories])]

    def _delete_paths(self, table: str, directories: Sequence[str]) -> list[str]:
        location = self._core.location_of(table)
        if location is None:  # the table is gone: its commit fails in the metastore
            return []
        return [afs.join(location, d) for d in directories if _is_delete_dir(d)]


class _DeleteKeys:
    """The ROW__IDs of delete-delta directories, each read once per commit."""

    def __init__(self, fs: pafs.FileSystem) -> None:
        self._fs = fs
        self._known: dict[str, KeyArrays] = {}
        self._by_write: dict[str, KeyArrays | None] = {}

    def of(self, path: str) -> KeyArrays:
        keys = self._known.get(path)
        if keys is None:
            keys = self._known[path] = directory_delete_keys(self._fs, path)
        return keys

    def of_write(self, path: str, write_id: int) -> KeyArrays | None:
        """The ROW__IDs a committed write deleted in its delete delta ``path``; once the
        cleaner removed that directory (a compaction replaced it), from the compaction's
        delete deltas, or None when a base holds them and they cannot be told apart."""
        key = f"{path}@{write_id}"
        if key in self._by_write:
            return self._by_write[key]
        if self._fs.get_file_info(path).type == pafs.FileType.Directory:
            keys: KeyArrays | None = self.of(path)
        else:
            keys = write_delete_keys(self._fs, path.rsplit("/", 1)[0], write_id)
        self._by_write[key] = keys
        return keys

    def prefetch(self, path: str, write_id: int | None = None) -> None:
        """``of`` (``of_write`` given the write id) without its errors: they are raised
        again when the check asks."""
        with contextlib.suppress(AcidStoreError, OSError):
            if write_id is None:
                self.of(path)
            else:
                self.of_write(path, write_id)


def _ours_against(mine: Sequence[WriteComponent], other: CommittedWrite
                  ) -> list[WriteComponent]:
    """Our components that changed rows (update, delete, overwrite) where ``other`` did too:
    the pairs that can clash. Inserts never clash by themselves."""
    if other.operation == "insert":
        return []
    return [c for c in mine if c.table == other.table and c.partition == other.partition
            and c.operation != "insert"]


def _by_rows(ours: Sequence[WriteComponent], other: CommittedWrite) -> bool:
    """Whether a clash is decided by comparing ROW__IDs (an overwrite clashes outright)."""
    return "overwrite" not in (ours[0].operation, other.operation)


def _is_delete_dir(relative: str) -> bool:
    return relative.rsplit("/", 1)[-1].startswith("delete_delta_")


def _intersects(ours: Sequence[KeyArrays], theirs: Sequence[KeyArrays]) -> bool:
    if not ours or not theirs:
        return False
    return bool(np.isin(packed_keys(ours), packed_keys(theirs)).any())
