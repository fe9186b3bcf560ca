"""Which source rows of a MERGE can reach which target bucket (layer L3).

A MERGE whose ON condition equates the bucketing column to a source column needs to join each
bucket of the target with only the source rows that hash to it: a target row sits in the
bucket its value hashes to, and SQL's equality of integers or strings is the value's, so a
source row can only match rows of its own hash's bucket. ``source_buckets`` names each
source row's bucket (the shuffled MERGE tags a large source with it), ``route_by_bucket``
splits a small source that way; ``equality_keys`` finds the ``t.a = s.b`` terms they (and
the shuffled MERGE's semi-join) rely on.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.engine.merge_match import SOURCE_INDEX, MergeSpec
from acidstore.write.bucketing import bucket_ids

__all__ = ["equality_key", "equality_keys", "route_by_bucket", "source_buckets"]


_EQUALITY = re.compile(r"^\s*(\w+)\s*\.\s*(\w+)\s*=\s*(\w+)\s*\.\s*(\w+)\s*$")


def equality_keys(spec: MergeSpec, target: Sequence[str], source: Sequence[str]
                  ) -> list[tuple[str, str]]:
    """(target column, source column) of each ``t.a = s.b`` term of an ON condition that is a
    plain AND of terms (no parentheses, quotes, OR or BETWEEN, where a term could hide in an OR
    or be an operand): every matching pair satisfies each of them. Empty for other conditions."""
    text = spec.condition
    if any(c in text for c in "()'\"`") or re.search(r"\b(OR|BETWEEN)\b", text, re.IGNORECASE):
        return []
    by_alias = {spec.target_alias.lower(): {n.lower(): n for n in target},
                spec.source_alias.lower(): {n.lower(): n for n in source}}
    t, s = spec.target_alias.lower(), spec.source_alias.lower()
    out = []
    for term in re.split(r"\s+AND\s+", text, flags=re.IGNORECASE):
        found = _EQUALITY.match(term)
        if found is None:
            continue
        a, x, b, y = (g.lower() for g in found.groups())
        sides = {a: x, b: y}
        if a != b and t in sides and s in sides and sides[t] in by_alias[t] and \
                sides[s] in by_alias[s]:
            out.append((by_alias[t][sides[t]], by_alias[s][sides[s]]))
    return out


def equality_key(spec: MergeSpec, target: Sequence[str], source: Sequence[str]
                 ) -> tuple[str, str] | None:
    """The first of ``equality_keys`` (None without one)."""
    found = equality_keys(spec, target, source)
    return found[0] if found else None


def route_by_bucket(spec: MergeSpec, schema: pa.Schema, bucket_by: Sequence[str],
                    buckets: int) -> dict[int, MergeSpec] | None:
    """Per bucket, ``spec`` with only the source rows that can match a target row of that
    bucket (``source_buckets``); None where the ON condition does not allow it. Source rows
    keep their numbers (``SOURCE_INDEX``); a row of no bucket goes to none. The caller must
    know that every target row sits in the bucket its value hashes to (no original files in
    play): a unit then joins a tenth of a ten-bucket table's source and a task ships only its
    units' share of it."""
    bucket_of = source_buckets(spec, schema, bucket_by, buckets)
    if bucket_of is None:
        return None
    # one sort, then a copy per bucket (a slice would pickle its whole parent's buffers)
    order = np.argsort(bucket_of, kind="stable")
    bounds = np.searchsorted(bucket_of[order], np.arange(-1, buckets + 1))
    return {b: dataclasses.replace(spec, source=spec.source.take(
        pa.array(order[bounds[b + 1]:bounds[b + 2]]))) for b in range(buckets)}


def source_buckets(spec: MergeSpec, schema: pa.Schema, bucket_by: Sequence[str],
                   buckets: int) -> npt.NDArray[np.int32] | None:
    """The target bucket each source row can match rows of (-1: none), when the ON condition
    equates the (single) bucketing column to a source column of the same kind (integers or
    strings, where SQL's equality is the value's, so the source value hashes as the matching
    target row's did); None otherwise. A NULL key, or one outside the column's range,
    matches nothing: -1. The shuffled MERGE tags a large source's rows with it in Spark's
    workers; ``route_by_bucket`` splits a small one."""
    if len(bucket_by) != 1 or buckets <= 0:
        return None
    names = [c for c in spec.source.column_names if c != SOURCE_INDEX]
    field = next((f for f in schema if f.name.lower() == bucket_by[0].lower()), None)
    if field is None:
        return None
    column = next((sc for tc, sc in equality_keys(spec, schema.names, names)
                   if tc == field.name), None)
    if column is None:
        return None
    keys = spec.source.column(column)
    if pa.types.is_integer(field.type) and pa.types.is_integer(keys.type) and \
            field.type != pa.uint64():
        try:
            values = keys.cast(pa.int64())
        except (pa.ArrowInvalid, OverflowError):  # a uint64 beyond int64: not judged
            return None
        info = np.iinfo(field.type.to_pandas_dtype())
        fits = pc.and_kleene(pc.greater_equal(values, info.min), pc.less_equal(values, info.max))
    elif _is_string(field.type) and _is_string(keys.type):
        values, fits = keys, pc.is_valid(keys)
    else:
        return None
    mask = np.asarray(pc.fill_null(fits, False).to_numpy(zero_copy_only=False), bool)
    out = np.full(len(mask), -1, np.int32)
    hashed = pa.table({field.name: values.filter(pa.array(mask)).cast(field.type)})
    out[mask] = bucket_ids(hashed, [field.name], buckets)
    return out


def _is_string(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))
