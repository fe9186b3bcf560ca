"""Which target rows a MERGE unit decodes (layer L3): those whose ON key some source row has.

A MERGE ``ON t.id = s.id`` (or an AND of terms, one of them such an equality) can match only a
target row whose key equals a source row's key. A unit used to decode the key and the ROW__ID
of all the rows of its bucket, join every one to the source, and, for an UPDATE that keeps
columns (``SET v1 = s.v1``), scan the same snapshot a second time for those columns (planning
it again, opening every file again, decoding the ROW__IDs and applying the delete events
again, casting every row's values) to take the 1% it updates.

The source's keys now go into the read as a ``Probe``: the reader decodes the key column of a
stripe first, keeps only the rows whose key is among the source's (before delete events are
looked up and values cast), and decodes the other columns (the ROW__ID, the kept columns)
only of stripes holding such a row; integer keys also skip stripes whose key statistics lie
outside the source's range. The rows the probe keeps are a superset of those the ON condition
matches, so the join that follows (``merge_match.match``, now over those rows only) decides
exactly as over every row. A MERGE with WHEN NOT MATCHED BY SOURCE clauses acts on the rows no
source row matched, so it still reads every row, as does one whose ON condition has no such
equality. In W4 (2M rows in ten buckets, 1% updated, 1% new, two cores) it took the CPU time of
``SET v1 = s.v1`` from 0.25 to 0.21 s and of ``SET *`` from 0.135 to 0.105 s: what remains of
the first beyond the second is decoding the five kept columns of every row (pyarrow decodes a
stripe whole, and every stripe holds an updated row), 77 ms of pyarrow alone.

When every row the probe keeps is updated (the ON condition is that equality alone and the
first WHEN MATCHED clause is an UPDATE without a condition) the columns an UPDATE keeps are
decoded in the same read (``KeyProbe.decides_updates``), where the matched rows are. Where a
row the probe keeps may not be updated, and the MERGE keeps columns it did not decode to
match, the unit reads as before: every row's key, then (if some row was updated) the kept
columns of every row in a second scan (``unit_rows.kept_rows``), which decodes nothing for a
unit where no clause fired.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.engine.merge_match import SOURCE_INDEX, MergeSpec
from acidstore.engine.merge_routing import equality_keys
from acidstore.read.bounds import StripeBounds
from acidstore.read.range_mask import RangeMask
from acidstore.read.split_source import Probe, SplitBatch

__all__ = ["BITMAP_MAX_SPAN", "KeyMask", "KeyProbe", "KeySet", "key_probe"]

#: the widest range of integer source keys looked up in a bitmap (one byte per value of the
#: range: 16 MB): a gather per target key, several times faster than hashing or bisecting
#: 200,000 keys; a wider range is looked up by hash (``pc.is_in``)
BITMAP_MAX_SPAN = 1 << 24

Bool = npt.NDArray[np.bool_]
_CASE = re.compile(r"\bCASE\b", re.IGNORECASE)


@dataclass(frozen=True)
class KeySet:
    """The non-NULL keys of a unit's source rows for one ``t.a = s.b`` term, and the table
    position of ``t.a``: integers (compared as int64) or strings."""

    position: int
    integers: bool
    #: integer keys: their least and greatest (None: there is none) and, when the range
    #: between them is narrow, a lookup table from ``low`` with one slot more, always False
    low: int | None
    high: int | None
    bitmap: Bool | None
    #: the keys as an Arrow array: int64, or (strings) as string and as large_string
    values: tuple[pa.Array, ...]

    def hits(self, array: pa.Array) -> Bool | None:
        """Which values of ``array`` (the target key column as decoded from one file) are
        among the keys (NULL: no); None when the file's type is not one compared here
        (the caller then keeps every row, which is always safe)."""
        if not self.integers:
            if pa.types.is_string(array.type):
                wanted = self.values[0]
            elif pa.types.is_large_string(array.type):
                wanted = self.values[1]
            else:
                return None
            # skip_nulls: a NULL key is no hit
            return np.asarray(pc.is_in(array, value_set=wanted, skip_nulls=True)
                              .to_numpy(zero_copy_only=False), np.bool_)
        if not pa.types.is_integer(array.type) or array.type == pa.uint64():
            return None
        values = np.asarray((array.fill_null(0) if array.null_count else array)
                            .to_numpy(zero_copy_only=False), np.int64)
        found = self._int_hits(values)
        if array.null_count:
            found &= np.asarray(array.is_valid().to_numpy(zero_copy_only=False), np.bool_)
        return found

    def _int_hits(self, values: npt.NDArray[np.int64]) -> Bool:
        if self.low is None:
            return np.zeros(len(values), np.bool_)
        if self.bitmap is not None:
            # values below the range go to slot -1 and values above it to the last slot,
            # both False; a value far outside it whose offset wraps around into it only
            # keeps a row the join then rejects (the probe may keep too many, never too few)
            offsets = values - self.low
            np.clip(offsets, -1, len(self.bitmap) - 1, out=offsets)
            out: Bool = self.bitmap[offsets]
            return out
        return np.asarray(pc.is_in(pa.array(values), value_set=self.values[0])
                          .to_numpy(zero_copy_only=False), np.bool_)


@dataclass(frozen=True)
class KeyProbe:
    """A unit's key set as the reader's ``Probe``, and whether every row it keeps is one an
    UPDATE takes."""

    keys: KeySet
    probe: Probe
    decides_updates: bool


def key_probe(spec: MergeSpec, schema: pa.Schema, row_schema: pa.Schema) -> KeyProbe | None:
    """The probe of a unit's MERGE ``spec`` (its share of the source) over a table of user
    columns ``schema`` whose files hold ``row_schema`` (positions), or None when every row
    must be read: a WHEN NOT MATCHED BY SOURCE clause, or no ``t.a = s.b`` term of integer
    or string columns (other types compare in SQL by rules this lookup does not copy)."""
    if spec.not_matched_by_source or _CASE.search(spec.condition):
        return None  # (a CASE can hold an AND of terms the condition as a whole does not need)
    names = [c for c in spec.source.column_names if c != SOURCE_INDEX]
    terms = equality_keys(spec, schema.names, names)
    for target_column, source_column in terms:
        position = row_schema.get_field_index(target_column)
        if position < 0:
            continue
        keys = _key_set(position, schema.field(target_column).type,
                        spec.source.column(source_column))
        if keys is None:
            continue
        bounds = None
        if keys.integers:
            ranges = ((keys.low, keys.high),) if keys.low is not None else ()
            bounds = StripeBounds(((position, ranges),))
        probe = Probe((position,), functools.partial(_mask, keys), bounds, KeyMask((), keys))
        return KeyProbe(keys, probe, _single_term(spec.condition, terms) and
                        _updates_every_match(spec))
    return None


def _key_set(position: int, target: pa.DataType, source: pa.ChunkedArray) -> KeySet | None:
    """The source keys of one term as a ``KeySet``, when the two columns compare as
    integers or as strings (as ``merge_match._join_keys`` requires)."""
    if pa.types.is_integer(target) and pa.types.is_integer(source.type):
        if target == pa.uint64():
            return None
        try:
            keys = source.drop_null().cast(pa.int64()).combine_chunks()
        except (pa.ArrowInvalid, OverflowError):  # a uint64 beyond int64: not judged here
            return None
        if not len(keys):
            return KeySet(position, True, None, None, None, (keys,))
        ints = np.asarray(keys.to_numpy(), np.int64)
        low, high = int(ints.min()), int(ints.max())
        bitmap = None
        if high - low < BITMAP_MAX_SPAN:
            bitmap = np.zeros(high - low + 2, np.bool_)
            bitmap[ints - low] = True
        return KeySet(position, True, low, high, bitmap, (keys,))
    if _is_string(target) and _is_string(source.type):
        distinct = pc.unique(source.drop_null().cast(pa.large_string()).combine_chunks())
        return KeySet(position, False, None, None, None,
                      (distinct.cast(pa.string()), distinct))
    return None


def _mask(keys: KeySet, batch: SplitBatch) -> pa.BooleanArray:
    """The probe's filter over a decoded batch: the rows whose key is among the source's
    (every row when the file lacks the column or holds it as another type)."""
    array = batch.columns().get(keys.position)
    found = keys.hits(array) if array is not None else None
    if found is None:
        found = np.ones(batch.num_rows, np.bool_)
    out: pa.BooleanArray = pa.array(found, pa.bool_())
    return out


@dataclass(frozen=True)
class KeyMask(RangeMask):
    """``_mask`` as the reader's numpy fast path (``Probe.exact``, which a reader asks
    first): the mask it filters ROW__IDs with, without an Arrow bitmap built and unpacked
    again per stripe (half a millisecond of a 200,000-row one). No ranges of its own."""

    keys: KeySet

    def passing(self, columns: Mapping[int, pa.Array]) -> Bool | None:
        """The rows whose key is a source key; None (then ``_mask`` decides) when the
        batch lacks the key column or holds it as a type not compared here."""
        array = columns.get(self.keys.position)
        return self.keys.hits(array) if array is not None else None


def _single_term(condition: str, terms: Sequence[tuple[str, str]]) -> bool:
    """Whether the ON condition is one ``t.a = s.b`` term: then a key hit is a match."""
    return len(terms) == 1 and len(re.split(r"\s+AND\s+", condition, flags=re.IGNORECASE)) == 1


def _updates_every_match(spec: MergeSpec) -> bool:
    """Whether every matched row is updated: the first WHEN MATCHED clause (the one a row
    takes when its condition holds) is an UPDATE without a condition."""
    return bool(spec.matched) and spec.matched[0].kind == "update" and \
        spec.matched[0].condition is None


def _is_string(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))
