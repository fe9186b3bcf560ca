"""A k-way merge of sorted event streams, batch by batch, in bounded memory.

A compactor's inputs (a bucket's splits for a major compaction, its delta files for a minor
one) are each sorted by key, and its output must be sorted by the same key. Rather than
concatenating a bucket and sorting it, the merge keeps one decoded batch per input: each
round takes, from every input, the events up to the smallest "last key of the current batch"
among them (so at least one input finishes its batch), orders just those, and hands them on.
Events held at once are at most one batch per input, whatever the size of the bucket (plus,
for a key repeated across an input's batches, the rest of its repeats).

Equal keys keep the order of their inputs (then of their positions in an input), as the
stable sort of the concatenated inputs did. An input that is not sorted raises DataError:
merging it would silently misplace events.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from acidstore.errors import DataError

__all__ = ["Keyed", "merge_sorted"]

Key = tuple[int, ...]
Bool = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Keyed:
    """A batch of events and its sort key, as columns compared lexicographically ascending
    (a descending component is given negated)."""

    batch: pa.RecordBatch
    keys: tuple[npt.NDArray[np.integer], ...]

    def key(self, i: int) -> Key:
        return tuple(int(k[i]) for k in self.keys)

    def slice(self, start: int, stop: int) -> Keyed:
        return Keyed(self.batch.slice(start, stop - start), tuple(k[start:stop] for k in self.keys))


def _first_descent(keys: Sequence[npt.NDArray[np.integer]]) -> int | None:
    """The first row whose key is smaller than the key of the row before it."""
    if len(keys[0]) < 2:
        return None
    less = np.zeros(len(keys[0]) - 1, dtype=np.bool_)
    equal = np.ones(len(keys[0]) - 1, dtype=np.bool_)
    for column in keys:
        before, after = column[:-1], column[1:]
        less |= equal & (after < before)
        equal &= after == before
    return int(np.argmax(less)) + 1 if bool(less.any()) else None


class _Cursor:
    """One input: its current batch and how far into it the merge has taken."""

    def __init__(self, rank: int, source: Iterable[Keyed], name: str) -> None:
        self.rank = rank
        self.name = name
        self._source = iter(source)
        self.current: Keyed | None = None
        self.offset = 0
        self._previous: Key | None = None
        self._advance()

    def _advance(self) -> None:
        self.current = None
        for item in self._source:
            n = item.batch.num_rows
            if not n:
                continue
            bad = _first_descent(item.keys)
            if bad is None and self._previous is not None and item.key(0) < self._previous:
                bad = 0
            if bad is not None:
                raise DataError(f"events out of order at key {item.key(bad)}: a compaction "
                                "input must be sorted", path=self.name)
            self.current, self.offset, self._previous = item, 0, item.key(n - 1)
            return

    @property
    def last(self) -> Key:
        assert self.current is not None and self._previous is not None
        return self._previous

    def _take(self, stop: int) -> Keyed | None:
        """Consume the current batch up to row ``stop``."""
        current = self.current
        assert current is not None
        if stop == self.offset:
            return None
        part = current.slice(self.offset, stop)
        if stop == current.batch.num_rows:
            self._advance()
        else:
            self.offset = stop
        return part

    def take_below(self, bound: Key) -> Keyed | None:
        """Consume the events of the current batch with key < ``bound`` (a prefix)."""
        current = self.current
        assert current is not None
        return self._take(bisect.bisect_left(range(current.batch.num_rows), bound,
                                             lo=self.offset, key=current.key))

    def take_equal(self, bound: Key) -> list[Keyed]:
        """Consume every event with key == ``bound`` that comes next, across batches."""
        parts: list[Keyed] = []
        while self.current is not None:
            current = self.current
            part = self._take(bisect.bisect_right(range(current.batch.num_rows), bound,
                                                  lo=self.offset, key=current.key))
            if part is None:
                break
            parts.append(part)
            if self.current is current:  # stopped inside the batch: no more equal keys
                break
        return parts


def _ordered(below: list[Keyed], equal: list[Keyed]) -> pa.Table:
    """``below`` (sorted parts) in key order, ties in the order of the parts, then ``equal``
    (parts whose keys all equal one key above them) as they are."""
    table = pa.Table.from_batches([p.batch for p in below + equal],
                                  schema=(below or equal)[0].batch.schema)
    if len(below) <= 1:
        return table
    columns = [np.concatenate([p.keys[i] for p in below]) for i in range(len(below[0].keys))]
    order = np.lexsort(columns[::-1])  # stable: equal keys stay in concatenation order
    taken = np.concatenate([order, np.arange(len(order), table.num_rows)])
    return table.take(pa.array(taken))


def merge_sorted(sources: Sequence[Iterable[Keyed]], names: Sequence[str]) -> Iterator[pa.Table]:
    """Every event of ``sources`` (each sorted by its keys; ``names`` say which input is
    which in errors) in key order, as tables of at most one batch per source."""
    cursors = [_Cursor(rank, source, name)
               for rank, (source, name) in enumerate(zip(sources, names, strict=True))]
    cursors = [c for c in cursors if c.current is not None]
    while cursors:
        # Every input whose current batch ends at ``bound`` finishes that batch this round.
        # Events below it are merged; events equal to it are taken input by input (also
        # from the next batches of an input whose batch ended with it), so equal keys keep
        # the order of their inputs.
        bound = min(c.last for c in cursors)
        below = [part for c in cursors if (part := c.take_below(bound)) is not None]
        equal = [part for c in cursors for part in c.take_equal(bound)]
        cursors = [c for c in cursors if c.current is not None]
        yield _ordered(below, equal)
