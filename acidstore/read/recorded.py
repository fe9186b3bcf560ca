"""What the metastore says a snapshot must find on disk (layer L3).

Directory listings alone cannot tell a missing committed directory from one that never
existed: a removed ``delete_delta`` brings deleted rows back, a removed delta or bucket file
drops rows, and the reader would answer without a word. The metastore records, for every
committed write, the directories it wrote and how many bucket files, and for every committed
compaction (schema 6 on) the directories it wrote and their bucket files. A reader compares
them with what it listed:

- a recorded directory of a write id the snapshot sees, which no selected base or compacted
  directory has replaced, must be selected and hold at least as many non-empty bucket files
  as the write made; a selected compaction output must hold as many as the compaction wrote
  (a 0-byte file counts as missing: the record knows it had rows). Otherwise the read stops
  with ``MissingDataError`` naming it;
- where the record names the bucket files (writes from schema 11 on, with their bytes;
  compaction outputs from schema 6 on), each one of a selected directory must be listed, with
  the bytes recorded, else ``MissingDataError`` names it: counts alone let a delete delta's
  ``bucket_00001`` renamed to ``bucket_00003`` pass, and its events then met no row, so a
  deleted row came back; a file copied over another kept the count. A bucket file of such a
  directory that the record does not name is a ``StrayPathError``. All of it is compared
  with the listing the planner took anyway (names and sizes): no file is opened or stat'ed;
- a selected directory of a write id the metastore recorded must be one that write recorded
  (a ``delta_3_3_0007`` copied in beside write 3's ``delta_3_3_0000`` would be read as rows of
  write 3), and a selected ``_v<txn>`` directory of a compaction that recorded its outputs must
  be one of them. Otherwise the read stops with ``StrayPathError`` naming it. Write ids and
  compactions without any record (Hive's files, compactions committed before schema 6) are
  read as before: there is nothing to compare with.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Protocol

import pyarrow.fs as pafs

from acidstore import fs as afs
from acidstore.directory import AcidState
from acidstore.errors import MissingDataError, NotEnoughHistoryError, StrayPathError
from acidstore.layout import (
    ParsedBase,
    ParsedDelta,
    is_acid_directory_name,
    is_bucket_file,
    parse_directory,
)
from acidstore.metastore import CompactionOutput, Metastore, WriteComponent
from acidstore.read import record_memory
from acidstore.read.plan import Split
from acidstore.writeids import ValidWriteIdList

__all__ = ["Missing", "PartitionRecord", "Recorded", "RecordedOutput", "RecordedWrite",
           "RecordedWrites", "SnapshotRecord", "Stray", "check_listed", "check_recorded",
           "find_file_problems", "find_missing", "find_strays", "record_floor",
           "with_recorded_rows"]


@dataclass(frozen=True)
class RecordedWrite:
    """One committed write of a partition: its write id, directories (relative to the
    table), and the bucket files it wrote across them."""

    write_id: int
    directories: tuple[str, ...]
    files: int
    #: (path relative to the table, bytes) of each bucket file (None: not recorded)
    bucket_files: tuple[tuple[str, int], ...] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Its directories' own names (what a partition's listing shows)."""
        return _names(self.directories)[0]

    @property
    def follows_layout(self) -> bool:
        """Every one of its directories has an ACID name (else it is not judged)."""
        return _names(self.directories)[1]


