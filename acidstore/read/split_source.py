"""The rows of a split's own file, decoded stripe by stripe (the input of both readers).

It applies what does not depend on delete events: row-level write-id validity (spec §8.1 rule
1, for deltas that are only partly valid), synthetic ROW__IDs for files without ACID columns
(§9), and the integrity checks (bucket ids, key order). The ACID columns are decoded only
when needed, as Hive's ``hive.optimize.acid.meta.columns`` does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from acidstore.errors import CorruptFileError, InvalidExpressionError
from acidstore.format.orc.acid_metadata import RowKey
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
from acidstore.read.bounds import StripeBounds, stripes_without_match
from acidstore.read.keys import (
    KeyArrays,
    check_bucket,
    check_key_order,
    checked_constant_row_ids,
    constant_keys,
    current_write_ids,
    key_arrays,
    stripe_key_constants,
    valid_write_id_mask,
)
from acidstore.read.range_mask import RangeMask
from acidstore.read.ranges import stripe_range
from acidstore.read.splits import Split

__all__ = ["PROBE_MIN_ROWS", "Probe", "SplitBatch", "probe_passing", "split_batches",
           "struct_column"]

#: the average stripe size (rows) from which a probe pays: each stripe read has a fixed cost
#: (about 0.1-0.3 ms in pyarrow, whatever the rows), so a file of small stripes (an UPDATE's
#: few hundred rows per bucket) is cheaper to decode whole in one read than in two
PROBE_MIN_ROWS = 4096


@dataclass(frozen=True)
class SplitBatch:
    """Decoded rows of a split: the user fields at table ``positions`` (as one struct, so a
    filter is one call over every column), and their ROW__IDs when asked for."""

    num_rows: int
    positions: tuple[int, ...]
    row: pa.StructArray | None
    keys: KeyArrays | None
    #: the read's filter (``Probe``) was applied: these rows pass it
    filtered: bool = False

    def filter(self, keep: np.ndarray) -> SplitBatch:
        """Keep the rows where ``keep`` is true."""
        count = int(np.count_nonzero(keep))
        if count == len(keep):
            return self  # every row: the same arrays (a delta's row its predicate matches)
        if count == 0:
            # no row (most one-row deltas a one-row statement reads): empty slices of the
            # same arrays instead of a take per column
            return SplitBatch(0, self.positions,
                              None if self.row is None else self.row.slice(0, 0),
                              None if self.keys is None else self.keys.take(keep),
                              self.filtered)
        # a selective filter (a WHERE keeping 1% of a stripe) takes the rows by index: one
        # pass over the mask instead of one per array, and no Arrow bitmap built from it
        index = np.flatnonzero(keep) if count * 8 < len(keep) else None
        keys = None
        if self.keys is not None:
            keys = self.keys.take(keep if index is None else index)
        row = None
        if self.row is not None:
            row = _filtered(self.row, pa.array(keep, type=pa.bool_())) if index is None \
                else _taken(self.row, pa.array(index))
        return SplitBatch(count, self.positions, row, keys, self.filtered)

    def columns(self) -> dict[int, pa.Array]:
        """Table position -> decoded array."""
        if self.row is None:
            return {}
        row = self.row
        children = row.flatten() if row.null_count else [
            row.field(i) for i in range(row.type.num_fields)]
        return dict(zip(self.positions, children, strict=True))


def _taken(row: pa.StructArray, index: pa.Array) -> pa.StructArray:
    """``row.take(index)``, field by field when no row is NULL (as ``_filtered``)."""
    if row.null_count:
        return row.take(index)
    fields = [row.field(i).take(index) for i in range(row.type.num_fields)]
    return pa.StructArray.from_arrays(fields, fields=list(row.type))


def _filtered(row: pa.StructArray, keep: pa.BooleanArray) -> pa.StructArray:
    """``row.filter(keep)``, field by field when no row is NULL: Arrow's struct filter
    computes the selection again for every child, twice the time of filtering the children."""
    if row.null_count:
        return row.filter(keep)
    fields = [row.field(i).filter(keep) for i in range(row.type.num_fields)]
    return pa.StructArray.from_arrays(fields, fields=list(row.type))


@dataclass(frozen=True)
class Probe:
    """A read's filter pushed into decoding. ``mask`` says which rows of a batch (its fields
    at ``positions`` at least) pass; NULL is "no". Stripes whose statistics prove that no
    row passes (``bounds``, see ``StripeBounds``) are not decoded at all; in a large stripe
    the filter's columns are decoded first and the rest only where a row passes; and rows
    are filtered before delete events are looked up. All of it sees rows before delete
    events apply, so a row it rejects could only have been rejected later too. ``exact``:
    the same filter as numpy ranges, when it is one (see ``read.range_mask``)."""

    positions: tuple[int, ...]
    mask: Callable[[SplitBatch], pa.BooleanArray]
    bounds: StripeBounds | None = None
    exact: RangeMask | None = None


def struct_column(column: pa.Array | pa.ChunkedArray) -> pa.StructArray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    out: pa.StructArray = column
    return out


def split_batches(fs: pafs.FileSystem, split: Split, write_ids: ValidWriteIdList,
                  positions: Sequence[int] | None, *, need_keys: bool,
                  probe: Probe | None = None, batch_rows: int | None = None
                  ) -> Iterator[SplitBatch]:
    """Decode ``split``; ``positions`` are the table positions of the user fields wanted
    (None = all). With ``need_keys`` every batch carries its ROW__IDs. ``probe``: skip the
    stripes where no row can pass the read's filter. ``batch_rows``: decode batches of at
    most that many rows instead of whole stripes (a compactor's bounded memory; no probe)."""
    orc = OrcFile(fs, split.path, logical_length=split.logical_length,
                  size=split.recorded_size, events=split.expected_rows)
    width = orc.row_type.num_fields
    wanted = list(range(width)) if positions is None else [p for p in positions if p < width]
    stripes = stripe_range(split, orc, batch_rows=batch_rows)
    if split.synthetic is not None:
        if orc.is_acid:
            raise CorruptFileError("expected a file without ACID columns", path=split.path)
        yield from _synthetic_batches(orc, split, wanted, need_keys, batch_rows)
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
    if batch_rows is not None:
        probe = None
    probed = [p for p in probe.positions if p < width] if probe is not None else []
    # two reads per stripe (the filter's columns, then the rest where a row passes) save
    # decoding when the filter's columns are fewer than the read's and stripes are large
    two_phase = probe is not None and bool(probed) and set(probed) < set(wanted) and \
        orc.nrows >= PROBE_MIN_ROWS * orc.nstripes
    # statistics cost a read of the file's metadata section: worth it for a large file, and
    # for a small one the process keeps (read once, then kept with it): a one-row statement
    # reads its bucket's one-row deltas, and skips every one its predicate cannot match
    skipped = stripes_without_match(orc, probe.bounds, width) \
        if probe is not None and (orc.nrows >= PROBE_MIN_ROWS or orc.held) else frozenset()
    rest = [p for p in wanted if p not in probed]
    rest_columns = orc.physical_columns(acid, rest)
    # stripes whose statistics prove one (originalTransaction, bucket) decode rowIds only
    constants = stripe_key_constants(orc) if need_keys and batch_rows is None and \
        orc.nrows >= PROBE_MIN_ROWS else [None] * orc.nstripes
    lean = [c for c in acid if c not in (ORIGINAL_TRANSACTION, BUCKET)]
    lean_columns = (orc.physical_columns(lean, wanted), orc.physical_columns(lean, rest))
    # a range after the file's first stripe continues the file's ROW__ID order check from
    # the last event before it, as a whole-file read would (ranges are read on other threads)
    previous = _key_before(orc, stripes.start, constants) \
        if need_keys and stripes.start > 0 else None
    for stripe, raw in _decoded(orc, columns, batch_rows, not two_phase, skipped,
                                stripes=stripes,
                                lean={i for i, c in enumerate(constants) if c is not None},
                                lean_columns=lean_columns[0]):
        keep: npt.NDArray[np.bool_] | None = None
        constant = constants[stripe] if stripe >= 0 else None
        if not two_phase:
            assert raw is not None
            batch = orc.canonical(raw)
        else:
            assert probe is not None
            first = _probed(orc, stripe, probed)
            keep = probe_passing(probe, SplitBatch(len(first), tuple(probed), first, None))
            if len(first) == 0 or (keep is not None and not keep.any()):
                continue  # no row of the stripe can pass: its other columns stay encoded
            batch = orc.canonical(orc.read_stripe(
                stripe, rest_columns if constant is None else lean_columns[1]))
            batch = _with_row(batch, _joined(first, probed, struct_column(batch.column(ROW)), rest,
                                             wanted))
        if batch.num_rows == 0:
            continue
        keys = None
        row_ids = None  # a constant stripe's rowIds: its keys are built once filtered
        if need_keys and constant is None:
            keys = key_arrays(batch)
            check_bucket(keys.bucket, split.bucket_id, split.path)
            check_key_order(keys, previous, split.path, strict=True)
            previous = keys.last()
        elif need_keys:
            assert constant is not None
            row_ids = checked_constant_row_ids(batch, constant, split.bucket_id, previous,
                                               split.path)
            previous = (constant[0], constant[1], int(row_ids[-1]))
        row = struct_column(batch.column(ROW)) if wanted else None
        out = SplitBatch(batch.num_rows, tuple(wanted), row, keys)
        if probe is not None and not two_phase:
            keep = probe_passing(probe, out)
        # the filter first, then (in the caller) the delete events: only rows that pass are
        # looked up in the delete registry, and a batch filtered here is not filtered again
        passing = np.ones(out.num_rows, dtype=np.bool_) if keep is None else keep
        if check_rows:
            passing &= valid_write_id_mask(current_write_ids(batch), write_ids)
        if not passing.all():
            out = out.filter(passing)
            row_ids = row_ids[passing] if row_ids is not None else None
        if row_ids is not None:
            assert constant is not None
            out = dataclasses.replace(out, keys=constant_keys(row_ids, constant))
        if keep is not None:
            out = dataclasses.replace(out, filtered=True)
        if out.num_rows:
            yield out


def _key_before(orc: OrcFile, stripe: int, constants: Sequence[tuple[int, int] | None]
                ) -> RowKey | None:
    """The ROW__ID of the last event in the stripes before ``stripe``, decoded from the
    nearest non-empty one (its rowIds only when statistics prove its other two columns)."""
    for earlier in range(stripe - 1, -1, -1):
        constant = constants[earlier]
        acid = [ROW_ID] if constant is not None else [ORIGINAL_TRANSACTION, BUCKET, ROW_ID]
        batch = orc.canonical(orc.read_stripe(earlier, orc.physical_columns(acid, [])))
        if batch.num_rows == 0:
            continue
        if constant is None:
            return key_arrays(batch).last()
        return (constant[0], constant[1], int(batch.column(ROW_ID)[-1].as_py()))
    return None


def _probe_mask(probe: Probe, batch: SplitBatch) -> pa.BooleanArray | None:
    """The rows of ``batch`` that pass the probe's filter, or None when evaluating it fails:
    the batch may hold rows a later step drops (of aborted write ids, deleted), so the filter
    is left to run where only visible rows remain, and fails there only if one of them makes
    it fail (as it did before it was pushed down)."""
    try:
        return probe.mask(batch)
    except InvalidExpressionError:
        return None


def probe_passing(probe: Probe, batch: SplitBatch) -> npt.NDArray[np.bool_] | None:
    """``_probe_mask`` as a numpy mask (NULL as false; None when the filter cannot be
    evaluated here), computed by numpy from the values when the filter is integer ranges
    (``Probe.exact``): readers filter numpy ROW__IDs with it, so an Arrow mask would be
    built only to be unpacked again."""
    if probe.exact is not None:
        fast = probe.exact.passing(batch.columns())
        if fast is not None:
            return fast
    keep = _probe_mask(probe, batch)
    if keep is None:
        return None
    out: npt.NDArray[np.bool_] = pc.fill_null(keep, False).to_numpy(zero_copy_only=False)
    return out


def _decoded(orc: OrcFile, columns: list[str], batch_rows: int | None, decode: bool,
             skipped: frozenset[int] = frozenset(), *, stripes: range | None = None,
             lean: Set[int] = frozenset(),
             lean_columns: list[str] | None = None
             ) -> Iterator[tuple[int, pa.RecordBatch | None]]:
    """(stripe, its decoded rows) per stripe of ``stripes`` (a split's range) but the
    ``skipped`` ones, or (-1, rows) per batch of ``batch_rows``; without ``decode`` only the
    stripe numbers (a probe decodes them itself). The ``lean`` stripes are decoded with
    ``lean_columns`` instead of ``columns``."""
    if batch_rows is not None:
        for batch in orc.batches(columns, batch_rows):
            yield -1, batch
        return
    for stripe in range(orc.nstripes) if stripes is None else stripes:
        if stripe not in skipped:
            chosen = lean_columns if stripe in lean and lean_columns is not None else columns
            yield stripe, orc.read_stripe(stripe, chosen) if decode else None


def _probed(orc: OrcFile, stripe: int, positions: list[int]) -> pa.StructArray:
    """The stripe's fields at ``positions`` (the filter's)."""
    batch = orc.canonical(orc.read_stripe(stripe, orc.physical_columns([], positions)))
    return struct_column(batch.column(ROW))


def _joined(first: pa.StructArray, first_positions: list[int], second: pa.StructArray,
            second_positions: list[int], wanted: list[int]) -> pa.StructArray:
    """One ``row`` struct of the fields two reads of a stripe decoded, in ``wanted`` order."""
    arrays = {**dict(zip(first_positions, first.flatten(), strict=True)),
              **dict(zip(second_positions, second.flatten(), strict=True))}
    fields = {**dict(zip(first_positions, first.type, strict=True)),
              **dict(zip(second_positions, second.type, strict=True))}
    return pa.StructArray.from_arrays([arrays[p] for p in wanted],
                                      fields=[fields[p] for p in wanted],
                                      mask=second.is_null() if second.null_count else None)


def _with_row(batch: pa.RecordBatch, row: pa.StructArray) -> pa.RecordBatch:
    index = batch.schema.get_field_index(ROW)
    return batch.set_column(index, pa.field(ROW, row.type), row)


def _synthetic_batches(orc: OrcFile, split: Split, wanted: list[int], need_keys: bool,
                       batch_rows: int | None) -> Iterator[SplitBatch]:
    """Rows of an original/raw file with the ROW__IDs Hive would assign them."""
    assert split.synthetic is not None
    synthetic = split.synthetic
    columns = orc.physical_columns([], wanted or [0])
    offset = synthetic.row_offset
    for _, batch in _decoded(orc, columns, batch_rows, True):
        assert batch is not None
        n = batch.num_rows
        if n == 0:
            continue
        keys = None
        if need_keys:
            keys = KeyArrays(np.full(n, synthetic.write_id, dtype=np.int64),
                             np.full(n, synthetic.bucket_property, dtype=np.int32),
                             np.arange(offset, offset + n, dtype=np.int64))
        offset += n
        row = pa.StructArray.from_arrays(batch.columns, names=batch.schema.names) \
            if wanted else None
        yield SplitBatch(n, tuple(wanted), row, keys)
