"""The delete events of several small delete files, decoded together.

After N small DELETE/UPDATE statements a bucket has N delete files of a few hundred events
each, and ``registry.delete_events`` costs about 0.2 ms of Python per file (key arrays, bucket
and order checks, validity) besides pyarrow's decode. Here each file is decoded alone and the
checks and the write-id validity run once over the events of all of them; a file that fails
a check is checked again alone, so the error names it as ``delete_events`` would.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.errors import CorruptFileError
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.schema import BUCKET, CURRENT_TRANSACTION, ORIGINAL_TRANSACTION, ROW_ID
from acidstore.format.writeids import RangeResponse, ValidWriteIdList
from acidstore.read.keys import (
    KeyArrays,
    check_files,
    current_write_ids,
    key_arrays,
    valid_write_id_mask,
)
from acidstore.read.splits import DeleteSource

__all__ = ["SMALL_DELETE_BYTES", "small_delete_events"]

#: delete files below this size are decoded together (one holds tens of thousands of events)
SMALL_DELETE_BYTES = 1024 * 1024

_KEYS = (ORIGINAL_TRANSACTION, BUCKET, ROW_ID)


def small_delete_events(fs: pafs.FileSystem, sources: Sequence[DeleteSource],
                        write_ids: ValidWriteIdList) -> list[list[KeyArrays]]:
    """Per source, its valid delete events (the chunks ``delete_events`` would yield, here at
    most one), checked as ``delete_events`` checks them."""
    opened = []
    for source in sources:
        orc = OrcFile(fs, source.path, size=source.recorded_size)
        if not orc.is_acid:
            raise CorruptFileError("delete delta file has no ACID event schema",
                                   path=source.path)
        # a directory whose write ids are all valid holds only valid events
        partial = write_ids.is_write_id_range_valid(
            source.min_write_id, source.max_write_id) != RangeResponse.ALL
        opened.append((orc, partial))
    any_partial = any(partial for _, partial in opened)
    wanted = [*_KEYS, CURRENT_TRANSACTION] if any_partial else list(_KEYS)
    parts: list[pa.RecordBatch] = []
    lengths = []
    for orc, _ in opened:
        columns = orc.physical_columns(wanted, [])
        rows = 0
        for stripe in range(orc.nstripes):
            part = orc.canonical(orc.read_stripe(stripe, columns))
            if part.num_rows:
                parts.append(part)
                rows += part.num_rows
        lengths.append(rows)
    if not parts:
        return [[] for _ in sources]
    batch = pa.concat_batches(parts) if len(parts) > 1 else parts[0]
    own_keys = check_files(key_arrays(batch), [(s.bucket_id, s.path) for s in sources],
                           lengths, strict=False)
    current = current_write_ids(batch) if any_partial else None
    out: list[list[KeyArrays]] = []
    start = 0
    for (_, partial), own in zip(opened, own_keys, strict=True):
        end = start + len(own)
        kept = own
        if partial and current is not None:
            valid = valid_write_id_mask(current[start:end], write_ids)
            kept = own if bool(valid.all()) else own.take(valid)
        out.append([kept] if len(kept) else [])
        start = end
    return out

