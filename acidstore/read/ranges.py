"""Stripe ranges: one large bucket file read as several splits, so that it uses every thread.

A scan reads its splits on a pool of threads, one split per task, so a table whose rows sit in
one large file (a compacted base of an unbucketed table, Hive streaming's shape) was read on
one core. The stripes of an ORC file are independent, and everything the vectorized reader
does per row depends only on the row itself: its ROW__ID is stored in the row (or, for a
stripe whose statistics prove one (originalTransaction, bucket), taken from them), the delete
registry is looked up by that key, and the key checks compare neighbouring rows. So a file can
be cut at stripe boundaries into ranges read independently and concatenated in range order:
the same rows in the same order. The streaming heap merge keeps whole files (it is the
bounded-memory reference, and its memory is per open file). The ROW__ID order check
continues across a range's start: a range after the first decodes the key columns of the
stripe before it (``source._key_before``), so a file out of order exactly at a range boundary
is refused on threads as in a whole-file read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TypeVar

import pyarrow.fs as pafs

from acidstore.errors import CorruptFileError, InvalidInputError
from acidstore.format.orc.file_reader import OrcFile
from acidstore.read.splits import Split

__all__ = ["MIN_RANGE_BYTES", "divide", "ranged_units", "stripe_range", "stripe_ranges"]

P = TypeVar("P")

#: the fewest bytes of a file a range is given: each range opens the file again and parses
#: its footer and statistics (measured: 3-6 ms of CPU a range on a 30 MB, 4-stripe file of 1M
#: rows read in about 110 ms), so a range of less than a few MB costs more than it saves
MIN_RANGE_BYTES = 4 << 20


def stripe_range(split: Split, orc: OrcFile, *, batch_rows: int | None) -> range:
    """The stripes of ``orc`` (the file of ``split``) that the split reads, in file order."""
    if split.stripes is None:
        return range(orc.nstripes)
    first, stop = split.stripes
    if split.synthetic is not None or batch_rows is not None:
        raise InvalidInputError(
            f"a stripe range ({first}, {stop}) is only read whole-stripe from an ACID event "
            f"file, not from a file without ACID columns or in row batches: {split.path}")
    if not 0 <= first < stop <= orc.nstripes:
        raise CorruptFileError(
            f"the scan planned stripes {first}..{stop - 1}, but the file has {orc.nstripes} "
            "stripes: it changed after the scan was planned", path=split.path)
    return range(first, stop)


def stripe_ranges(stripe_rows: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """Cut stripes (their row counts, in file order) into at most ``parts`` contiguous,
    non-empty ranges ``(first, stop)`` of about equal rows, covering every stripe once."""
    count = len(stripe_rows)
    parts = max(1, min(parts, count))
    total = sum(stripe_rows)
    ranges: list[tuple[int, int]] = []
    first, done = 0, 0
    for index, rows in enumerate(stripe_rows):
        done += rows
        left = parts - len(ranges) - 1  # ranges still to cut after this one
        # cut once this range reaches its share, keeping a stripe for every range left
        if left > 0 and count - index - 1 >= left and \
                (done * parts >= total * (len(ranges) + 1) or count - index - 1 == left):
            ranges.append((first, index + 1))
            first = index + 1
    ranges.append((first, count))
    return ranges


def divide(fs: pafs.FileSystem, split: Split, parts: int) -> list[Split]:
    """``split`` as at most ``parts`` stripe-range splits of about equal rows, in file order
    (the split itself when its file has one stripe)."""
    orc = OrcFile(fs, split.path, size=split.recorded_size, events=split.expected_rows)
    if orc.nstripes < 2 or parts < 2:
        return [split]
    stats = orc.acid_statistics([]) or []
    counted = [s[""].values for s in stats if "" in s]
    rows = [r for r in counted if r is not None]
    if len(rows) != orc.nstripes:  # no statistics to weigh by: every stripe alike
        rows = [1] * orc.nstripes
    return [dataclasses.replace(split, stripes=r) for r in stripe_ranges(rows, parts)]


def _dividable(split: Split) -> bool:
    """A whole ACID event file of known size (a file without ACID columns numbers its
    ROW__IDs by position and a streamed file is read up to its flush length: both whole)."""
    return split.stripes is None and split.synthetic is None and \
        split.logical_length is None and split.size is not None and split.size > 0


def ranged_units(fs: pafs.FileSystem, units: Sequence[list[tuple[P, Split]]], threads: int
                 ) -> list[list[tuple[P, Split]]]:
    """``units`` (lists of (partition, split) read as one, in read order) with every file of
    more than its share of the bytes (total / ``threads``) cut into stripe ranges, one unit
    each, in place of its unit: as many ranges as shares it holds (and at most one per
    ``MIN_RANGE_BYTES``), so that the pool's threads get about equal work. Smaller files, and
    units of several files, stay as they are; the order of the rows read is unchanged."""
    out = [list(unit) for unit in units]
    if threads < 2:
        return out
    total = sum(split.size or 0 for unit in units for _, split in unit)
    share = total / threads
    ranged: list[list[tuple[P, Split]]] = []
    for unit in out:
        if len(unit) != 1 or not _dividable(unit[0][1]):
            ranged.append(unit)
            continue
        partition, split = unit[0]
        size = split.size or 0
        parts = min(math.ceil(size / share), size // MIN_RANGE_BYTES) if size > share else 1
        if parts < 2:
            ranged.append(unit)
            continue
        ranged.extend([(partition, part)] for part in divide(fs, split, parts))
    return ranged
