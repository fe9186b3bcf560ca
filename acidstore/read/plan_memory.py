"""A process's memory of the partitions it planned from the record (layer L3).

``read.record_plan`` turns a partition's record into the listing Hive's ``getAcidState``
reads, selects from it, and builds what planning needs. Done from scratch, every statement
re-added every committed write from the partition's floor up, walked every directory again
and planned a split per directory: among the hundreds of deltas a busy table piles up
between compactions, that was half of a one-row UPDATE of W12, and it grew with the deltas.
Between two statements of one process only a commit or two is new, so a process keeps, per
metastore object and (table, partition), what it planned last and the commit sequence number
it was planned at (``read.record_plan``: only a metastore that numbers its commits in the
order readers see them, ``CommitLog``, tells which commits are new). The next plan adds
those commits, decides only their directories (``Selection.advance``) and plans only their
splits (``SplitPlans``), where that is provably what the whole computation would give;
anything else plans from scratch, as before.

The memory is bounded (``PLANNED_PARTITIONS_KEPT`` partitions per metastore, none with more
than ``PLANNED_DIRECTORIES_KEPT`` directories, ``SPLIT_MEMOS_KEPT`` split plans a partition)
and dies with its metastore object. A plan is taken out while it is extended (``take``) and
put back after (``keep``): two threads never extend the same one, and one that finds
nothing plans from scratch.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from acidstore.config import PLANNED_PARTITIONS_KEPT, SPLIT_MEMOS_KEPT
from acidstore.errors import InvalidLayoutError
from acidstore.format.directory import AcidState, covered, extend
from acidstore.format.layout import (
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    ParsedBase,
    ParsedDelta,
    parse_directory,
)
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.read.splits import Split, SplitMemo, extend_partition, plan_partition_memo

__all__ = ["Selection", "SplitPlans", "clear", "keep", "take"]

@dataclass(frozen=True)
class Selection:
    """A partition's selected state with what tells whether the next snapshot's selection
    can be derived from it (``advance``) rather than made again (``select``)."""

    state: AcidState
    write_ids: ValidWriteIdList
    txns: ValidTxnList | None
    #: the write id the walk over the kept deltas ended covered (``directory.covered``)
    covered: int
    #: the highest write id any directory of the listing names (0 if none is higher)
    top: int
    #: whether the listing holds a base (its choice reads the minimum open write id)
    has_base: bool
    #: the visibility txns (``_v<T>``) of the listing's directories
    visibility: frozenset[int]

    @classmethod
    def of(cls, names: Iterable[str], state: AcidState, write_ids: ValidWriteIdList,
           txns: ValidTxnList | None) -> Selection | None:
        """The selection ``state`` (``select`` of the directories ``names`` under
        ``write_ids`` and ``txns``) is; None where a name is no base or delta (the layout
        checks of a full selection then stand)."""
        top, has_base, visibility = 0, False, set()
        try:
            for name in names:
                parsed = parse_directory(name)
                if isinstance(parsed, ParsedBase):
                    has_base, top = True, max(top, parsed.write_id)
                else:
                    top = max(top, parsed.max_write_id)
                if parsed.visibility_txn_id:
                    visibility.add(parsed.visibility_txn_id)
        except InvalidLayoutError:
            return None
        return cls(state, write_ids, txns, covered(state), top, has_base,
                   frozenset(visibility))

    def advance(self, names: Sequence[str], write_ids: ValidWriteIdList,
                txns: ValidTxnList | None, path: str = "") -> Selection | None:
        """The selection of this one's listing plus the directories ``names`` under
        ``write_ids`` and ``txns``, or None where it may differ from this one plus the new
        deltas' walk (``directory.extend``), and ``select`` must decide it all again.

        ``select`` asks a write-id list only about the ranges of write ids the names carry
        (and, to choose a base, its minimum open id), and two lists answer alike for every
        range at or below a write id ``top`` at or below both their high-water marks when
        they share their exceptions and aborted ids up to it. So with ``top`` the highest
        write id the old names carry, the old directories are decided alike (given the
        same minimum open id where there is a base, and ``txns`` answering alike for every
        visibility txn they name), and new deltas whose write ids all lie above ``top``,
        without a visibility suffix, sort after every old candidate and change nothing
        decided before (``directory.extend``). A statement's own write id counts as valid
        in its snapshot before it commits, so the next snapshot's new delta may carry a
        write id at or below the old high-water mark: only the names' ``top`` matters."""
        old, top = self.write_ids, self.top
        if type(write_ids) is not ValidWriteIdList or type(old) is not ValidWriteIdList:
            return None  # a compactor list answers by other rules: not worth proving
        if top > old.high_watermark or top > write_ids.high_watermark:
            return None
        if (txns is None) != (self.txns is None):
            return None
        if _upto(write_ids.exceptions, top) != _upto(old.exceptions, top) or \
                _upto(write_ids.aborted_write_ids, top) != _upto(old.aborted_write_ids, top):
            return None
        if self.has_base and write_ids.min_open_write_id != old.min_open_write_id:
            return None
        if txns is not None and self.txns is not None and any(
                txns.is_txn_valid(t) != self.txns.is_txn_valid(t)
                or txns.is_txn_aborted(t) != self.txns.is_txn_aborted(t)
                for t in self.visibility):
            return None
        highest = top
        for name in names:
            if not name.startswith((DELTA_PREFIX, DELETE_DELTA_PREFIX)):
                return None
            try:
                delta = ParsedDelta.parse(name)
            except InvalidLayoutError:
                return None  # ``select`` names it in its error
            if delta.visibility_txn_id or delta.min_write_id <= top:
                return None
            highest = max(highest, delta.max_write_id)
        state = extend(self.state, self.covered, names, write_ids, txns, path=path)
        kept = [state.delta_info[name].max_write_id
                for name in state.deltas[len(self.state.deltas):]]
        return Selection(state, write_ids, txns, max([self.covered, *kept]), highest,
                         self.has_base, self.visibility)