@lru_cache(maxsize=1 << 16)
def _names(directories: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """The names of ``directories`` and whether all are ACID names: every statement checks
    its partition's whole record, the same writes each time but the newest, so each
    write's names are worked out once per process, not once per statement."""
    names = tuple(d.rsplit("/", 1)[-1] for d in directories)
    return names, all(is_acid_directory_name(n) for n in names)


@dataclass(frozen=True)
class RecordedOutput:
    """One directory a committed compaction wrote (relative to the table), with its
    non-empty bucket files."""

    txn_id: int
    directory: str
    files: int
    #: bucket file name -> events in it
    file_rows: Mapping[str, int] = field(default_factory=dict)
    #: the bytes of its bucket files together (None: not known)
    bytes: int | None = None

    @property
    def name(self) -> str:
        return self.directory.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PartitionRecord:
    """What the metastore recorded of one partition, plus what the stray check needs to
    know of the whole table: which write ids and compactions recorded anything at all."""

    #: the partition directory (absolute)
    path: str
    writes: Sequence[RecordedWrite] = ()
    outputs: Sequence[RecordedOutput] = ()
    #: write ids with a record (in any partition) whose directories all follow the layout
    write_ids: frozenset[int] = frozenset()
    #: compaction txns that recorded their outputs (in any partition)
    compactions: frozenset[int] = frozenset()
    #: the table's metastore records every write it commits (a warehouse table): a write id
    #: with no record at all never committed here, whatever the snapshot's list says once
    #: the cleaner forgot that it aborted
    managed: bool = False
    #: write ids with any record (in any partition), whatever their directories' names
    recorded: frozenset[int] = frozenset()
    #: every compaction output of the partition, where ``outputs`` holds only those of the
    #: selected directories' compactions: asked only to name what a missing directory was
    #: folded into, an error path, so a read never loads the table's compaction history
    every_output: Callable[[], Sequence[RecordedOutput]] | None = None

    def __bool__(self) -> bool:
        return bool(self.write_ids or self.compactions or self.managed)

    def all_outputs(self) -> Sequence[RecordedOutput]:
        return self.outputs if self.every_output is None else self.every_output()


class Recorded(Protocol):
    """A table's record as a snapshot read asks for it, one partition at a time."""

    @property
    def location(self) -> str: ...

    def partition(self, partition_path: str, state: AcidState) -> PartitionRecord:
        """The record ``state`` (the partition's selected directories) is checked against."""
        ...


def _output(o: CompactionOutput) -> RecordedOutput:
    return RecordedOutput(o.txn_id, o.directory, o.files, dict(o.file_rows), o.bytes)


def _layout_write_ids(writes: Iterable[RecordedWrite]) -> frozenset[int]:
    """The write ids of ``writes`` all of whose directories (in any partition) follow the
    layout: the others' directories are not judged (never guess)."""
    known: set[int] = set()
    unknown: set[int] = set()
    for write in writes:
        (known if write.follows_layout else unknown).add(write.write_id)
    return frozenset(known - unknown)


@dataclass(frozen=True)
class RecordedWrites:
    """A table's whole record: every committed write and compaction output by partition
    (relative to ``location``, "" unpartitioned). What ``fsck`` audits; a read asks for
    less (``SnapshotRecord``)."""

    location: str
    by_partition: Mapping[str, Sequence[RecordedWrite]]
    outputs_by_partition: Mapping[str, Sequence[RecordedOutput]] = field(default_factory=dict)
    #: write ids of the reader's own open transaction: not committed, so not recorded, but
    #: its reads see them
    pending: frozenset[int] = frozenset()

    @classmethod
    def of(cls, metastore: Metastore, table: str, location: str, *,
           pending: frozenset[int] = frozenset(),
           components: Sequence[WriteComponent] | None = None) -> RecordedWrites:
        """Read both records of ``table`` from the metastore (``pending``: the reading
        transaction's own write ids; ``components``: the committed components, when the
        caller has them already)."""
        writes: dict[str, list[RecordedWrite]] = defaultdict(list)
        found = metastore.committed_components(table) if components is None else components
        for c in found:
            writes[c.partition].append(RecordedWrite(c.write_id, c.directories, c.files,
                                                     c.bucket_files))
        outputs: dict[str, list[RecordedOutput]] = defaultdict(list)
        for o in metastore.compaction_outputs(table):
            outputs[o.partition].append(_output(o))
        return cls(location, writes, outputs, pending)

    def writes(self, partition_path: str) -> Sequence[RecordedWrite]:
        return self.by_partition.get(afs.relative(self.location, partition_path), ())

    @cached_property
    def _write_ids(self) -> frozenset[int]:
        return _layout_write_ids(w for writes in self.by_partition.values() for w in writes)

    @cached_property
    def _recorded(self) -> frozenset[int]:
        return frozenset(w.write_id for writes in self.by_partition.values()
                         for w in writes) | self.pending

    @cached_property
    def _compactions(self) -> frozenset[int]:
        return frozenset(o.txn_id for outputs in self.outputs_by_partition.values()
                         for o in outputs)

    def partition(self, partition_path: str, state: AcidState | None = None
                  ) -> PartitionRecord:
        """The partition's whole record (``state`` is not needed: everything is loaded)."""
        relative = afs.relative(self.location, partition_path)
        return PartitionRecord(partition_path, self.by_partition.get(relative, ()),
                               self.outputs_by_partition.get(relative, ()),
                               self._write_ids, self._compactions, managed=True,
                               recorded=self._recorded)


#: separate output loads one record makes before it loads all of the table's outputs at once
_OUTPUT_LOADS = 2


def record_floor(state: AcidState) -> int:
    """The lowest write id whose record can matter to a snapshot reading ``state``.

    Every directory a writer records is named for its own write id alone (``delta_w_w_s``,
    ``delete_delta_w_w_s``, ``base_w``). ``state`` selects its base ``base_B`` (if any) and
    deltas whose max write id is above B (``best_working_deltas``: a kept delta raises the
    covered id past B; a sibling statement or delete twin repeats a kept one's range). So:

    - ``find_missing`` passes over a write w < B: none of its directories is selected (a
      delta of w has max w <= B; ``base_w`` is not the one base selected), so its first
      directory is ``_replaced`` by the base and nothing is reported. Write B itself can
      own the selected ``base_B`` (an INSERT OVERWRITE), whose files are counted;
    - ``find_strays`` judges selected directories by their single write id (the base's B,
      a delta's w > B) or by their ``_v`` compaction txn, never by a write id below B.

    Hence the records with write id >= B (all partitions', for the table-wide sets) decide
    exactly what the whole history would. No base: every write counts (0)."""
    return 0 if state.base_info is None else state.base_info.write_id


@dataclass(frozen=True)
class _Writes:
    """A table's committed writes as a snapshot's check looks them up (shared by every
    ``SnapshotRecord`` of a process while no commit is new: never changed)."""

    writes: Mapping[str, tuple[RecordedWrite, ...]]
    write_ids: frozenset[int]
    recorded: frozenset[int]


def _by_partition(components: Sequence[WriteComponent]) -> _Writes:
    grouped: dict[str, list[RecordedWrite]] = defaultdict(list)
    for c in components:
        grouped[c.partition].append(RecordedWrite(c.write_id, c.directories, c.files,
                                                  c.bucket_files))
    writes = [w for part in grouped.values() for w in part]
    return _Writes({k: tuple(v) for k, v in grouped.items()}, _layout_write_ids(writes),
                   frozenset(w.write_id for w in writes))


class SnapshotRecord:
    """A table's record loaded as a snapshot's reads need it: per partition, only the writes
    at or above its selected base's write id (``record_floor``) and the compaction outputs
    of its selected ``_v`` directories. A table keeps every committed write forever, so
    loading the whole record made every read and DML statement pay for the table's whole
    history, however compacted. What is loaded is kept: the partitions of one scan share
    the load of the writes above the lowest base seen so far."""

    def __init__(self, metastore: Metastore, table: str, location: str, *,
                 pending: frozenset[int] = frozenset()) -> None:
        self._metastore = metastore
        self._table = table
        self._location = location
        self._pending = pending
        #: every committed write id >= this is loaded (all partitions); None: nothing yet
        self._floor: int | None = None
        self._writes: Mapping[str, tuple[RecordedWrite, ...]] = {}
        self._write_ids: frozenset[int] = frozenset()
        self._recorded: frozenset[int] = pending
        self._outputs: dict[int, list[CompactionOutput]] = {}
        #: all the table's outputs are loaded (after _OUTPUT_LOADS separate loads)
        self._every_txn = False
        self._output_loads = 0
        # partitions may be planned on threads: a load replaces what another one reads
        self._lock = threading.Lock()

    @property
    def location(self) -> str:
        return self._location

    def _load_writes(self, floor: int) -> None:
        if self._floor is not None and floor >= self._floor:
            return
        # all from the lower floor, in commit (txn) order, which decides which problem a read
        # reports first; partitions come in path order, so a scan lowers its floor about
        # ln(partitions) times. ``record_memory`` answers from what this process loaded
        # before, plus the commits since.
        found = record_memory.derived(self._metastore, self._table, floor, _by_partition)
        self._writes, self._write_ids, self._floor = found.writes, found.write_ids, floor
        self._recorded = found.recorded | self._pending

    def _load_outputs(self, txn_ids: set[int]) -> None:
        wanted = set() if self._every_txn else txn_ids - self._outputs.keys()
        if not wanted:
            return
        self._output_loads += 1
        if self._output_loads > _OUTPUT_LOADS:
            # partitions compacted one by one (the Worker's way): one query per partition
            # would cost a scan of many partitions more than the table's outputs do
            self._outputs, self._every_txn = defaultdict(list), True
            found = self._metastore.compaction_outputs(self._table)
        else:
            self._outputs.update((txn, []) for txn in wanted)
            found = self._metastore.compaction_outputs(self._table, txn_ids=wanted)
        for o in found:
            self._outputs[o.txn_id].append(o)

    def partition(self, partition_path: str, state: AcidState) -> PartitionRecord:
        relative = afs.relative(self._location, partition_path)
        floor = record_floor(state)
        txns = {parsed.visibility_txn_id for _, parsed in _selected_parsed(state)} - {0}
        with self._lock:
            self._load_writes(floor)
            self._load_outputs(txns)
            writes = [w for w in self._writes.get(relative, ()) if w.write_id >= floor]
            outputs = [_output(o) for txn in sorted(txns) for o in self._outputs.get(txn, ())
                       if o.partition == relative]
            compactions = frozenset(txn for txn in txns if self._outputs.get(txn))
            write_ids, recorded = self._write_ids, self._recorded
        return PartitionRecord(partition_path, writes, outputs, write_ids, compactions,
                               managed=True, recorded=recorded,
                               every_output=lambda: self._every_output(relative))

    def _every_output(self, relative: str) -> list[RecordedOutput]:
        return [_output(o) for o in self._metastore.compaction_outputs(
            self._table, partition=relative)]


def _covers(name: str, write_id: int, delete: bool) -> bool:
    """Whether the compacted directory ``name`` holds ``write_id``'s rows (``delete``: its
    delete events) once its compaction committed."""
    parsed = parse_directory(name)
    if isinstance(parsed, ParsedBase):
        return write_id <= parsed.write_id
    return parsed.delete == delete and parsed.min_write_id <= write_id <= parsed.max_write_id


def _replaced(name: str, write_id: int, state: AcidState) -> bool:
    """Whether the snapshot reads ``write_id``'s rows of ``name``'s kind from another
    directory: a selected base at or above it, or a selected compacted (ranged) delta."""
    if state.base_info is not None and write_id <= state.base_info.write_id:
        return True
    if name.startswith("base_"):
        return False
    parsed = ParsedDelta.parse(name)
    # a compactor's output has no statement id or carries its visibility txn (_v)
    return any(info.delete == parsed.delete and info.min_write_id <= write_id <=
               info.max_write_id and (info.statement_id < 0 or info.visibility_txn_id > 0)
               for info in state.delta_info.values())


def _selected(state: AcidState) -> list[str]:
    """The directories ``state`` reads: its base, if any, and its deltas."""
    return [*([state.base] if state.base else []), *state.deltas]


def _selected_parsed(state: AcidState) -> list[tuple[str, ParsedBase | ParsedDelta]]:
    """``_selected`` with each name as ``state`` parsed it (no second parse per statement)."""
    out: list[tuple[str, ParsedBase | ParsedDelta]] = []
    if state.base:
        out.append((state.base, state.base_info or parse_directory(state.base)))
    out.extend((name, state.delta_info.get(name) or parse_directory(name))
               for name in state.deltas)
    return out


@dataclass(frozen=True)
class Missing:
    """One committed directory (``directory`` True) or some of its bucket files that a
    snapshot must read but did not find; ``path`` is absolute."""

    path: str
    message: str
    directory: bool
    #: gone because the snapshot is older than the history the table keeps
    history: bool = False


def _gone(location: str, relative: str, write_id: int, outputs: Sequence[RecordedOutput],
          selected: set[str]) -> Missing:
    """A committed directory that is not there; if a compaction folded it into a directory
    that is not read either, that one is what went missing (the cleaner removed the input)."""
    name = relative.rsplit("/", 1)[-1]
    delete = name.startswith("delete_delta_")
    folded = [o for o in outputs if o.name not in selected and _covers(o.name, write_id, delete)]
    if folded:
        last = max(folded, key=lambda o: o.txn_id)
        return Missing(afs.join(location, last.directory),
                       f"write id {write_id} committed {relative}, which compaction txn "
                       f"{last.txn_id} folded into {last.directory}; this snapshot must read "
                       "one of them, but neither is there (removed or moved by hand?)", True)
    return Missing(afs.join(location, relative),
                   f"write id {write_id} committed {relative}, which this snapshot must read, "
                   "but it is not there (removed or moved by hand?)", True)


def find_missing(location: str, state: AcidState, write_ids: ValidWriteIdList,
                 record: PartitionRecord, listed: Mapping[str, Sequence[tuple[str, int]]]
                 ) -> Iterator[Missing]:
    """Every committed directory (or bucket file) of ``record`` (one partition's) that
    ``state`` should read but did not find (by directory and count; ``find_file_problems``
    judges the files by name and bytes). ``listed``: (name, size) of the non-empty bucket
    files per selected directory name, as the caller listed them."""
    selected = set(_selected(state))
    for write in record.writes:
        if not write_ids.is_write_id_valid(write.write_id):
            continue
        if not write.follows_layout:
            continue  # not a layout this check knows; never guess
        names = write.names
        counted = 0
        for relative, name in zip(write.directories, names, strict=True):
            if name in selected:
                counted += len(listed.get(name, ()))
                continue
            if _replaced(name, write.write_id, state):
                break  # read from the base or compacted directory that replaced it
            newer = state.newer_base
            if newer is not None and write.write_id < newer[1]:
                yield Missing(afs.join(location, relative),
                              f"this snapshot reads write id {write.write_id} from {relative}, "
                              f"which {newer[0]} replaced and the cleaner "
                              "has removed: the table keeps no history from before write id "
                              f"{newer[1]}", True, history=True)
                break
            yield _gone(location, relative, write.write_id, record.all_outputs(), selected)
            break
        else:
            if counted < write.files:
                yield Missing(afs.join(location, write.directories[0]),
                              f"write id {write.write_id} committed {write.files} bucket "
                              f"file(s) in {', '.join(write.directories)} but {counted} are "
                              "there (not empty)", False)
    for output in record.outputs:
        got = listed.get(output.name)
        if got is not None and len(got) < output.files:
            yield Missing(afs.join(location, output.directory),
                          f"compaction txn {output.txn_id} committed {output.files} bucket "
                          f"file(s) in {output.directory} but {len(got)} are there (not "
                          "empty)", False)


@lru_cache(maxsize=1 << 16)
def _files_by_directory(bucket_files: tuple[tuple[str, int], ...]
                        ) -> dict[str, tuple[tuple[str, int], ...]]:
    """A write's recorded bucket files as {directory name: ((file name, bytes), ...)} in
    name order, as a listing has them: worked out once per process per write, as ``_names``
    is (every statement checks the same writes), and compared with a listing as it is."""
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path, size in bucket_files:
        directory, _, name = path.rpartition("/")
        out[directory.rsplit("/", 1)[-1]].append((name, size))
    return {name: tuple(sorted(files)) for name, files in out.items()}


@dataclass
class _Expected:
    """The bucket files the record says one selected directory holds."""

    #: the directory, relative to the table
    relative: str
    #: who recorded them: a write id, or a compaction's txn id (``compaction`` True)
    by: int
    #: (file name, bytes or None: not recorded) in name order
    files: tuple[tuple[str, int | None], ...]
    compaction: bool = False
    #: the bytes of all of them together (None: not recorded)
    total: int | None = None

    @property
    def who(self) -> str:
        return f"compaction txn {self.by}" if self.compaction else f"write id {self.by}"


def find_file_problems(location: str, state: AcidState, write_ids: ValidWriteIdList,
                       record: PartitionRecord,
                       listed: Mapping[str, Sequence[tuple[str, int]]]
                       ) -> tuple[list[Missing], list[Stray]]:
    """The bucket files of the selected directories against the files the record names:
    recorded ones not listed, or listed with other bytes (``Missing``), and listed ones no
    record names (``Stray``). Only directories whose write (or compaction) recorded its
    files are judged. Every statement runs this over the writes above its base, so the
    sound case is one tuple comparison per directory against the planner's listing (names
    and sizes, in name order): no file is opened or stat'ed."""
    selected = set(_selected(state))
    sound: set[str] = set()  # directories whose listing is what their one record names
    wanted: dict[str, _Expected] = {}
    for write in record.writes:
        bucket_files = write.bucket_files
        if bucket_files is None:
            continue
        names, follows = _names(write.directories)
        if not follows or not write_ids.is_write_id_valid(write.write_id):
            continue
        recorded = None
        for relative, name in zip(write.directories, names, strict=True):
            if name not in selected:
                continue
            if recorded is None:
                recorded = _files_by_directory(bucket_files)
            files = recorded.get(name, ())
            if name in sound:  # a second record of the directory (two components of a write)
                sound.discard(name)
                wanted[name] = _Expected(relative, write.write_id, tuple(listed[name]))
            known = wanted.get(name)
            if known is not None:
                known.files = tuple(sorted({**dict(known.files), **dict(files)}.items()))
            elif listed.get(name, ()) == files:
                sound.add(name)  # the common case: every file there, of the bytes recorded
            else:
                wanted[name] = _Expected(relative, write.write_id, files)
    for output in record.outputs:
        if output.name in selected and output.file_rows:
            wanted[output.name] = _Expected(
                output.directory, output.txn_id, tuple((f, None) for f in sorted(
                    output.file_rows)), compaction=True, total=output.bytes or None)
    missing: list[Missing] = []
    strays: list[Stray] = []
    for name, expected in wanted.items():
        got_files = tuple(listed.get(name, ()))
        if got_files == expected.files:
            continue  # the common case: every file there, of the bytes recorded
        got = dict(got_files)
        names_match = got.keys() == {f for f, _ in expected.files}
        if expected.compaction and names_match and expected.total in (None, sum(got.values())):
            continue  # a compaction output's: every file there, of the bytes recorded
        relative, who = expected.relative, expected.who
        found = len(missing)
        for file, size in expected.files:
            path = afs.join(location, relative, file)
            if file not in got:
                missing.append(Missing(path, f"{who} committed bucket file {relative}/{file}, "
                                       "which this snapshot must read, but it is not there "
                                       "(removed, renamed or emptied by hand?)", False))
            elif size is not None and got[file] != size:
                missing.append(Missing(path, f"{who} committed bucket file {relative}/{file} "
                                       f"of {size} bytes, but it holds {got[file]} (replaced "
                                       "or changed by hand?)", False))
        if len(missing) == found and names_match and expected.total is not None:
            missing.append(Missing(afs.join(location, relative),
                                   f"{who} committed {expected.total} bytes of bucket files in "
                                   f"{relative}, but they hold {sum(got.values())} (a file "
                                   "replaced or changed by hand?)", False))
        made = [f for f, _ in expected.files]
        for file in sorted(set(got) - set(made)):
            strays.append(Stray(afs.join(location, relative, file),
                                f"{who} recorded the bucket files of {relative} "
                                f"({', '.join(made) or 'none'}) and this is not one of them, "
                                "yet it would be read as its rows (copied in or renamed by "
                                "hand?)"))
    return missing, strays


@dataclass(frozen=True)
class Stray:
    """A selected directory no committed write or compaction recorded, although its write
    id (or compaction) recorded its directories; ``path`` is absolute."""

    path: str
    message: str


def find_strays(location: str, state: AcidState, record: PartitionRecord) -> Iterator[Stray]:
    """Every directory ``state`` reads that the record of its write id (or compaction) does
    not list, and in a warehouse table every one of a write id with no record at all. Ranged
    deltas without ``_v`` (streaming, older compactors), and write ids or compactions
    without any record where the metastore does not record every write (Hive's files), are
    not judged."""
    partition_path = record.path
    relative = afs.relative(location, partition_path) if partition_path != location else ""
    by_write: dict[int, set[str]] = defaultdict(set)
    for write in record.writes:
        by_write[write.write_id].update(write.names)
    by_txn: dict[int, set[str]] = defaultdict(set)
    for output in record.outputs:
        by_txn[output.txn_id].add(output.name)
    where = f" in {relative}" if relative else ""
    for name, parsed in _selected_parsed(state):
        if parsed.visibility_txn_id > 0:
            txn = parsed.visibility_txn_id
            if txn in record.compactions and name not in by_txn.get(txn, ()):
                yield Stray(afs.join(partition_path, name),
                            f"compaction txn {txn} recorded the directories it wrote"
                            f"{where} ({', '.join(sorted(by_txn.get(txn, ()))) or 'none'}) "
                            "and this is not one of them (copied in by hand?)")
            continue
        if isinstance(parsed, ParsedDelta):
            if parsed.min_write_id != parsed.max_write_id:
                continue
            write_id = parsed.max_write_id
        elif name == state.base and state.base_is_compacted and not record.managed:
            # an older (Hive 3) compactor's base, marked by _metadata_acid: Hive's files.
            # A warehouse table's compactions always write base_N_v<txn>, so there such a
            # base is a copy (``cp -r base_3_v5 base_4``) and is judged by its write id
            continue
        else:
            write_id = parsed.write_id
        if write_id in record.write_ids and name not in by_write.get(write_id, ()):
            made = ", ".join(sorted(by_write.get(write_id, ()))) or "no directory here"
            yield Stray(afs.join(partition_path, name),
                        f"write id {write_id} committed {made}{where}, not this "
                        "directory, which would be read as its rows (copied in by hand?)")
        elif record.managed and write_id not in record.recorded:
            yield Stray(afs.join(partition_path, name),
                        f"no committed write of this table recorded write id {write_id}, "
                        "yet this snapshot would read this directory as its rows: "
                        "the files of a write that aborted (a task still writing after its "
                        "job failed) or copied in by hand; remove it")


def check_recorded(location: str, state: AcidState, write_ids: ValidWriteIdList,
                   record: PartitionRecord, listed: Mapping[str, Sequence[tuple[str, int]]]
                   ) -> None:
    """Raise StrayPathError for the first directory ``state`` reads that no record lists,
    then MissingDataError for the first committed directory (or bucket file) of ``record``
    (one partition's) that it should read but did not find (or found with other bytes),
    then StrayPathError for a bucket file of a selected directory its record does not
    name. ``listed``: (name, size) of the non-empty bucket files per selected directory
    name, as the planner listed them."""
    if not record:
        return
    for stray in find_strays(location, state, record):
        raise StrayPathError(stray.message, path=stray.path)
    for missing in find_missing(location, state, write_ids, record, listed):
        if missing.history:
            raise NotEnoughHistoryError(f"{missing.message} ({missing.path})")
        raise MissingDataError(missing.message, path=missing.path)
    # a renamed file is both: the recorded name it lost is what the reader must hear of
    gone, strays = find_file_problems(location, state, write_ids, record, listed)
    for missing in gone:
        raise MissingDataError(missing.message, path=missing.path)
    for stray in strays:
        raise StrayPathError(stray.message, path=stray.path)


def with_recorded_rows(location: str, splits: list[Split], record: PartitionRecord
                       ) -> list[Split]:
    """``splits`` with the event count each file of a compaction output must hold: checked
    when the file is opened (its footer says it anyway), so a copied event in a base costs
    the read nothing to notice, where finding it by ROW__ID would decode every key."""
    if not record.outputs:
        return splits
    expected = {afs.join(location, o.directory, name): rows
                for o in record.outputs for name, rows in o.file_rows.items()}
    return [replace(s, expected_rows=expected[s.path]) if s.path in expected else s
            for s in splits]


def check_listed(fs: pafs.FileSystem, directory: str, state: AcidState,
                 write_ids: ValidWriteIdList, recorded: Recorded) -> None:
    """``check_recorded`` for a caller that has not listed the selected directories (the
    compactor: what it folds into a base must not silently lack a committed write, nor
    take in a directory no write made)."""
    record = recorded.partition(directory, state)
    if not record:
        return
    listed = {name: tuple(sorted((e.name, e.size)
                                 for e in afs.list_dir(fs, afs.join(directory, name))
                                 if not e.is_dir and is_bucket_file(e.name) and e.size > 0))
              for name in _selected(state)}
    check_recorded(recorded.location, state, write_ids, record, listed)
