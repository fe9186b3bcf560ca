"""Split planning (spec §8.2, §9): turn a partition's ``AcidState`` into readable splits.

A split is one "base-like" file (a base or insert-delta bucket file, an original file, or a raw
LOAD DATA file inside a base/delta) plus the delete-delta bucket files that can hold deletes of
its rows. Delete files are pruned the way Hive prunes them: same bucket id only, and only
delete deltas that are newer than the split's own write ids.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import pyarrow.fs as pafs

from acidstore.config import DIRECTORY_FACTS_KEPT
from acidstore.errors import InvalidLayoutError
from acidstore.format.directory import AcidState
from acidstore.format.layout import (
    FLUSH_LENGTH_SUFFIX,
    ParsedBucketFile,
    ParsedDelta,
    ParsedOriginalFile,
    is_bucket_file,
    is_original_file,
)
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_reader import OrcFile, read_flush_length
from acidstore.format.writeids import RangeResponse, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.io.immutable import cache_bytes, list_dirs

__all__ = ["DeleteSource", "Listed", "Split", "SplitMemo", "Synthetic", "extend_partition",
           "plan_partition", "plan_partition_memo"]

#: (name, size) of the non-empty bucket files of each directory listed, by directory name
Listed = dict[str, tuple[tuple[str, int], ...]]


@dataclass(frozen=True)
class DeleteSource:
    """One ``delete_delta_*/bucket_N`` file that a split must consult."""

    path: str
    min_write_id: int
    max_write_id: int
    statement_id: int
    bucket_id: int
    #: the file's bytes as listed (None: not known)
    size: int | None = None
    #: the bytes the metastore recorded for it, checked when it is opened (None: not
    #: checked; a read planned from a listing compared them with the listing instead)
    recorded_size: int | None = None


@dataclass(frozen=True)
class Synthetic:
    """Synthetic ROW__IDs of a file without ACID columns (spec §9): every row gets
    (``write_id``, ``bucket_property``, ``row_offset`` + ordinal)."""

    write_id: int
    bucket_property: int
    row_offset: int


@dataclass(frozen=True)
class Split:
    """One base-like file to read, with everything needed to read it alone."""

    path: str
    bucket_id: int
    min_write_id: int
    max_write_id: int
    statement_id: int
    #: every event's currentTransaction is valid, so no per-row write-id check is needed
    rows_valid: bool
    synthetic: Synthetic | None = None
    logical_length: int | None = None
    deletes: tuple[DeleteSource, ...] = field(default=())
    #: the events the file must hold, as the compaction that wrote it recorded (None: no
    #: record); a file holding more reads some row twice
    expected_rows: int | None = None
    #: the file's bytes as listed (None: not known), so a reader can tell a small file,
    #: whose fixed costs outweigh its rows, before opening it
    size: int | None = None
    #: read only the stripes ``first <= i < stop`` of the file (None: all of them); a scan
    #: cuts a large file into such ranges so that one file can use every thread
    #: (``read.ranges``); a file's rows keep their ROW__IDs whichever range reads them
    stripes: tuple[int, int] | None = None
    #: the bytes the metastore recorded for it, checked when it is opened (None: not checked)
    recorded_size: int | None = None


@dataclass(frozen=True)
class _DirFacts:
    """What planning reads off one ACID directory's listing."""

    #: (name, bucket id, size) of its bucket files, in name order
    buckets: tuple[tuple[str, int, int], ...]
    #: (name, size) of those that are not empty, in name order: what the recorded-writes
    #: check compares with the bucket files and bytes the metastore recorded
    non_empty: tuple[tuple[str, int], ...]
    #: (name, size) of its files with original (LOAD DATA) names
    originals: tuple[tuple[str, int], ...]


#: facts derived from listings, by directory path, with the listing they came from: a
#: remembered listing (``acidstore.io.immutable.list_dirs``) comes back as the same list while
#: its directory is unchanged, so a statement among hundreds of deltas derives only the new
#: directories' facts
_FACTS: dict[str, tuple[list[afs.Entry], _DirFacts]] = {}


