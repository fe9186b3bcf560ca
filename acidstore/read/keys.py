"""Vectorised operations on ROW__ID keys shared by both readers.

Keys are three numpy arrays (originalTransaction int64, bucket property int32, rowId int64)
compared lexicographically, the bucket as a *signed* int, as Hive's RecordIdentifier does.
Everything here works on whole arrays: a reader never touches a row in Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from acidstore.errors import DataError
from acidstore.format.orc.acid_metadata import RowKey
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.schema import BUCKET, CURRENT_TRANSACTION, ORIGINAL_TRANSACTION, ROW_ID
from acidstore.format.orc.stats import IntegerStats
from acidstore.format.writeids import ValidWriteIdList

__all__ = [
    "KeyArrays",
    "key_arrays",
    "check_bucket",
    "check_files",
    "check_key_order",
    "checked_constant_row_ids",
    "constant_keys",
    "current_write_ids",
    "key_le",
    "stripe_key_constants",
    "valid_write_id_mask",
    "writer_ids",
]

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
Bool = npt.NDArray[np.bool_]

_VERSION_SHIFT = 29
_V1 = 1


@dataclass(frozen=True)
class KeyArrays:
    """ROW__IDs of a batch of events, as parallel arrays. ``constant``: every key carries
    this (originalTransaction, bucket) pair, and the first two arrays are read-only views
    of it (see ``constant_keys``), so a lookup can go straight to the pair's run."""

    write_id: I64
    bucket: I32
    row_id: I64
    constant: tuple[int, int] | None = None

    @classmethod
    def empty(cls) -> KeyArrays:
        """No events, typed as every batch is (so concatenation keeps the dtypes)."""
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64))

    def __len__(self) -> int:
        return len(self.row_id)

    def take(self, mask_or_index: Bool | npt.NDArray[np.intp]) -> KeyArrays:
        if self.constant is not None:
            return constant_keys(self.row_id[mask_or_index], self.constant)
        return KeyArrays(self.write_id[mask_or_index], self.bucket[mask_or_index],
                         self.row_id[mask_or_index])

    def last(self) -> RowKey:
        return (int(self.write_id[-1]), int(self.bucket[-1]), int(self.row_id[-1]))

    def first(self) -> RowKey:
        return (int(self.write_id[0]), int(self.bucket[0]), int(self.row_id[0]))


def _int_array(column: pa.Array | pa.ChunkedArray, dtype: type[np.generic]) -> np.ndarray:
    """A numpy view of an integer column (no copy when the type already matches)."""
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=dtype)


def key_arrays(batch: pa.RecordBatch) -> KeyArrays:
    """The ROW__IDs of a decoded batch with canonical ACID column names."""
    return KeyArrays(_int_array(batch.column(ORIGINAL_TRANSACTION), np.int64),
                     _int_array(batch.column(BUCKET), np.int32),
                     _int_array(batch.column(ROW_ID), np.int64))


def stripe_key_constants(orc: OrcFile) -> list[tuple[int, int] | None]:
    """Per stripe of an event file, its one (originalTransaction, bucket) when the stripe's
    statistics prove that every event carries the same pair, else None.

    An insert delta's stripe holds one statement's events, so only its rowIds differ:
    decoding the other two ROW__ID columns (about 5% of a full scan's CPU, 10-15% of a
    projected one's) buys nothing. Only a proof counts: both columns hold as many values as
    the stripe has events (no NULL) and their minimum equals their maximum; a file without
    statistics decodes every column, as before."""
    stats = orc.acid_statistics([ORIGINAL_TRANSACTION, BUCKET])
    if stats is None:
        return [None] * orc.nstripes
    return [_constant_pair(stripe) for stripe in stats]


