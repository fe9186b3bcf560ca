"""A read's filter evaluated by numpy when it is only integer ranges (``k < 10``).

The generic path evaluates a filter with Arrow compute (``sql.compiled``) or DuckDB and hands
back an Arrow boolean array, which a reader then turns into a numpy mask (the ROW__ID arrays
it filters are numpy): a bitmap built and unpacked again for every stripe. A filter that is
an AND of ``col <op> n``, ``col BETWEEN n AND m`` and ``col IN (n, ...)`` terms on integer
columns, with integer literals, is exactly "each named column's value lies in one of its
ranges", which numpy computes straight into the mask from the decoded values (no copy when
they hold no NULL). A NULL value passes no range, as a SQL comparison with NULL is not true.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from acidstore.sql.predicate_terms import Range, exact_integer_ranges

__all__ = ["RangeMask", "range_mask"]

Bool = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class RangeMask:
    """Per table position of an integer column: its table type and the ranges its value
    must fall in (a row passes when every position's value does)."""

    terms: tuple[tuple[int, pa.DataType, tuple[Range, ...]], ...]

    def passing(self, columns: Mapping[int, pa.Array]) -> Bool | None:
        """Which rows of the decoded ``columns`` (table position -> array) pass, or None
        when a column is missing or not of its table type (a file predating the column,
        or one whose values the read casts): the generic path then evaluates the filter."""
        mask: Bool | None = None
        for position, kind, ranges in self.terms:
            array = columns.get(position)
            if array is None or array.type != kind:
                return None
            term = _in_ranges(array, ranges)
            if mask is None:
                mask = term
            else:
                mask &= term
        return mask


def range_mask(predicate: str, schema: pa.Schema) -> RangeMask | None:
    """The ``RangeMask`` equal to ``predicate`` over a table of ``schema``, or None when the
    predicate is anything else (another form of term, OR, a non-integer column)."""
    ranges = exact_integer_ranges(predicate, list(schema.names))
    if not ranges:
        return None
    terms = []
    for name, found in ranges.items():
        kind = schema.field(name).type
        if not pa.types.is_integer(kind):
            return None
        terms.append((schema.get_field_index(name), kind, tuple(found)))
    return RangeMask(tuple(terms))


def _in_ranges(array: pa.Array, ranges: tuple[Range, ...]) -> Bool:
    """Whether each value of the integer ``array`` lies in one of ``ranges`` (NULL: no)."""
    values = (array.fill_null(0) if array.null_count else array).to_numpy(
        zero_copy_only=False)
    limits = np.iinfo(values.dtype)
    out: Bool | None = None
    for low, high in ranges:
        # clamped to the column's type (the literal may lie outside it), so that numpy
        # compares within the type: an empty range matches nothing
        lo = limits.min if low is None else max(low, limits.min)
        hi = limits.max if high is None else min(high, limits.max)
        if lo > hi:
            continue
        if lo == hi:
            term: Bool = values == values.dtype.type(lo)
        elif lo == limits.min:
            term = values <= values.dtype.type(hi)
        elif hi == limits.max:
            term = values >= values.dtype.type(lo)
        else:
            term = (values >= values.dtype.type(lo)) & (values <= values.dtype.type(hi))
        out = term if out is None else out | term
    if out is None:
        out = np.zeros(len(values), dtype=np.bool_)
    if array.null_count:
        out &= array.is_valid().to_numpy(zero_copy_only=False)
    return out
