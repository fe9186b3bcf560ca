"""Planning a warehouse table's reads (and compactions) from the metastore's record, without
listing (layer L3).

The metastore records every directory and bucket file (by name and bytes) a committed write
made, and every directory and bucket file a committed compaction made. For a table whose
record is complete, that record *is* the table's manifest, as a Delta log or an Iceberg
manifest is: a read can choose its directories (Hive's ``getAcidState``, unchanged: the
record is handed to ``format.directory.select`` as if it were the partition's listing) and
its files from it, and open only the files it reads. Listing instead cost a request per
directory of every partition a read touched (on S3 a read of one partition of a large table
paid for the whole partition's history of directories, and a full read for every directory
of the table).

What listing found that the record cannot see moves to ``fsck``: a directory or file nobody
recorded is simply never read (as Delta and Iceberg ignore files their log does not name),
and ``fsck`` reports it. A recorded file that is gone is still ``MissingDataError``: opening
it fails, and ``format.orc.file_reader`` names the file.

A partition is planned from the record only when the record is known to be complete for it:

- the table records all it holds (``TableInfo.originals_recorded``: created at metastore
  schema 12 or later, so every write recorded its bucket files and bytes and every
  compaction its outputs);
- the reader's transaction has no writes of its own to the table (those are not committed,
  so not in the record);
- no write at or above the partition's base lacks its bucket files, and no directory of it
  breaks the layout;
- no recorded original file lies in it (adopted originals keep the listing path);
- the snapshot is not older than an INSERT OVERWRITE whose replaced directories the cleaner
  may have removed (``AcidState.newer_base``: the listing path tells that case apart).

Anything else returns None and the caller lists, as before.

The compactor plans from the same ``PlannedPartition`` under its compactor write-id list
(``compaction.plan``), so what it folds is exactly what reads returned; the initiator reads
its thresholds' facts (deltas, their recorded bytes) from it too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import cast

import pyarrow.fs as pafs

from acidstore.config import PLANNED_DIRECTORIES_KEPT
from acidstore.errors import NotEnoughHistoryError
from acidstore.format.directory import AcidState, PartitionListing, select
from acidstore.format.layout import is_acid_directory_name
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.metastore import CompactionOutput, TableRecord, WriteComponent
from acidstore.metastore.history import CommitLog
from acidstore.metastore.records import ComponentLog
from acidstore.read import plan_memory
from acidstore.read.splits import Split, plan_partition

__all__ = ["PlannedPartition", "RecordPlan"]


@dataclass(frozen=True)
class PlannedPartition:
    """One partition's snapshot state chosen from the record, with what planning needs."""

    state: AcidState
    #: each recorded directory's bucket files, by absolute directory path (what a listing
    #: of it would have shown, from the record)
    listings: dict[str, list[afs.Entry]]
    #: absolute file path -> the events its compaction recorded (checked when opened)
    expected_rows: dict[str, int] = field(default_factory=dict)
    #: the files (absolute) whose bytes the record names exactly, checked when opened
    exact: frozenset[str] = frozenset()
    #: every directory the record names in the partition (from its base's write id up, and
    #: every compaction output), by name, with its bucket files' names: what the compactor
    #: and the initiator ask of directories a snapshot does not select (an obsolete base)
    recorded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the bytes each selected compaction output (absolute path) recorded for its bucket
    #: files together: a file of one has no bytes of its own in the record, so a file cut
    #: short shows only against this sum
    output_bytes: Mapping[str, int] = field(default_factory=dict)

    def files(self, directory: str) -> tuple[tuple[str, int | None], ...]:
        """A selected directory's non-empty bucket files (name, the bytes to check when it
        is opened or None) as the record names them."""
        return tuple((e.name, e.size if afs.join(directory, e.name) in self.exact else None)
                     for e in self.listings.get(directory, ()) if e.size > 0)

    def size(self, directory: str) -> int:
        """The bytes the record gives a selected directory's bucket files (a compaction
        output's even shares add up to what it recorded)."""
        return sum(e.size for e in self.listings.get(directory, ()))

    #: the write-id list ``state`` was selected under, and the split plans kept along the
    #: line of plans each grown from the one before (``_grown``): not part of what the plan
    #: is, only of how its splits are planned
    write_ids: ValidWriteIdList | None = field(default=None, compare=False, repr=False)
    memos: plan_memory.SplitPlans | None = field(default=None, compare=False, repr=False)

    def splits(self, fs: pafs.FileSystem, partition_path: str, write_ids: ValidWriteIdList,
               buckets: frozenset[int] | None = None) -> list[Split]:
        """The partition's splits, planned from the record: no directory is listed, and
        each file carries the bytes or the events it must hold, checked as it is opened.
        Under the list the state was selected under, from the splits an earlier plan of the
        same line planned, extended (``plan_memory.SplitPlans``)."""
        if self.memos is not None and write_ids == self.write_ids:
            splits = self.memos.plan(fs, partition_path, self.state, write_ids,
                                     buckets=buckets, listings=self.listings, exact=self.exact)
        else:
            splits = plan_partition(fs, partition_path, self.state, write_ids,
                                    buckets=buckets, listings=self.listings, exact=self.exact)
        expected = self.expected_rows
        return [replace(s, expected_rows=expected[s.path]) if s.path in expected else s
                for s in splits]