def _facts(directory: str, entries: list[afs.Entry]) -> _DirFacts:
    """``entries``' facts, derived again only when the listing is not the one they came
    from, or one equal to it (a plain dict: threads racing on a miss derive the same facts
    twice); nothing is kept while caching is off
    (``acidstore.io.immutable.set_cache_bytes(0)``). Plans from the metastore's record
    build each directory's entries afresh for every statement: comparing them costs a
    fraction of parsing every bucket file's name again."""
    known = _FACTS.get(directory)
    if known is not None and (known[0] is entries or known[0] == entries):
        return known[1]
    buckets = []
    for entry in entries:
        name = entry.name
        if entry.is_dir or name.endswith(FLUSH_LENGTH_SUFFIX) or not is_bucket_file(name):
            continue
        buckets.append((name, ParsedBucketFile.parse(name).bucket_id, entry.size))
    facts = _DirFacts(tuple(buckets), tuple((n, size) for n, _, size in buckets if size > 0),
                      tuple((e.name, e.size) for e in entries
                            if not e.is_dir and is_original_file(e.name)))
    keep = cache_bytes() > 0
    if len(_FACTS) >= DIRECTORY_FACTS_KEPT or not keep:
        _FACTS.clear()
    if keep:
        _FACTS[directory] = (entries, facts)
    return facts


def _qualifies(delete: DeleteSource, split_min: int, split_stmt: int) -> bool:
    """Whether a delete delta can hold deletes of a split's rows; one that cannot is not read.

    This only prunes reads: a delete event names its row by the full ROW__ID (write id, bucket
    property with the statement id, row id), so consulting a delete delta that holds no event
    of the split's rows never changes the answer, while skipping one that does brings deleted
    rows back. A delete delta can delete rows of earlier write ids and, within its own write
    id, rows of earlier statements. So it qualifies if its max write id is above the split's
    min write id, and at an equal write id only if it is provably of a later statement.

    That proof needs both directory names to carry a statement id. Hive's
    ``isQualifiedDeleteDeltaForSplit`` reads a missing statement id as 0 and so skips a
    ``delete_delta_w_w`` for a ``delta_w_w``; but a minor compaction over write id w writes
    exactly those names (no statement id) holding every statement of w: the deletes of its
    later statements then hit rows of its earlier ones, and must be applied (Hive's row-mode
    reader, ``OrcRawRecordMerger``, consults every delete delta and does apply them)."""
    if delete.max_write_id != split_min:
        return delete.max_write_id > split_min
    if delete.statement_id < 0 or split_stmt < 0:
        return True  # a compacted (or pre-Hive-1.3) directory: any statement of the write id
    return delete.statement_id > split_stmt