def _constant_pair(stripe: Mapping[str, IntegerStats]) -> tuple[int, int] | None:
    events = stripe.get("")
    write_id, bucket = stripe.get(ORIGINAL_TRANSACTION), stripe.get(BUCKET)
    if events is None or write_id is None or bucket is None or not events.values:
        return None
    for column in (write_id, bucket):
        if column.values != events.values or column.minimum is None or \
                column.minimum != column.maximum:
            return None
    assert write_id.minimum is not None and bucket.minimum is not None
    return write_id.minimum, bucket.minimum


def checked_constant_row_ids(batch: pa.RecordBatch, constant: tuple[int, int], bucket_id: int,
                             previous: RowKey | None, path: str) -> I64:
    """The rowIds of a stripe decoded with its rowIds only, the other two columns being
    ``constant`` (see ``stripe_key_constants``), checked as ``check_bucket`` and a strict
    ``check_key_order`` check full keys: the pair once, the order on the rowIds alone. The
    keys are built by ``constant_keys`` afterwards, for only the rows a filter keeps."""
    row_id: I64 = _int_array(batch.column(ROW_ID), np.int64)
    if not len(row_id):
        return row_id
    check_bucket(np.asarray([constant[1]], dtype=np.int32), bucket_id, path)
    bad = row_id[1:] <= row_id[:-1]
    first_bad: int | None = int(np.argmax(bad)) + 1 if bad.any() else None
    if first_bad is None and previous is not None and \
            (constant[0], constant[1], int(row_id[0])) <= previous:
        first_bad = 0
    if first_bad is not None:
        at = (constant[0], constant[1], int(row_id[first_bad]))
        raise DataError(f"events out of ROW__ID order at {at}", path=path)
    return row_id


def constant_keys(row_id: I64, constant: tuple[int, int]) -> KeyArrays:
    """The ROW__IDs of rows with these rowIds and the ``constant`` (originalTransaction,
    bucket) pair (see ``checked_constant_row_ids``). The pair's arrays are broadcast views,
    not copies: a base stripe's million rows would otherwise cost 12 MB written and read
    again by every check of the pair, about 4% of a full scan's CPU."""
    n = len(row_id)
    return KeyArrays(np.broadcast_to(np.int64(constant[0]), n),
                     np.broadcast_to(np.int32(constant[1]), n), row_id, constant)


def current_write_ids(batch: pa.RecordBatch) -> I64:
    """The currentTransaction column of a decoded batch."""
    out: I64 = _int_array(batch.column(CURRENT_TRANSACTION), np.int64)
    return out


def valid_write_id_mask(write_ids: npt.NDArray[np.int64], snapshot: ValidWriteIdList) -> Bool:
    """Which write ids are valid in ``snapshot`` (≤ high watermark and not an exception)."""
    mask: Bool = write_ids <= snapshot.high_watermark
    exceptions = snapshot.exceptions
    if exceptions:
        mask &= ~np.isin(write_ids, np.asarray(exceptions, dtype=np.int64))
    return mask


def writer_ids(bucket: I32) -> I32:
    """Decode the writer (bucket) id of each bucket property: V1 bits 16..27, V0 the value."""
    version = (bucket.view(np.uint32) >> _VERSION_SHIFT).astype(np.int32)
    v1: I32 = ((bucket >> 16) & 0x0FFF).astype(np.int32)
    if np.all(version == _V1):
        return v1
    if np.any((version != _V1) & (version != 0)):
        bad = int(bucket[(version != _V1) & (version != 0)][0])
        raise DataError(f"Illegal 'bucket' format. Version={(bad >> 29) & 7} in value {bad}")
    out: I32 = np.where(version == _V1, v1, bucket).astype(np.int32)
    return out


def check_bucket(bucket: I32, bucket_id: int, path: str) -> None:
    """Refuse events whose bucket property names another bucket than their ``bucket_N`` file
    (Hive: "Corrupted records with different bucket ids from the containing bucket file")."""
    if len(bucket) == 0:
        return
    if bool((bucket == bucket[0]).all()):
        bucket = bucket[:1]  # one statement's file: decode the property once
    try:
        ids = writer_ids(bucket)
    except DataError as exc:  # an unknown codec version: say which file holds it
        raise DataError(str(exc), path=path) from None
    wrong = ids != bucket_id
    if np.any(wrong):
        found = int(ids[np.argmax(wrong)])
        raise DataError(
            f"Corrupted records with different bucket ids from the containing bucket file "
            f"found! Expected bucket id {bucket_id}, however found {found}", path=path)


