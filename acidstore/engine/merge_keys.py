"""The key lookup of a MERGE ``ON t.a = s.b`` (layer L3): which of a unit's target rows some
source row matches, and by which source row.

A unit holds a bucket's rows (200,000 of a 2M-row table of ten buckets) and its share of the
source (a few thousand rows). Arrow's ``index_in`` builds a hash table of the source keys
and probes it with every target key (3 ms a unit measured for integer keys); integer keys
without NULLs are looked up by binary search in the sorted source keys instead, which
answers the same in about half the time. String keys, and keys with NULLs (which match
nothing, as in SQL), keep Arrow's lookup.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["KeyHits", "key_hits"]

Positions = npt.NDArray[np.int64]
KeyHits = tuple[Positions, Positions, Positions]
"""(target rows some source row matches, the first such source row of each, every source
row that matches some target row), each ascending but the second."""


def key_hits(target: pa.Array, source: pa.Array) -> KeyHits:
    """The matches of the target keys ``target`` among the source keys ``source`` (arrays
    of one type: int64 or large strings): per matched target row its *first* equal source
    row (the cardinality check, which runs next, refuses a key the source holds twice), and
    all source rows equal to a matched target key (duplicates included)."""
    if pa.types.is_integer(target.type) and not target.null_count and not source.null_count:
        return _sorted_hits(np.asarray(target.to_numpy(), np.int64),
                            np.asarray(source.to_numpy(), np.int64))
    found = pc.index_in(target, value_set=source, skip_nulls=True)
    valid = found.is_valid()
    hit_target = np.flatnonzero(valid.to_numpy(zero_copy_only=False)).astype(np.int64)
    first = np.asarray(found.filter(valid).to_numpy(zero_copy_only=False), np.int64)
    # looked up among the target keys that found a source row (a few), not all of the
    # unit's keys, whose hash table cost as much as the join itself
    hit = pc.is_in(source, value_set=target.filter(valid), skip_nulls=True)
    return hit_target, first, np.flatnonzero(hit.to_numpy(zero_copy_only=False)).astype(
        np.int64)


def _sorted_hits(target: Positions, source: Positions) -> KeyHits:
    """``key_hits`` of integer keys: a stable sort keeps equal source keys in source order,
    so the left end of a key's run is its first source row."""
    if not len(source) or not len(target):
        none = np.zeros(0, np.int64)
        return none, none, none
    order = np.argsort(source, kind="stable")
    ordered = source[order]
    at = np.minimum(np.searchsorted(ordered, target), len(ordered) - 1)
    hit_target = np.flatnonzero(ordered[at] == target).astype(np.int64)
    first = order[at[hit_target]].astype(np.int64)
    matched = np.flatnonzero(np.isin(source, target[hit_target])).astype(np.int64)
    return hit_target, first, matched