class _Planner:
    def __init__(self, fs: pafs.FileSystem, root: str, state: AcidState,
                 write_ids: ValidWriteIdList, buckets: frozenset[int] | None = None) -> None:
        self.fs = fs
        self.root = root
        self.state = state
        self.write_ids = write_ids
        #: the bucket ids to plan splits of (None: all); every directory is listed anyway
        self.buckets = buckets
        self.deletes: dict[int, list[DeleteSource]] = defaultdict(list)
        #: the files whose listed size is the recorded one, to check when opened
        self.exact: frozenset[str] = frozenset()
        self.splits: list[Split] = []
        #: (name, size) of the non-empty bucket files per directory listed, for the
        #: recorded-writes check (a committed write never leaves an empty one: a file
        #: truncated to 0 bytes would otherwise read as no rows, or bring deleted rows back)
        self.listed: Listed = {}
        #: each directory's listing, taken once: a delta_x_x is searched for bucket files and
        #: for LOAD DATA files, and on an object store every listing is a request
        self._listings: dict[str, list[afs.Entry]] = {}
        #: each directory's path, by its name in the partition
        self._paths: dict[str, str] = {}
        #: a directory held files with original names, or a streaming delta was read: what
        #: was planned then depends on more than the names and sizes (``SplitMemo``)
        self.opened = False

    def list_all(self, names: list[str]) -> None:
        """List the directories ``names`` (relative) in one go: those that did not change
        since an earlier statement listed them are answered from memory
        (``acidstore.io.immutable.list_dirs``: one batched ``stat`` instead of a listing each)."""
        directories = [self._path(name) for name in names]
        self._listings.update(list_dirs(self.fs, [d for d in directories
                                                  if d not in self._listings]))

    def known(self, listings: Mapping[str, list[afs.Entry]], exact: frozenset[str]) -> None:
        """Take these directories' contents as they are, unlisted (``list_all`` then lists
        only the others); ``exact``: the files whose sizes there are the recorded bytes."""
        self._listings.update(listings)
        self.exact = exact

    def _recorded_size(self, path: str, size: int) -> int | None:
        return size if path in self.exact else None

    def _path(self, name: str) -> str:
        path = self._paths.get(name)
        if path is None:
            path = self._paths[name] = afs.join(self.root, name)
        return path

    def _list(self, directory: str) -> list[afs.Entry]:
        if directory not in self._listings:
            self._listings[directory] = afs.list_dir(self.fs, directory)
        return self._listings[directory]

    def _facts(self, directory: str) -> _DirFacts:
        return _facts(directory, self._list(directory))

    def _wanted(self, bucket: int) -> bool:
        return self.buckets is None or bucket in self.buckets

    def _attach(self, split: Split) -> Split:
        chosen = tuple(d for d in self.deletes.get(split.bucket_id, ())
                       if _qualifies(d, split.min_write_id, split.statement_id))
        return Split(split.path, split.bucket_id, split.min_write_id, split.max_write_id,
                     split.statement_id, split.rows_valid, split.synthetic,
                     split.logical_length, chosen, size=split.size,
                     recorded_size=split.recorded_size)

    def collect_deletes(self) -> None:
        for name in self.state.delete_deltas:
            self.collect_delta_deletes(name)

    def collect_delta_deletes(self, name: str) -> None:
        """One delete delta's files, added to its buckets' delete files."""
        parsed = self.state.delta_info[name]
        directory = self._path(name)
        facts = self._facts(directory)
        self.listed[name] = facts.non_empty
        for file_name, bucket, size in facts.buckets:
            if size == 0 or not self._wanted(bucket):
                continue
            path = afs.join(directory, file_name)
            self.deletes[bucket].append(DeleteSource(
                path, parsed.min_write_id, parsed.max_write_id, parsed.statement_id,
                bucket, size, self._recorded_size(path, size)))

    def raw_files(self, directory: str, write_id: int, statement_id: int,
                  min_write_id: int) -> None:
        """LOAD DATA files (original names, no ACID columns) inside a base or delta_x_x."""
        groups: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for name, size in self._facts(directory).originals:
            groups[ParsedOriginalFile.parse(name).bucket_id].append(
                (afs.join(directory, name), size))
        self._synthetic(groups, write_id, statement_id, min_write_id, check_raw=True)

    def originals(self) -> None:
        groups: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for rel in self.state.original_files:
            name = rel.rsplit("/", 1)[-1]
            try:
                bucket = ParsedOriginalFile.parse(name).bucket_id
            except InvalidLayoutError:
                bucket = 0  # Hive assigns non-conforming original names to bucket 0 too
            groups[bucket].append((afs.join(self.root, rel),
                                   self.state.original_file_sizes.get(rel, 1)))
        self._synthetic(groups, 0, 0, 0, check_raw=False)

    def _synthetic(self, groups: dict[int, list[tuple[str, int]]], write_id: int,
                   statement_id: int, min_write_id: int, *, check_raw: bool) -> None:
        """Rows of one logical bucket get rowIds running across its files in path order."""
        for bucket in sorted(groups):
            offset = 0
            prop = BucketCodec.V1.encode(bucket, max(statement_id, 0))
            for path, size in sorted(groups[bucket]):
                if size == 0:
                    continue
                orc = OrcFile(self.fs, path)
                if check_raw and orc.is_acid:
                    continue  # an ACID file that merely has an original-style name
                self.splits.append(self._attach(Split(
                    path, bucket, min_write_id, write_id, statement_id, True,
                    Synthetic(write_id, prop, offset))))
                offset += orc.nrows

    def acid_files(self, name: str, parsed: ParsedDelta | None, base_write_id: int) -> None:
        directory = self._path(name)
        if parsed is None:
            # a base holds rows of write ids 0..N (0: originals made permanent; N may be
            # Long.MIN_VALUE after an originals-only compaction)
            lo, hi, stmt, rows_valid = 0, max(base_write_id, 0), -1, True
        else:
            lo, hi, stmt = parsed.min_write_id, parsed.max_write_id, parsed.statement_id
            rows_valid = (self.write_ids.is_write_id_range_valid(lo, hi) == RangeResponse.ALL)
        streaming = parsed is not None and lo != hi and parsed.visibility_txn_id == 0
        facts = self._facts(directory)
        self.opened = self.opened or streaming or bool(facts.originals)
        self.listed[name] = facts.non_empty
        for file_name, bucket, size in facts.buckets:
            if not self._wanted(bucket):
                continue
            path = afs.join(directory, file_name)
            length = read_flush_length(self.fs, path + FLUSH_LENGTH_SUFFIX) if streaming else None
            if size == 0 or length == 0:
                continue
            self.splits.append(self._attach(Split(
                path, bucket, lo, hi, stmt, rows_valid, logical_length=length, size=size,
                recorded_size=self._recorded_size(path, size))))
        raw_allowed = (parsed is None and not self.state.base_is_compacted) or (
            parsed is not None and lo == hi)
        if raw_allowed and facts.originals:
            self.raw_files(directory, hi, max(stmt, 0), lo)


