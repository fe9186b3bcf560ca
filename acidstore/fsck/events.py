"""fsck's look inside one bucket file: only the four ROW__ID / write-id columns, a stripe at a
time, so memory is bounded by one stripe of four integer columns whatever the row width.

Per file it checks that the file opens, has Hive's event schema and ``hive.acid.key.index``,
that the index names the last key of every stripe, that every event belongs to the file's
bucket and its directory's write-id range, and that keys are sorted (strictly for inserts: a
ROW__ID is unique). What it learns for the partition-wide checks it hands back: the ROW__ID
range each insert file holds per (write id, bucket property), and, through
:class:`DeleteTargets`, which delete events found their row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow.fs as pafs

from acidstore.errors import CorruptFileError, DataError, MissingDataError
from acidstore.format.layout import FLUSH_LENGTH_SUFFIX
from acidstore.format.orc.acid_metadata import RowKey
from acidstore.format.orc.file_reader import OrcFile, read_flush_length
from acidstore.format.orc.schema import BUCKET, CURRENT_TRANSACTION, ORIGINAL_TRANSACTION, ROW_ID
from acidstore.format.writeids import ValidWriteIdList
from acidstore.fsck.findings import Check
from acidstore.read.keys import (
    KeyArrays,
    check_bucket,
    check_key_order,
    current_write_ids,
    key_arrays,
    valid_write_id_mask,
)

__all__ = ["DeleteTargets", "FileReport", "Group", "Span", "scan_file"]

Group = tuple[int, int]
"""(write id, bucket property): the unit within which row ids are dense and unique."""

I64 = npt.NDArray[np.int64]
_LONG_MIN = -(2**63)
_KEY_COLUMNS = (ORIGINAL_TRANSACTION, BUCKET, ROW_ID, CURRENT_TRANSACTION)


@dataclass(frozen=True)
class Span:
    """What a directory promises about its events: inserts or deletes of write ids
    ``low..high`` (a base: inserts of any write id up to its own)."""

    kind: Literal["base", "insert", "delete"]
    low: int
    high: int
    #: an uncompacted ranged insert delta may be a streaming file with a ``_flush_length``
    streaming: bool = False


@dataclass
class FileReport:
    """What scanning one file found: problems (check, message) and, for an insert file, the
    ROW__ID range per group of its valid events; for a delete file, the valid delete keys."""

    problems: list[tuple[Check, str]] = field(default_factory=list)
    ranges: dict[Group, tuple[int, int]] = field(default_factory=dict)
    deletes: dict[Group, list[I64]] = field(default_factory=lambda: defaultdict(list))


def _groups(keys: KeyArrays) -> Iterator[tuple[Group, I64]]:
    """The row ids of each (write id, bucket) group of a batch (usually one group)."""
    if len(keys) == 0:
        return
    w, b = keys.write_id, keys.bucket
    if bool((w == w[0]).all() and (b == b[0]).all()):
        yield (int(w[0]), int(b[0])), keys.row_id
        return
    pairs = np.unique(np.stack([w, b.astype(np.int64)], axis=1), axis=0)
    for write_id, bucket in pairs:
        mask = (w == write_id) & (b == bucket)
        yield (int(write_id), int(bucket)), keys.row_id[mask]


class DeleteTargets:
    """The valid delete events of one bucket of a partition, waiting for the inserts that
    hold their rows; memory is the delete events only (as Hive's delete registry)."""

    def __init__(self) -> None:
        self._files: list[tuple[str, dict[Group, I64], dict[Group, npt.NDArray[np.bool_]]]] = []

    def add(self, path: str, deletes: dict[Group, list[I64]]) -> None:
        targets = {g: np.unique(np.concatenate(parts)) for g, parts in deletes.items() if parts}
        if targets:
            self._files.append((path, targets, {g: np.zeros(len(t), np.bool_)
                                                for g, t in targets.items()}))

    def mark(self, keys: KeyArrays) -> None:
        """These insert keys exist: their deletes are not dangling."""
        if not self._files:
            return
        for group, rows in _groups(keys):
            for _, targets, found in self._files:
                if group in targets:
                    found[group] |= np.isin(targets[group], rows)

    def mark_range(self, group: Group, first: int, last: int) -> None:
        """Rows ``first..last`` of ``group`` exist (synthetic ROW__IDs of an original file)."""
        for _, targets, found in self._files:
            if group in targets:
                found[group] |= (targets[group] >= first) & (targets[group] <= last)

    def dangling(self) -> Iterator[tuple[str, int, RowKey]]:
        """(delete file, how many of its deletes found no row, the first such ROW__ID)."""
        for path, targets, found in self._files:
            missing = [(g, targets[g][~found[g]]) for g in sorted(targets)]
            missing = [(g, rows) for g, rows in missing if len(rows)]
            if missing:
                (write_id, bucket), rows = missing[0]
                yield path, sum(len(r) for _, r in missing), (write_id, bucket, int(rows[0]))


def _open(fs: pafs.FileSystem, path: str, span: Span) -> OrcFile:
    length = read_flush_length(fs, path + FLUSH_LENGTH_SUFFIX) if span.streaming else None
    return OrcFile(fs, path, logical_length=length)


def scan_file(fs: pafs.FileSystem, path: str, bucket_id: int, span: Span, *,
              write_ids: ValidWriteIdList, targets: DeleteTargets | None) -> FileReport:
    """Check one non-empty bucket file; ``targets`` (insert files) learn which deletes hit."""
    report = FileReport()
    problems = report.problems
    try:
        orc = _open(fs, path, span)
    except (CorruptFileError, MissingDataError) as exc:  # gone since listed
        problems.append(("unreadable_file", str(exc)))
        return report
    if not orc.is_acid:
        problems.append(("missing_acid_metadata", f"not an ACID event file (columns "
                         f"{orc.schema.names}), but a bucket file of an ACID directory: {path}"))
        return report
    index: list[RowKey] | None = None
    try:
        index = orc.key_index
        if index is None:
            problems.append(("missing_acid_metadata", f"no hive.acid.key.index in {path}: Hive "
                         "readers cannot bound delete events (older ones read it as pre-ACID "
                         "data)"))
    except CorruptFileError as exc:
        problems.append(("key_index_mismatch", str(exc)))
    columns = orc.physical_columns(_KEY_COLUMNS, [])
    last_keys: list[RowKey] = []
    previous: RowKey | None = None
    seen: set[Check] = set()

    def once(check: Check, message: str) -> None:
        if check not in seen:
            seen.add(check)
            problems.append((check, message))

    low = _LONG_MIN if span.kind == "base" else span.low
    for stripe in range(orc.nstripes):
        try:
            batch = orc.canonical(orc.read_stripe(stripe, columns))
        except CorruptFileError as exc:
            problems.append(("unreadable_file", str(exc)))
            return report
        if batch.num_rows == 0:
            continue
        keys = key_arrays(batch)
        current = current_write_ids(batch)
        last_keys.append(keys.last())
        try:
            check_bucket(keys.bucket, bucket_id, path)
        except DataError as exc:
            once("bucket_mismatch", str(exc))
        try:
            check_key_order(keys, previous, path, strict=False)
            if span.kind != "delete":
                try:
                    check_key_order(keys, previous, path, strict=True)
                except DataError as exc:
                    once("duplicate_row_id", str(exc).replace("events out of ROW__ID order",
                                                              "a ROW__ID inserted twice"))
        except DataError as exc:
            once("row_id_order", str(exc))
        previous = keys.last()
        outside = (current < low) | (current > span.high)
        if outside.any():
            once("write_id_range", f"an event of write id {int(current[np.argmax(outside)])} "
                 f"in a directory of write ids {span.low}..{span.high}: {path}")
        valid = keys.take(valid_write_id_mask(current, write_ids))
        if span.kind == "delete":
            for group, rows in _groups(valid):
                report.deletes[group].append(rows)
            continue
        for group, rows in _groups(valid):
            first, last = int(rows.min()), int(rows.max())
            old = report.ranges.get(group)
            report.ranges[group] = (first, last) if old is None else (
                min(old[0], first), max(old[1], last))
        if targets is not None:
            targets.mark(valid)
    if index is not None and index != last_keys:
        at = next((i for i, (a, b) in enumerate(zip(index, last_keys, strict=False)) if a != b),
                  min(len(index), len(last_keys)))
        problems.append(("key_index_mismatch", f"hive.acid.key.index has {len(index)} "
                         f"entries for {len(last_keys)} stripes and differs at stripe {at} "
                         f"(index {index[at] if at < len(index) else None}, last key "
                         f"{last_keys[at] if at < len(last_keys) else None}): {path}"))
    return report
