"""The in-memory delete-event registry of the vectorized reader (spec §8.3).

Like Hive's ColumnizedDeleteEventRegistry it stores the delete events of one split as runs of
(originalWriteId, bucket property) over a single sorted ``rowId`` array: 8 bytes per event plus
16 bytes per run, so at most 24 bytes per event even when every event is its own run.
Membership of a whole batch of ROW__IDs is answered with ``numpy.searchsorted``.

Loading stops as soon as the valid events exceed a limit (Hive's
``hive.transactional.events.mem``, 10,000,000 by default); the caller then falls back to the
streaming merge, whose memory does not grow with the number of deletes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.config import DELETE_EVENT_LIMIT
from acidstore.errors import CorruptFileError
from acidstore.format.layout import (
    ParsedBase,
    is_acid_directory_name,
    is_bucket_file,
    parse_directory,
)
from acidstore.format.orc.acid_metadata import RowKey
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.schema import BUCKET, CURRENT_TRANSACTION, ORIGINAL_TRANSACTION, ROW_ID
from acidstore.format.writeids import RangeResponse, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.read.delete_batch import SMALL_DELETE_BYTES, small_delete_events
from acidstore.read.keys import (
    KeyArrays,
    check_bucket,
    check_key_order,
    current_write_ids,
    key_arrays,
    valid_write_id_mask,
)
from acidstore.read.splits import DeleteSource, Split

__all__ = [
    "DeleteCache",
    "DeleteRegistry",
    "delete_events",
    "delete_event_batches",
    "directory_delete_keys",
    "in_write_id_range",
    "load_registry",
    "write_delete_keys",
]

_MAX_EVENTS = 2**31 - 1  # run offsets are int32, which is what keeps an event at 24 bytes
_BATCH_BYTES = 16 * 1024 * 1024  # small delete files decoded together, at most this much

Bool = npt.NDArray[np.bool_]
DELETE_COLUMNS = (ORIGINAL_TRANSACTION, BUCKET, ROW_ID, CURRENT_TRANSACTION)


class DeleteRegistry:
    """Sorted, de-duplicated ROW__IDs of the valid delete events of one split."""

    __slots__ = ("_row_ids", "_run_bucket", "_run_end", "_run_write_id")

    def __init__(self, keys: KeyArrays) -> None:
        if len(keys) > _MAX_EVENTS:
            raise ValueError(f"a registry holds at most {_MAX_EVENTS} events")
        order = np.lexsort((keys.row_id, keys.bucket, keys.write_id))
        w, b, r = keys.write_id[order], keys.bucket[order], keys.row_id[order]
        if len(r):
            distinct = np.ones(len(r), dtype=np.bool_)
            distinct[1:] = (w[1:] != w[:-1]) | (b[1:] != b[:-1]) | (r[1:] != r[:-1])
            w, b, r = w[distinct], b[distinct], r[distinct]
        starts = np.flatnonzero(np.r_[True, (w[1:] != w[:-1]) | (b[1:] != b[:-1])]) \
            if len(r) else np.zeros(0, dtype=np.int64)
        self._run_write_id = np.ascontiguousarray(w[starts], dtype=np.int64)
        self._run_bucket = np.ascontiguousarray(b[starts], dtype=np.int32)
        # one exclusive end per run (a run starts where the previous one ended): no sentinel,
        # so the registry stays within 24 bytes per event even with one run per event
        self._run_end = np.append(starts[1:], len(r)).astype(np.int32) if len(r) \
            else np.zeros(0, dtype=np.int32)
        self._row_ids = np.ascontiguousarray(r, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._row_ids)

    def touches(self, low: int, high: int) -> bool:
        """Whether any event names a row written by write ids ``low..high`` (a split's
        rows carry originalWriteIds in its directory's range: if none does, the split's
        ROW__IDs need not even be decoded)."""
        at = int(np.searchsorted(self._run_write_id, low, "left"))
        return at < len(self._run_write_id) and int(self._run_write_id[at]) <= high

    def sorted_keys(self, low: int, high: int) -> KeyArrays:
        """The events naming rows of write ids ``low..high``, one per ROW__ID, in ROW__ID
        order (a reader outside this process, the Spark JVM reader, walks them beside a
        file's rows, which are in that order too)."""
        counts = np.diff(self._run_end, prepend=np.int32(0)).astype(np.int64)
        keys = KeyArrays(np.repeat(self._run_write_id, counts),
                         np.repeat(self._run_bucket, counts), self._row_ids)
        return in_write_id_range(keys, low, high)

    @property
    def nbytes(self) -> int:
        """Resident size of the registry's arrays."""
        return int(self._row_ids.nbytes + self._run_write_id.nbytes + self._run_bucket.nbytes
                   + self._run_end.nbytes)

    def deleted(self, keys: KeyArrays) -> Bool:
        """Which of ``keys`` have a delete event in the registry."""
        out = np.zeros(len(keys), dtype=np.bool_)
        if not len(self._row_ids) or not len(keys):
            return out
        pair = keys.constant if keys.constant is not None else \
            (int(keys.write_id[0]), int(keys.bucket[0]))
        if keys.constant is not None or (bool((keys.write_id == pair[0]).all()) and
                                         bool((keys.bucket == pair[1]).all())):
            # the common case (a delta file, one statement): one run, no fancy indexing
            run = self._find_run(*pair)
            if run >= 0:
                out = self._in_run(run, keys.row_id)
            return out
        candidates = np.flatnonzero(np.isin(keys.write_id, self._run_write_id))
        if not len(candidates):
            return out
        w, b = keys.write_id[candidates], keys.bucket[candidates]
        # segments of equal (writeId, bucket) among the candidate rows
        cut = np.flatnonzero((w[1:] != w[:-1]) | (b[1:] != b[:-1])) + 1
        bounds = np.r_[0, cut, len(candidates)]
        for lo, hi in itertools.pairwise(bounds):
            run = self._find_run(int(w[lo]), int(b[lo]))
            if run < 0:
                continue
            idx = candidates[lo:hi]
            out[idx] = self._in_run(run, keys.row_id[idx])
        return out

    def _in_run(self, run: int, wanted: npt.NDArray[np.int64]) -> Bool:
        """Which of ``wanted`` (ascending, as every ACID file stores them) are deleted.

        The deletes of the run that fall inside the batch's range are searched into the batch
        rather than the other way round: m log n for m deletes instead of n log m for n rows.
        """
        found: Bool = np.zeros(len(wanted), dtype=np.bool_)
        rows = self._row_ids[self._run_end[run - 1] if run else 0:self._run_end[run]]
        lo = int(np.searchsorted(rows, wanted[0], side="left"))
        hi = int(np.searchsorted(rows, wanted[-1], side="right"))
        deletes = rows[lo:hi]
        if not len(deletes):
            return found
        pos = np.searchsorted(wanted, deletes)
        inside = pos < len(wanted)
        pos = pos[inside]
        pos = pos[wanted[pos] == deletes[inside]]
        found[pos] = True
        return found

    def _find_run(self, write_id: int, bucket: int) -> int:
        lo = int(np.searchsorted(self._run_write_id, write_id, "left"))
        hi = int(np.searchsorted(self._run_write_id, write_id, "right"))
        if hi - lo == 1:
            return lo if int(self._run_bucket[lo]) == bucket else -1
        at = lo + int(np.searchsorted(self._run_bucket[lo:hi], bucket, "left"))
        return at if at < hi and int(self._run_bucket[at]) == bucket else -1


def delete_events(fs: pafs.FileSystem, source: DeleteSource, write_ids: ValidWriteIdList
                  ) -> Iterator[KeyArrays]:
    """Stream the valid delete events of one delete file, stripe by stripe, in key order.

    Every stripe is checked: events of another bucket or out of ROW__ID order are refused.
    """
    orc = OrcFile(fs, source.path, size=source.recorded_size)
    if not orc.is_acid:
        raise CorruptFileError("delete delta file has no ACID event schema", path=source.path)
    # a directory whose write ids are all valid holds only valid events: its
    # currentTransaction column need not be decoded (a quarter of a delete file's columns)
    partial = write_ids.is_write_id_range_valid(
        source.min_write_id, source.max_write_id) != RangeResponse.ALL
    columns = orc.physical_columns(DELETE_COLUMNS if partial else DELETE_COLUMNS[:3], [])
    previous: RowKey | None = None
    for stripe in range(orc.nstripes):
        batch = orc.canonical(orc.read_stripe(stripe, columns))
        if batch.num_rows == 0:
            continue
        keys = key_arrays(batch)
        check_bucket(keys.bucket, source.bucket_id, source.path)
        check_key_order(keys, previous, source.path, strict=False)
        previous = keys.last()
        if not partial:
            yield keys
            continue
        valid = valid_write_id_mask(current_write_ids(batch), write_ids)
        yield keys if bool(valid.all()) else keys.take(valid)


def delete_event_batches(fs: pafs.FileSystem, directory: str,
                         columns: Sequence[str] = DELETE_COLUMNS, *,
                         files: Sequence[tuple[str, int | None]] | None = None
                         ) -> Iterator[pa.RecordBatch]:
    """The delete events of one delete-delta directory, stripe by stripe over its non-empty
    bucket files, with ``columns`` (canonical names) only: what the conflict check and the
    change feed read outside a scan, which has its own registry. ``files``: its bucket files
    as the metastore recorded them (name, bytes checked when opened, or None), instead of a
    listing."""
    if files is None:
        files = [(e.name, None) for e in afs.list_dir(fs, directory)
                 if not e.is_dir and is_bucket_file(e.name) and e.size > 0]
    for name, size in files:
        orc = OrcFile(fs, afs.join(directory, name), size=size)
        physical = orc.physical_columns(list(columns), [])
        for stripe in range(orc.nstripes):
            yield orc.canonical(orc.read_stripe(stripe, physical))


def directory_delete_keys(fs: pafs.FileSystem, directory: str) -> KeyArrays:
    """Every delete event's ROW__ID in one delete-delta directory (all bucket files), as a
    committed transaction wrote them; used to find rows two transactions both changed."""
    return _joined([key_arrays(batch)
                    for batch in delete_event_batches(fs, directory, DELETE_COLUMNS[:3])])


def write_delete_keys(fs: pafs.FileSystem, partition: str, write_id: int) -> KeyArrays | None:
    """The ROW__IDs ``write_id`` deleted in ``partition``, read from the delete deltas a
    compaction made, once the cleaner removed the write's own delete delta; used by the
    conflict check, which must not take "no directory" for "no deletes" (a lost update).

    None when a base covers the write id (a major compaction or an overwrite folded the events
    away, so the rows it deleted can no longer be told); empty when nothing covers it: the
    write recorded a delete delta it never wrote (a DELETE that matched no row).
    """
    covering: list[str] = []
    for entry in afs.list_dir(fs, partition):
        if not entry.is_dir or not is_acid_directory_name(entry.name):
            continue
        parsed = parse_directory(entry.name)
        if isinstance(parsed, ParsedBase):
            if parsed.write_id >= write_id:
                return None
        elif parsed.delete and parsed.min_write_id <= write_id <= parsed.max_write_id:
            covering.append(afs.join(partition, entry.name))
    return _joined([key_arrays(batch).take(current_write_ids(batch) == write_id)
                    for directory in covering
                    for batch in delete_event_batches(fs, directory)])


def _joined(parts: list[KeyArrays]) -> KeyArrays:
    """The ROW__IDs of ``parts`` as one KeyArrays (empty, typed, for no parts)."""
    if not parts:
        return KeyArrays.empty()
    return KeyArrays(np.concatenate([p.write_id for p in parts]),
                     np.concatenate([p.bucket for p in parts]),
                     np.concatenate([p.row_id for p in parts]))


def in_write_id_range(keys: KeyArrays, low: int, high: int) -> KeyArrays:
    """The events that can hit a split whose rows were written by write ids low..high.

    A file's rows carry originalWriteIds inside its directory's range (a base's from 0 up), so a
    delete of any other write id cannot match and need not be kept; this plays the part of
    Hive's key-interval filter (``hive.txn.filter.delete.events``) for whole-file splits.
    """
    if not len(keys):
        return keys
    inside = (keys.write_id >= low) & (keys.write_id <= high)
    return keys if bool(inside.all()) else keys.take(inside)


class DeleteCache:
    """The valid delete events of each delete file, decoded once per scan.

    Every split of a bucket consults the same delete files, so a table with many insert deltas
    would otherwise decode each delete file once per split. Only fully read files are kept, and
    at most ``max_events`` events in all, so memory stays bounded.
    """

    def __init__(self, max_events: int = 2_000_000) -> None:
        self._files: dict[str, list[KeyArrays]] = {}
        self._held = 0
        self._max = max_events
        self._lock = threading.Lock()
        #: registries by the delete files they hold, shared by the splits they serve
        self._registries: dict[frozenset[str], DeleteRegistry] = {}
        self._registered = 0

    def registry(self, fs: pafs.FileSystem, sources: Sequence[DeleteSource],
                 write_ids: ValidWriteIdList) -> DeleteRegistry | None:
        """A registry holding every valid event of ``sources`` (and maybe more), shared by
        the splits of a scan: after N small writes a bucket has N splits and N delete files,
        and a registry per split made a scan O(N^2). A ROW__ID names one row of the table, so
        an event can only ever match its own row: a registry built for a superset of a split's
        delete files (the bucket's first split consults them all) answers the split exactly
        as its own would, at the cost of a larger lookup. None once the shared registries
        would hold more than ``max_events`` (the caller builds the split's own)."""
        key = frozenset(source.path for source in sources)
        built = self._registries.get(key) or next(
            (r for held, r in list(self._registries.items()) if key <= held), None)
        if built is not None:
            return built
        parts: list[KeyArrays] = []
        total = 0
        decoded = self._small_files(fs, sources, write_ids)
        for source in sources:
            chunks = decoded.get(source.path)
            for chunk in self.events(fs, source, write_ids) if chunks is None else chunks:
                total += len(chunk)
                if self._registered + total > self._max:
                    return None
                parts.append(chunk)
        built = DeleteRegistry(_joined(parts))
        with self._lock:
            if key not in self._registries and self._registered + total <= self._max:
                self._registries[key] = built
                self._registered += total
        return built

    def _small_files(self, fs: pafs.FileSystem, sources: Sequence[DeleteSource],
                     write_ids: ValidWriteIdList) -> dict[str, list[KeyArrays]]:
        """The events of the small files of ``sources`` not held yet, decoded together in
        batches of at most ``_BATCH_BYTES`` (see ``read.delete_batch``), and held."""
        small = [s for s in sources if s.path not in self._files and s.size is not None
                 and s.size < SMALL_DELETE_BYTES]
        out: dict[str, list[KeyArrays]] = {}
        batch: list[DeleteSource] = []
        for i, source in enumerate(small):
            batch.append(source)
            size = sum(s.size or 0 for s in batch)
            if i + 1 < len(small) and size + (small[i + 1].size or 0) <= _BATCH_BYTES:
                continue
            if len(batch) > 1:
                for done, chunks in zip(batch, small_delete_events(fs, batch, write_ids),
                                        strict=True):
                    self._hold(done.path, chunks)
                    out[done.path] = chunks
                if sum(len(c) for chunks in out.values() for c in chunks) > self._max:
                    break  # the registry would not be built anyway
            batch = []
        return out

    def _hold(self, path: str, chunks: list[KeyArrays]) -> None:
        size = sum(len(c) for c in chunks)
        with self._lock:
            if self._held + size <= self._max and path not in self._files:
                self._files[path] = chunks
                self._held += size

    def events(self, fs: pafs.FileSystem, source: DeleteSource, write_ids: ValidWriteIdList
               ) -> Iterator[KeyArrays]:
        cached = self._files.get(source.path)
        if cached is not None:
            yield from cached
            return
        chunks: list[KeyArrays] = []
        for chunk in delete_events(fs, source, write_ids):
            chunks.append(chunk)
            yield chunk
        self._hold(source.path, chunks)


def load_registry(fs: pafs.FileSystem, split: Split, write_ids: ValidWriteIdList, *,
                  limit: int = DELETE_EVENT_LIMIT, cache: DeleteCache | None = None
                  ) -> DeleteRegistry | None:
    """Load a split's delete events; ``None`` when they exceed ``limit`` (use the merge).
    A ``cache`` (one per scan and snapshot) shares decoded delete files between splits."""
    if cache is not None and len(split.deletes) > 1:
        shared = cache.registry(fs, split.deletes, write_ids)
        if shared is not None and len(shared) <= limit:
            return shared
    parts: list[KeyArrays] = []
    total = 0
    for source in split.deletes:
        chunks = cache.events(fs, source, write_ids) if cache is not None \
            else delete_events(fs, source, write_ids)
        for chunk in chunks:
            keys = in_write_id_range(chunk, split.min_write_id, split.max_write_id)
            total += len(keys)
            if total > limit:
                return None
            if len(keys):
                parts.append(keys)
    return DeleteRegistry(_joined(parts))