def plan_partition(fs: pafs.FileSystem, partition_dir: str, state: AcidState,
                   write_ids: ValidWriteIdList, listed: Listed | None = None, *,
                   buckets: frozenset[int] | None = None,
                   listings: Mapping[str, list[afs.Entry]] | None = None,
                   exact: frozenset[str] = frozenset()) -> list[Split]:
    """All splits of one partition, in read order: base, originals, then insert deltas.
    ``listed`` (if given) receives the (name, size) of the non-empty bucket files of each
    directory read.

    ``buckets``: only the splits of these bucket ids, with their delete files (a statement
    whose predicate pins the bucket columns reads no other; building a split and matching
    its delete files costs a one-row DELETE among hundreds of deltas more than its read).
    Every directory is still listed and counted in ``listed``. Original and LOAD DATA files
    need not follow the bucket hash, so where the partition holds one every split is
    planned.

    ``listings``: the selected directories' contents by path, when the caller knows them
    (``read.record_plan`` builds them from the metastore's record): then no directory is
    listed, which on an object store saves a request per directory; ``exact``: the files
    whose sizes there are the bytes the metastore recorded, checked when they are opened."""
    return _plan(fs, partition_dir, state, write_ids, listed=listed, buckets=buckets,
                 listings=listings, exact=exact).splits


def _plan(fs: pafs.FileSystem, partition_dir: str, state: AcidState,
          write_ids: ValidWriteIdList, *, listed: Listed | None,
          buckets: frozenset[int] | None,
          listings: Mapping[str, list[afs.Entry]] | None = None,
          exact: frozenset[str] = frozenset()) -> _Planner:
    """The planner of ``buckets``' splits, or of every split where one of them is synthetic
    (an original file need not follow the bucket hash)."""
    planner = _planned(fs, partition_dir, state, write_ids, listed=listed, buckets=buckets,
                       listings=listings, exact=exact)
    if buckets is not None and any(s.synthetic is not None for s in planner.splits):
        return _planned(fs, partition_dir, state, write_ids, listed=listed, buckets=None,
                        listings=listings, exact=exact)
    return planner


def _planned(fs: pafs.FileSystem, partition_dir: str, state: AcidState,
             write_ids: ValidWriteIdList, *, buckets: frozenset[int] | None,
             listed: Listed | None = None,
             listings: Mapping[str, list[afs.Entry]] | None = None,
             exact: frozenset[str] = frozenset()) -> _Planner:
    """The planner that planned ``state``'s splits (``splits``), with what it found."""
    planner = _Planner(fs, partition_dir, state, write_ids, buckets)
    if listed is not None:
        planner.listed = listed
    if listings is not None:
        planner.known(listings, exact)
    planner.list_all([*state.delete_deltas, *([state.base] if state.base else []),
                      *(n for n in state.deltas if not state.delta_info[n].delete)])
    planner.collect_deletes()
    if state.base is not None and state.base_info is not None:
        planner.acid_files(state.base, None, state.base_info.write_id)
    planner.originals()
    for name in state.deltas:
        parsed = state.delta_info[name]
        if not parsed.delete:
            planner.acid_files(name, parsed, 0)
    return planner