class SplitPlans:
    """The split plans of one line of plans, each grown from the one before
    (``record_plan._grown``: the same old directories with the same files, decided alike,
    and new deltas after them), by partition path and bucket ids: a plan's splits are those
    of the last plan of the line with the same path and buckets, extended by the new deltas
    (``splits.extend_partition``), rather than planned over every directory again. A split
    plan kept read nothing through its filesystem (``plan_partition_memo`` keeps none that
    opened a file, and every directory's listing is the record's), so an equal filesystem
    object (statements may each wrap their own) serves as well as the same one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, frozenset[int] | None],
                         tuple[pafs.FileSystem, SplitMemo]] = {}

    def plan(self, fs: pafs.FileSystem, partition_path: str, state: AcidState,
             write_ids: ValidWriteIdList, *, buckets: frozenset[int] | None,
             listings: Mapping[str, list[afs.Entry]], exact: frozenset[str]) -> list[Split]:
        """``splits.plan_partition`` of ``state`` (the last of the line so far)."""
        key = (partition_path, buckets)
        with self._lock:
            held = self._kept.get(key)
        found = None
        if held is not None and (held[0] is fs or held[0] == fs):
            found = extend_partition(held[1], fs, partition_path, state, write_ids,
                                     buckets=buckets, listings=listings, exact=exact)
        splits, memo = found or plan_partition_memo(
            fs, partition_path, state, write_ids, buckets=buckets, listings=listings,
            exact=exact)
        if memo is not None:
            with self._lock:
                if key not in self._kept and len(self._kept) >= SPLIT_MEMOS_KEPT:
                    self._kept.clear()
                self._kept[key] = (fs, memo)
        return splits


def _upto(ids: tuple[int, ...], mark: int) -> tuple[int, ...]:
    """The sorted ``ids`` at or below ``mark``."""
    return ids[:bisect.bisect_right(ids, mark)]


_memory: weakref.WeakKeyDictionary[object, dict[tuple[str, ...], object]] = \
    weakref.WeakKeyDictionary()
_lock = threading.Lock()


def take(metastore: object, key: tuple[str, ...]) -> object | None:
    """The plan kept for ``key`` under ``metastore``, removed from the memory (the caller
    extends it and ``keep``s it back, or drops it)."""
    with _lock:
        held = _memory.get(metastore)
        return None if held is None else held.pop(key, None)


def keep(metastore: object, key: tuple[str, ...], held: object) -> None:
    """Keep ``held`` for ``key`` (dropping the longest kept beyond the bound)."""
    with _lock:
        plans = _memory.setdefault(metastore, {})
        plans.pop(key, None)
        while len(plans) >= PLANNED_PARTITIONS_KEPT:
            del plans[next(iter(plans))]
        plans[key] = held


def clear() -> None:
    """Forget every kept plan (tests that watch what a plan from scratch asks for)."""
    with _lock:
        _memory.clear()