@dataclass
class _Directories:
    """The recorded directories of one partition, by name, with their files."""

    files: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    expected_rows: dict[str, int] = field(default_factory=dict)
    #: "directory/file" of the files whose recorded bytes are their own, not a share
    exact: set[str] = field(default_factory=set)
    #: a compaction output's name -> the bytes of its files together
    output_bytes: dict[str, int] = field(default_factory=dict)

    def add_write(self, component: WriteComponent, partition: str) -> bool:
        """Add a write's directories; False if its record cannot stand for a listing."""
        bucket_files = component.bucket_files
        if bucket_files is None:
            return False  # committed before metastore schema 11: counts only
        for directory in component.directories:
            parent, _, name = directory.rpartition("/")
            if parent != partition or not is_acid_directory_name(name):
                return False
            self.files[name]  # a directory whose write left no file is still there
        for path, size in bucket_files:
            directory, _, file_name = path.rpartition("/")
            parent, _, name = directory.rpartition("/")
            if parent != partition or name not in self.files:
                return False
            self.files[name][file_name] = size
            self.exact.add(f"{name}/{file_name}")
        return True

    def add_output(self, output: CompactionOutput, partition: str) -> bool:
        parent, _, name = output.directory.rpartition("/")
        if parent != partition or not is_acid_directory_name(name):
            return False
        rows = dict(output.file_rows)
        # a compaction records its files' events and their bytes together: each file's own
        # bytes only weigh planning (small files, ranges), so an even share stands in
        share = max(1, output.bytes // max(1, len(rows)))
        files = self.files[name]
        self.output_bytes[name] = output.bytes
        for file_name, events in rows.items():
            files[file_name] = share
            self.expected_rows[f"{name}/{file_name}"] = events
        if len(rows) == 1:
            self.exact.update(f"{name}/{file_name}" for file_name in rows)
        return True

    def listing(self, path: str) -> PartitionListing:
        entries = tuple(afs.Entry(name, True, 0) for name in sorted(self.files))
        return PartitionListing(entries, path=path)


@dataclass(frozen=True)
class _Basis:
    """What a partition's plan is built on besides its writes: a kept plan stands for the
    next one only with an equal basis (the same compaction outputs, so the same floor)."""

    part: str
    floor: int
    outputs: tuple[CompactionOutput, ...]


@dataclass
class _Kept:
    """A partition's last plan, kept for the next statement (``read.plan_memory``): its
    directories hold every committed write of the partition from its floor up that the
    table (``table_id``) had at commit sequence number ``seq`` (``CommitLog``), and maybe
    some committed after it (whose directories are then already there)."""

    basis: _Basis
    table_id: int
    seq: int
    directories: _Directories
    selection: plan_memory.Selection
    planned: PlannedPartition


#: ``RecordPlan._extended``'s answer when no kept plan stands
_MISS = object()
#: a commit sequence number above any: the commits after it are none, and its log's
#: sequence number is the metastore's last
_NOW = 2**62

#: the partitions one pair of batched record queries plans (``RecordPlan.plan_many``): a
#: read of a huge table holds the raw rows of this many partitions at a time, and sends no
#: statement of unbounded size, at two queries per batch
PLAN_BATCH = 1000


class RecordPlan:
    """A table's reads of one snapshot, planned from the record.

    One partition costs two indexed metastore queries (its compaction outputs, then its
    committed writes from its base's write id up, by ``(table, partition, write id)``),
    whatever the size of the table and of the partition's history below its base. Many
    (``plan_many``) cost the same two queries per ``PLAN_BATCH`` of them, each reading the
    same index ranges: a query is a network round trip on a PostgreSQL metastore, and two a
    partition made a full read of 1,000 partitions wait for 2,000 of them."""

    def __init__(self, metastore: TableRecord, table: str, location: str) -> None:
        self._metastore = metastore
        self._table = table
        self._location = location
        self._originals: frozenset[str] | None = None

    @property
    def location(self) -> str:
        return self._location

    def original_partitions(self) -> frozenset[str]:
        """The partitions (relative) holding recorded original files (adopted tables)."""
        if self._originals is None:
            self._originals = frozenset(
                o.partition for o in self._metastore.original_files(self._table))
        return self._originals

    def partitions(self) -> list[str]:
        """The table's partitions (relative, in path order) as the record knows them: those
        any write recorded, and those holding adopted originals."""
        found = {*self._metastore.list_partitions(self._table), *self.original_partitions()}
        return sorted(found, key=lambda p: p.split("/"))

    def plan(self, partition_path: str, write_ids: ValidWriteIdList,
             txns: ValidTxnList | None) -> PlannedPartition | None:
        """The partition's state from the record, or None where the record may not stand
        for a listing (see the module docstring)."""
        return self.plan_many([partition_path], write_ids, txns)[partition_path]

    def plan_many(self, partition_paths: Iterable[str], write_ids: ValidWriteIdList,
                  txns: ValidTxnList | None) -> dict[str, PlannedPartition | None]:
        """``plan`` of each partition (absolute paths), by path, in their order, from two
        metastore queries per ``PLAN_BATCH`` of them. An error (``NotEnoughHistoryError``)
        is raised for the first partition, in their order, that ``plan`` raises it for."""
        paths = list(dict.fromkeys(partition_paths))
        found: dict[str, PlannedPartition | None] = {}
        for start in range(0, len(paths), PLAN_BATCH):
            found.update(self._plan_batch(paths[start:start + PLAN_BATCH], write_ids, txns))
        return found

    def _plan_batch(self, paths: list[str], write_ids: ValidWriteIdList,
                    txns: ValidTxnList | None) -> dict[str, PlannedPartition | None]:
        """One batch: every partition's outputs (one query), each partition's floor from
        them, then each partition's plan extended by the commits since this process last
        planned it (``read.plan_memory``), or else its writes from its floor up (one query
        for all of those)."""
        relative = {path: afs.relative(self._location, path) if path != self._location
                    else "" for path in paths}
        originals = self.original_partitions()
        outputs = self._outputs([relative[p] for p in paths if relative[p] not in originals])
        known: dict[str, _Directories] = {}
        floors: dict[str, int] = {}
        for path in paths:
            part = relative[path]
            if part not in outputs:
                continue  # adopted originals: the listing path
            directories = _Directories()
            if all(directories.add_output(o, part) for o in outputs[part]):
                known[path] = directories
                floors[part] = _floor(directories.listing(path), write_ids, txns)
        kept = self._kept(known)
        # the commits since each kept plan (one query per distinct mark, usually one), taken
        # before the writes of the others are read: a commit between the two is then also
        # after the mark their plans are kept at, and the next plan finds its directories
        # already there and plans from scratch rather than adding it twice
        logs = self._logs({k.seq for k in kept.values()}, bool(known) and len(kept) < len(known))
        found: dict[str, PlannedPartition | None] = dict.fromkeys(paths)
        fresh: dict[str, _Basis] = {}
        # the first partition in their order that cannot be read raises, as from scratch
        failed: dict[str, NotEnoughHistoryError] = {}
        for path in known:
            part = relative[path]
            basis = _Basis(part, floors[part], tuple(outputs[part]))
            held = kept.get(path)
            try:
                extended = _MISS if held is None else \
                    self._extended(path, basis, held, logs[held.seq], write_ids=write_ids,
                                   txns=txns)
            except NotEnoughHistoryError as exc:
                failed[path] = exc
                continue
            if extended is _MISS:
                fresh[path] = basis
            else:
                found[path] = cast("PlannedPartition | None", extended)
        components = self._components({basis.part: basis.floor for basis in fresh.values()})
        now = min(logs.values(), key=lambda log: log.seq, default=None)
        for path, basis in fresh.items():
            try:
                planned = _planned(path, basis.part, known[path], components[basis.part],
                                   write_ids=write_ids, txns=txns)
            except NotEnoughHistoryError as exc:
                failed[path] = exc
                continue
            found[path] = planned
            if planned is not None and now is not None:
                self._keep(path, basis, now, directories=known[path], planned=planned,
                           write_ids=write_ids, txns=txns)
        for path in paths:
            if path in failed:
                raise failed[path]
        return found

    def _kept(self, known: Mapping[str, _Directories]) -> dict[str, _Kept]:
        """The plans kept for these partitions (taken out of the memory: each is put back
        extended, or a new one in its place, or none); none where the metastore does not
        number its commits in the order they are seen (``CommitLog``)."""
        if not isinstance(self._metastore, CommitLog):
            return {}
        found = {path: plan_memory.take(self._metastore, (self._table.lower(), path))
                 for path in known}
        return {path: held for path, held in found.items() if isinstance(held, _Kept)}

    def _logs(self, marks: set[int], mark_now: bool) -> dict[int, ComponentLog]:
        """The table's commits after each of ``marks`` (the kept plans'), by mark, and where
        ``mark_now`` and there is none, none after the last commit: its sequence number is
        the mark a plan made now is kept at."""
        metastore = self._metastore
        if not isinstance(metastore, CommitLog):
            return {}
        logs = {mark: metastore.committed_log(self._table, after_seq=mark) for mark in marks}
        if mark_now and not logs:
            logs[_NOW] = metastore.committed_log(self._table, after_seq=_NOW)
        return logs

    def _extended(self, path: str, basis: _Basis, kept: _Kept, log: ComponentLog, *,
                  write_ids: ValidWriteIdList, txns: ValidTxnList | None) -> object:
        """The partition's plan as the one this process kept from its last plan, extended by
        the commits since (``log``); ``_MISS`` where it may not stand (other outputs,
        another floor, the table created again, the metastore's file restored from an
        older copy, a commit that touched a directory already planned): the caller then
        plans from scratch."""
        if kept.basis != basis or log.table_id != kept.table_id or log.seq < kept.seq:
            return _MISS
        directories, part, floor = kept.directories, basis.part, basis.floor
        new: list[str] = []
        for logged in log.components:
            component = logged.component
            if component.partition != part or component.write_id < floor:
                continue
            names = [d.rpartition("/")[2] for d in component.directories]
            touched = [file.rpartition("/")[0].rpartition("/")[2]
                       for file, _ in component.bucket_files or ()]
            if any(name in directories.files for name in (*names, *touched)):
                return _MISS  # read again (see _plan_batch) or an odd write: from scratch
            if not directories.add_write(component, part):
                return None  # as from scratch: this write's record cannot stand for it
            new.extend(names)
        new = list(dict.fromkeys(new))
        selection = kept.selection.advance(new, write_ids, txns, path)
        if selection is None:
            state = select(directories.listing(path), write_ids, txns)
            if state.newer_base is not None:
                return None
            planned: PlannedPartition = _built(path, directories, state, write_ids)
        else:
            planned = _grown(path, directories, kept.planned, selection, new)
        self._keep(path, basis, log, directories=directories, planned=planned,
                   write_ids=write_ids, txns=txns, selection=selection)
        return planned

    def _keep(self, path: str, basis: _Basis, log: ComponentLog, *,
              directories: _Directories, planned: PlannedPartition,
              write_ids: ValidWriteIdList, txns: ValidTxnList | None,
              selection: plan_memory.Selection | None = None) -> None:
        """Keep the partition's plan for the next statement (``read.plan_memory``), as of
        the last commit ``log`` saw."""
        if len(directories.files) > PLANNED_DIRECTORIES_KEPT:
            return
        if selection is None:
            selection = plan_memory.Selection.of(directories.files, planned.state,
                                                 write_ids, txns)
            if selection is None:
                return
        plan_memory.keep(self._metastore, (self._table.lower(), path), _Kept(
            basis, log.table_id, log.seq, directories, selection, planned))

    def _outputs(self, partitions: list[str]) -> dict[str, list[CompactionOutput]]:
        """The partitions' compaction outputs: one query (one partition's indexed query
        when there is one)."""
        if len(partitions) == 1:
            return {partitions[0]: self._metastore.compaction_outputs(
                self._table, partition=partitions[0])}
        return self._metastore.compaction_outputs_by_partition(self._table, partitions) \
            if partitions else {}

    def _components(self, floors: dict[str, int]) -> dict[str, list[WriteComponent]]:
        """The partitions' committed writes, each from its floor up: one query."""
        if len(floors) == 1:
            ((part, floor),) = floors.items()
            return {part: self._metastore.committed_components(
                self._table, partition=part, min_write_id=floor)}
        return self._metastore.committed_components_by_partition(self._table, floors) \
            if floors else {}


def _planned(partition_path: str, relative: str, known: _Directories,
             components: list[WriteComponent], *, write_ids: ValidWriteIdList,
             txns: ValidTxnList | None) -> PlannedPartition | None:
    """A partition's plan from its recorded outputs (in ``known``) and the writes from its
    floor up, or None where they may not stand for its listing."""
    if not all(known.add_write(c, relative) for c in components):
        return None
    state = select(known.listing(partition_path), write_ids, txns)
    if state.newer_base is not None:
        return None  # older than an overwrite: the listing tells what the cleaner left
    return _built(partition_path, known, state, write_ids)


def _built(partition_path: str, known: _Directories, state: AcidState,
           write_ids: ValidWriteIdList) -> PlannedPartition:
    """The plan of ``state`` selected from ``known`` under ``write_ids``, every part made
    afresh, the first of a line (``plan_memory.SplitPlans``)."""
    listings = {afs.join(partition_path, name): _entries(known.files[name])
                for name in state.selected()}
    expected = {afs.join(partition_path, path): rows
                for path, rows in known.expected_rows.items()}
    exact = frozenset(afs.join(partition_path, path) for path in known.exact)
    recorded = {name: tuple(sorted(files)) for name, files in known.files.items()}
    output_bytes = {afs.join(partition_path, name): known.output_bytes[name]
                    for name in state.selected() if name in known.output_bytes}
    return PlannedPartition(state, listings, expected, exact, recorded, output_bytes,
                            write_ids, plan_memory.SplitPlans())


def _grown(partition_path: str, known: _Directories, before: PlannedPartition,
           selection: plan_memory.Selection, new: list[str]) -> PlannedPartition:
    """``_built`` of ``state``, the selection ``before.state`` extended by the new
    directories ``new`` (``plan_memory.Selection.advance``): what it selected before it
    still selects, in the same order, and no new write touched an old directory, so only
    the new directories' parts are made; the old ones are ``before``'s, shared (a plan's
    parts are never changed, and a directory's entries being the same list lets
    ``read.splits`` know its facts at once). The outputs, so the expected rows and the
    outputs' bytes, are the same as before. The plan continues ``before``'s line."""
    state = selection.state
    listings = dict(before.listings)
    for name in state.deltas[len(before.state.deltas):]:
        listings[afs.join(partition_path, name)] = _entries(known.files[name])
    exact = before.exact | frozenset(
        afs.join(partition_path, f"{name}/{file_name}") for name in new
        for file_name in known.files[name] if f"{name}/{file_name}" in known.exact)
    recorded = {**before.recorded, **{name: tuple(sorted(known.files[name])) for name in new}}
    return PlannedPartition(state, listings, before.expected_rows, exact, recorded,
                            before.output_bytes, selection.write_ids, before.memos)


def _entries(files: dict[str, int]) -> list[afs.Entry]:
    return [afs.Entry(name, False, size) for name, size in sorted(files.items())]


def _floor(outputs: PartitionListing, write_ids: ValidWriteIdList,
           txns: ValidTxnList | None) -> int:
    """The write id of the base the snapshot selects among the compaction outputs: no write
    below it can be read (its deltas are older than the base, a base of its own is
    obsolete), so the writes are loaded from it up. 0 when no output base is usable."""
    try:
        state = select(outputs, write_ids, txns)
    except NotEnoughHistoryError:
        return 0  # the full selection below raises it, or finds an overwrite's base
    return 0 if state.base_info is None else max(state.base_info.write_id, 0)
