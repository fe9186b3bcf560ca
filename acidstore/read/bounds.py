"""Stripes a filtered read need not decode, from their ORC statistics.

A stripe is skipped only when its statistics prove that no row passes the filter: the filter
is an AND of terms, and one term ``col < 10`` (or ``BETWEEN``, ``IN``, ``=``...) with an
integer literal fails for every value between the stripe's minimum and maximum of ``col``,
or the column holds only NULLs there (a comparison with NULL is not true). Only integer
columns are used, in the file and in the table (so casting the file's values to the table's
type cannot change them); floating-point statistics would have to reason about NaN, and
string statistics may be truncated. Statistics cover every row of a stripe, including rows
of aborted write ids and rows deleted later, so they can only over-approximate what a read
returns: a skipped stripe never held a row the read would return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.stats import IntegerStats
from acidstore.sql.predicate_terms import Range, integer_ranges

__all__ = ["StripeBounds", "stripe_bounds", "stripes_without_match"]


@dataclass(frozen=True)
class StripeBounds:
    """Per table position of an integer column, the ranges its value must fall in for a row
    to pass the filter (a row must satisfy every position's ranges)."""

    ranges: tuple[tuple[int, tuple[Range, ...]], ...]

    def excludes(self, stats: Mapping[int, IntegerStats]) -> bool:
        """True when no row of a stripe with these statistics can pass."""
        for position, ranges in self.ranges:
            found = stats.get(position)
            if found is None or found.values is None:
                continue  # nothing recorded: no proof
            if found.values == 0:
                return True  # only NULLs: every comparison is NULL, no row passes
            if found.minimum is None or found.maximum is None:
                continue
            if not any(_overlaps(r, found.minimum, found.maximum) for r in ranges):
                return True
        return False


def _overlaps(bounds: Range, minimum: int, maximum: int) -> bool:
    low, high = bounds
    return (low is None or low <= maximum) and (high is None or high >= minimum)


def stripe_bounds(predicate: str, schema: pa.Schema) -> StripeBounds | None:
    """The bounds ``predicate`` sets on the integer columns of a table of ``schema``, or
    None when it sets none (nothing to gain from reading statistics)."""
    ranges = integer_ranges(predicate, list(schema.names))
    found = tuple((schema.get_field_index(name), tuple(r)) for name, r in ranges.items()
                  if pa.types.is_integer(schema.field(name).type))
    return StripeBounds(found) if found else None


def stripes_without_match(orc: OrcFile, bounds: StripeBounds | None, width: int
                          ) -> frozenset[int]:
    """The stripes of ``orc`` whose statistics prove no row is within ``bounds``; ``width``:
    the table positions the file has (columns added later are not in it)."""
    if bounds is None:
        return frozenset()
    row_type = orc.row_type
    positions: Sequence[int] = [p for p, _ in bounds.ranges
                                if p < width and pa.types.is_integer(row_type.field(p).type)]
    if not positions:
        return frozenset()
    stats = orc.stripe_statistics(positions)
    if stats is None:
        return frozenset()
    usable = StripeBounds(tuple({p: r for p, r in bounds.ranges if p in positions}.items()))
    return frozenset(i for i, stripe in enumerate(stats) if usable.excludes(stripe))
