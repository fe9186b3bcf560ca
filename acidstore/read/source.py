"""The rows of a split's own file, decoded stripe by stripe (the input of both readers).

It applies what does not depend on delete events: row-level write-id validity (spec §8.1 rule
1, for deltas that are only partly valid), synthetic ROW__IDs for files without ACID columns
(§9), and the integrity checks (bucket ids, key order). The ACID columns are decoded only
when needed, as Hive's ``hive.optimize.acid.meta.columns`` does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.errors import CorruptFileError
from acidstore.orc.io import OrcFile, RowKey
from acidstore.orc.schema import (
    BUCKET,
    CURRENT_TRANSACTION,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
)
from acidstore.read.keys import KeyArrays, check_bucket, check_key_order, valid_write_id_mask
from acidstore.read.plan import Split
from acidstore.writeids import ValidWriteIdList

__all__ = ["SplitBatch", "split_batches"]


@dataclass(frozen=True)
class SplitBatch:
    """Decoded rows of a split: user fields by table position, and their ROW__IDs if asked."""

    num_rows: int
    #: (table position, array) for each requested position the file has
    columns: tuple[tuple[int, pa.Array], ...]
    keys: KeyArrays | None

    def filter(self, keep: np.ndarray) -> SplitBatch:
        """Keep the rows where ``keep`` is true."""
        mask = pa.array(keep, type=pa.bool_())
        return SplitBatch(
            int(np.count_nonzero(keep)),
            tuple((pos, arr.filter(mask)) for pos, arr in self.columns),
            self.keys.take(keep) if self.keys is not None else None,
        )


def _user_arrays(row: pa.Array, positions: Sequence[int]) -> tuple[tuple[int, pa.Array], ...]:
    if isinstance(row, pa.ChunkedArray):
        row = row.combine_chunks()
    if row.null_count:
        children = row.flatten()  # honours the struct's own nulls
    else:
        children = [row.field(i) for i in range(row.type.num_fields)]
    return tuple(zip(positions, children, strict=True))


def split_batches(fs: pafs.FileSystem, split: Split, write_ids: ValidWriteIdList,
                  positions: Sequence[int] | None, *, need_keys: bool
                  ) -> Iterator[SplitBatch]:
    """Decode ``split``; ``positions`` are the table positions of the user fields wanted
    (None = all). With ``need_keys`` every batch carries its ROW__IDs."""
    orc = OrcFile(fs, split.path, logical_length=split.logical_length)
    width = orc.row_type.num_fields
    wanted = list(range(width)) if positions is None else [p for p in positions if p < width]
    if split.synthetic is not None:
        if orc.is_acid:
            raise CorruptFileError("expected a file without ACID columns", path=split.path)
        yield from _synthetic_batches(orc, split, wanted, need_keys)
        return
    if not orc.is_acid:
        raise CorruptFileError("a bucket file in an ACID directory has no ACID event schema",
                               path=split.path)
    check_rows = not split.rows_valid
    acid = [ORIGINAL_TRANSACTION, BUCKET, ROW_ID] if need_keys else []
    if check_rows:
        acid.append(CURRENT_TRANSACTION)
    if not acid and not wanted:
        acid = [OPERATION]  # something cheap, only to learn the row count
    columns = orc.physical_columns(acid, wanted)
    previous: RowKey | None = None
    for stripe in range(orc.nstripes):
        batch = orc.canonical(orc.read_stripe(stripe, columns))
        if batch.num_rows == 0:
            continue
        keys = None
        if need_keys:
            keys = KeyArrays(
                batch.column(ORIGINAL_TRANSACTION).to_numpy(zero_copy_only=False).astype(np.int64),
                batch.column(BUCKET).to_numpy(zero_copy_only=False).astype(np.int32),
                batch.column(ROW_ID).to_numpy(zero_copy_only=False).astype(np.int64),
            )
            check_bucket(keys.bucket, split.bucket_id, split.path)
            check_key_order(keys, previous, split.path, strict=True)
            previous = keys.last()
        user = _user_arrays(batch.column(ROW), wanted) if wanted else ()
        out = SplitBatch(batch.num_rows, user, keys)
        if check_rows:
            current = batch.column(CURRENT_TRANSACTION).to_numpy(zero_copy_only=False)
            valid = valid_write_id_mask(current.astype(np.int64), write_ids)
            if not bool(valid.all()):
                out = out.filter(valid)
        if out.num_rows:
            yield out


def _synthetic_batches(orc: OrcFile, split: Split, wanted: list[int], need_keys: bool
                       ) -> Iterator[SplitBatch]:
    """Rows of an original/raw file with the ROW__IDs Hive would assign them."""
    assert split.synthetic is not None
    synthetic = split.synthetic
    columns = orc.physical_columns([], wanted or [0])
    offset = synthetic.row_offset
    for stripe in range(orc.nstripes):
        batch = orc.read_stripe(stripe, columns)
        n = batch.num_rows
        if n == 0:
            continue
        keys = None
        if need_keys:
            keys = KeyArrays(np.full(n, synthetic.write_id, dtype=np.int64),
                             np.full(n, synthetic.bucket_property, dtype=np.int32),
                             np.arange(offset, offset + n, dtype=np.int64))
        offset += n
        user = tuple(zip(wanted, batch.columns, strict=True)) if wanted else ()
        yield SplitBatch(n, user, keys)