def _lt(a: KeyArrays, b: KeyArrays) -> Bool:
    """Elementwise a < b for aligned key arrays."""
    out: Bool = (a.write_id < b.write_id) | (
        (a.write_id == b.write_id) & ((a.bucket < b.bucket) | (
            (a.bucket == b.bucket) & (a.row_id < b.row_id))))
    return out


def key_le(keys: KeyArrays, bound: RowKey) -> Bool:
    """Elementwise keys ≤ bound."""
    w, b, r = bound
    out: Bool = (keys.write_id < w) | ((keys.write_id == w) & (
        (keys.bucket < b) | ((keys.bucket == b) & (keys.row_id <= r))))
    return out


def check_key_order(keys: KeyArrays, previous: RowKey | None, path: str, *, strict: bool
                    ) -> None:
    """Refuse a file whose events are not in ROW__ID order.

    Insert events must be strictly increasing (a ROW__ID is unique); delete events may repeat a
    key (several deletes of one row by different write ids) but never go backwards.
    """
    n = len(keys)
    if n == 0:
        return
    w, b, r = keys.write_id, keys.bucket, keys.row_id
    if bool((w == w[0]).all()) and bool((b == b[0]).all()):
        # one statement's events (every delta file): the order is the rowIds' alone, a
        # third of the passes of the three-part comparison
        bad = r[1:] < r[:-1] if not strict else r[1:] <= r[:-1]
    else:
        head = KeyArrays(w[:-1], b[:-1], r[:-1])
        tail = KeyArrays(w[1:], b[1:], r[1:])
        bad = _lt(tail, head) if not strict else ~_lt(head, tail)
    first_bad: int | None = int(np.argmax(bad)) + 1 if np.any(bad) else None
    if previous is not None and first_bad is None:
        first = keys.first()
        if first < previous or (strict and first == previous):
            first_bad = 0
    if first_bad is not None:
        at = (int(keys.write_id[first_bad]), int(keys.bucket[first_bad]),
              int(keys.row_id[first_bad]))
        raise DataError(f"events out of ROW__ID order at {at}", path=path)


def check_files(keys: KeyArrays, files: Sequence[tuple[int, str]], lengths: Sequence[int], *,
                strict: bool) -> list[KeyArrays]:
    """``check_bucket`` and ``check_key_order`` for several files' events read as one array
    (``lengths`` events of each (bucket id, path) in turn), in a few passes over all of them:
    order is checked within each file, not across. A file that fails is checked alone, so
    the error names it. Returns each file's keys (views, no copy)."""
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    expected = np.repeat(np.asarray([bucket for bucket, _ in files], dtype=np.int32), lengths)
    try:
        wrong = bool(np.any(writer_ids(keys.bucket) != expected))
    except DataError:
        wrong = True
    n = len(keys)
    head = KeyArrays(keys.write_id[:-1], keys.bucket[:-1], keys.row_id[:-1])
    tail = KeyArrays(keys.write_id[1:], keys.bucket[1:], keys.row_id[1:])
    bad = ~_lt(head, tail) if strict else _lt(tail, head)
    cuts = ends[:-1]
    bad[cuts[(cuts > 0) & (cuts < n)] - 1] = False  # a file may start below the last one
    parts, start = [], 0
    for end in ends.tolist():
        parts.append(KeyArrays(keys.write_id[start:end], keys.bucket[start:end],
                               keys.row_id[start:end]))
        start = end
    if wrong or bool(bad.any()):
        for (bucket, path), own in zip(files, parts, strict=True):
            check_bucket(own.bucket, bucket, path)
            check_key_order(own, None, path, strict=strict)
    return parts
