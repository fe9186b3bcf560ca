"""Small files of one directory read as one batch (the vectorized reader's small-file path).

After N small statements a bucket has N small insert files, and every file read alone costs
the same Python whatever its rows: key checks, the filter, the delete lookup and the batch
assembly are 40-50 Arrow and numpy calls of 5-20 us each, so 0.3-0.4 ms a file, more than
pyarrow takes to decode a file of a thousand rows. Here consecutive small bucket files of one
partition (the files of one delta directory, or one bucket's files of several directories:
``Scan._units``) are decoded one by one and concatenated, and everything after decoding runs
once over all their rows. Each file is still checked as its own: its bucket id against its
name, its ROW__IDs strictly increasing within it (not across files), its event count against
what a compaction recorded, and each file's rows are looked up in the delete registry of its
own split. A group's files need the row-level write-id check all or none (one directory, or
directories whose write ids are all valid), so the check is decided once for the group.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from acidstore.errors import CorruptFileError
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.schema import (
    BUCKET,
    CURRENT_TRANSACTION,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
)
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read.keys import (
    check_files,
    current_write_ids,
    key_arrays,
    valid_write_id_mask,
)
from acidstore.read.registry import DeleteRegistry
from acidstore.read.split_source import Probe, SplitBatch, probe_passing, struct_column
from acidstore.read.splits import Split

__all__ = ["GROUP_MAX_BYTES", "SmallFile", "groupable", "read_small_files"]

#: a bucket file below this size is read in a group: an UPDATE's, DELETE's or MERGE's
#: hundreds to tens of thousands of rows per bucket; a loaded or compacted bucket file is tens
#: of megabytes (and a file of 1 MiB, about 30,000 rows, decodes in a few ms)
GROUP_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SmallFile:
    """A split to read in a group, opened, with its delete registry (None: no deletes)."""

    split: Split
    orc: OrcFile
    registry: DeleteRegistry | None


def groupable(split: Split) -> bool:
    """Whether ``split`` may be read in a group: a small ACID file read as it is (no synthetic
    ROW__IDs of an original file, no streaming side file)."""
    return split.size is not None and split.size < GROUP_MAX_BYTES and \
        split.synthetic is None and split.logical_length is None


def _opened(split: Split, orc: OrcFile) -> None:
    """The check ``split_batches`` makes when it opens a file (the opening itself checked its
    bytes and events against the record: ``Scan._unit_batches``)."""
    if not orc.is_acid:
        raise CorruptFileError("a bucket file in an ACID directory has no ACID event schema",
                               path=split.path)


def read_small_files(files: Sequence[SmallFile], write_ids: ValidWriteIdList,
                     positions: Sequence[int] | None, *, with_row_id: bool,
                     probe: Probe | None) -> Iterator[SplitBatch]:
    """The visible rows of ``files`` (small bucket files of one partition, with one file
    schema), in file order, as one batch; the same rows ``read_split`` gives file by file."""
    first = files[0]
    for small in files:
        _opened(small.split, small.orc)
    width = first.orc.row_type.num_fields
    wanted = list(range(width)) if positions is None else [p for p in positions if p < width]
    applies = [f.registry is not None and
               f.registry.touches(f.split.min_write_id, f.split.max_write_id) for f in files]
    need_keys = with_row_id or any(applies)
    check_rows = not all(f.split.rows_valid for f in files)  # all or none: _units
    acid = [ORIGINAL_TRANSACTION, BUCKET, ROW_ID] if need_keys else []
    if check_rows:
        acid.append(CURRENT_TRANSACTION)
    if not acid and not wanted:
        acid = [OPERATION]  # something cheap, only to learn the row count
    columns = first.orc.physical_columns(acid, wanted)
    parts: list[pa.RecordBatch] = []
    lengths = []
    for small in files:
        rows = 0
        for stripe in range(small.orc.nstripes):
            part = small.orc.canonical(small.orc.read_stripe(stripe, columns))
            rows += part.num_rows
            if part.num_rows:
                parts.append(part)
        lengths.append(rows)
    if not parts:
        return
    batch = pa.concat_batches(parts) if len(parts) > 1 else parts[0]
    keys = key_arrays(batch) if need_keys else None
    own_keys = check_files(keys, [(f.split.bucket_id, f.split.path) for f in files], lengths,
                           strict=True) if keys is not None else []
    row = struct_column(batch.column(ROW)) if wanted else None
    out = SplitBatch(batch.num_rows, tuple(wanted), row, keys)
    keep = probe_passing(probe, out) if probe is not None else None
    passing = np.ones(out.num_rows, dtype=np.bool_) if keep is None else keep
    if check_rows:
        passing &= valid_write_id_mask(current_write_ids(batch), write_ids)
    start = 0
    for small, applied, own in zip(files, applies, own_keys, strict=False):
        if applied and len(own):
            assert small.registry is not None
            passing[start:start + len(own)] &= ~small.registry.deleted(own)
        start += len(own)
    if not with_row_id:
        out = SplitBatch(out.num_rows, out.positions, out.row, None)
    if not passing.all():
        out = out.filter(passing)
    if out.num_rows:
        yield SplitBatch(out.num_rows, out.positions, out.row, out.keys, keep is not None)