@dataclass(frozen=True)
class SplitMemo:
    """What ``plan_partition`` planned for one state from known listings, kept so that the
    plan of a state that only adds deltas to it (``extend_partition``) is made from it."""

    state: AcidState
    buckets: frozenset[int] | None
    #: each bucket's delete files, in the order ``collect_deletes`` found them
    deletes: Mapping[int, tuple[DeleteSource, ...]]
    splits: tuple[Split, ...]
    #: each bucket's splits, by their positions in ``splits``
    positions: Mapping[int, tuple[int, ...]]


def plan_partition_memo(fs: pafs.FileSystem, partition_dir: str, state: AcidState,
                        write_ids: ValidWriteIdList, *, buckets: frozenset[int] | None,
                        listings: Mapping[str, list[afs.Entry]], exact: frozenset[str]
                        ) -> tuple[list[Split], SplitMemo | None]:
    """``plan_partition`` from known listings, with what ``extend_partition`` needs to
    extend it; no memo where the plan read more than names and sizes (original or LOAD
    DATA files, whose rows are counted by opening them; a streaming delta's flush length,
    which may grow) or holds synthetic splits."""
    planner = _plan(fs, partition_dir, state, write_ids, listed=None, buckets=buckets,
                    listings=listings, exact=exact)
    splits = planner.splits
    if planner.opened or state.original_files or any(
            s.synthetic is not None for s in splits):
        return splits, None
    positions: dict[int, list[int]] = defaultdict(list)
    for index, split in enumerate(splits):
        positions[split.bucket_id].append(index)
    return splits, SplitMemo(state, buckets, {b: tuple(d) for b, d in planner.deletes.items()},
                             tuple(splits), {b: tuple(p) for b, p in positions.items()})


def extend_partition(memo: SplitMemo, fs: pafs.FileSystem, partition_dir: str,
                     state: AcidState, write_ids: ValidWriteIdList, *,
                     buckets: frozenset[int] | None,
                     listings: Mapping[str, list[afs.Entry]], exact: frozenset[str]
                     ) -> tuple[list[Split], SplitMemo] | None:
    """``plan_partition_memo`` of ``state``, made from the plan of ``memo.state`` when
    ``state`` is that state with deltas added at the end (``directory.extend``); None where
    that cannot be done (the caller plans it whole).

    The caller must know that every old directory's listing and exact files are the same,
    and that ``write_ids`` answers as the old plan's list did for every old directory's
    write ids (``plan_memory.Selection.advance`` proves both). Then every old split is the
    same but for the new delete files of its bucket that qualify for it, which come after
    its old ones (``collect_deletes`` walks the delete deltas in order, and the new ones
    are last), and the new deltas' splits come after all the old ones, as ``_plan`` orders
    them. A statement among hundreds of deltas then plans its new directories, and touches
    the old splits of only the buckets a new delete file is in."""
    old = memo.state
    count = len(old.deltas)
    if memo.buckets != buckets or state.base != old.base or len(state.deltas) < count or \
            (count and state.deltas[count - 1] != old.deltas[-1]) or state.original_files:
        return None
    new = state.deltas[count:]
    planner = _Planner(fs, partition_dir, state, write_ids, buckets)
    planner.known(listings, exact)
    planner.list_all(list(new))
    added: dict[int, list[DeleteSource]] = defaultdict(list)
    planner.deletes = added
    for name in new:
        if state.delta_info[name].delete:
            planner.collect_delta_deletes(name)
    splits = list(memo.splits)
    positions = {b: list(p) for b, p in memo.positions.items()}
    for bucket, fresh in added.items():
        for index in positions.get(bucket, ()):
            split = splits[index]
            chosen = tuple(d for d in fresh
                           if _qualifies(d, split.min_write_id, split.statement_id))
            if chosen:
                splits[index] = replace(split, deletes=split.deletes + chosen)
    deletes = {b: d + tuple(added.get(b, ())) for b, d in memo.deletes.items()}
    deletes.update((b, tuple(d)) for b, d in added.items() if b not in memo.deletes)
    planner.deletes = defaultdict(list, {b: list(d) for b, d in deletes.items()})
    for name in new:
        parsed = state.delta_info[name]
        if not parsed.delete:
            planner.acid_files(name, parsed, 0)
    if planner.opened:
        return None
    for split in planner.splits:
        positions.setdefault(split.bucket_id, []).append(len(splits))
        splits.append(split)
    return splits, SplitMemo(state, buckets, deletes, tuple(splits),
                             {b: tuple(p) for b, p in positions.items()})
