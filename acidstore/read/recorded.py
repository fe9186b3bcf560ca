"""What the metastore says a snapshot must find on disk (layer L3).

The metastore records, for every committed write, the directories it wrote and its bucket
files (by count; by name and bytes from schema 11 on), and for every committed compaction
(schema 6 on) the directories it wrote and their bucket files. This module loads the part
of that record a snapshot's directories can need, per partition and from its base's write
id up (so a compacted table's statements cost the same however long its history);
``read.record_check`` compares it with what the snapshot listed.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Protocol

from acidstore.config import WRITE_NAMES_KEPT
from acidstore.format.directory import AcidState
from acidstore.format.layout import is_acid_directory_name
from acidstore.io import fs as afs
from acidstore.metastore import CompactionOutput, TableRecord, WriteComponent
from acidstore.read import record_memory

__all__ = ["PartitionRecord", "Recorded", "RecordedOutput", "RecordedWrite", "RecordedWrites",
           "SnapshotRecord", "record_floor"]


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


@lru_cache(maxsize=WRITE_NAMES_KEPT)
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
    #: the original files (name below the partition -> bytes) the partition may hold, when
    #: the table records them all (``TableInfo.originals_recorded``); None: not judged
    originals: Mapping[str, int] | None = None

    def __bool__(self) -> bool:
        return bool(self.write_ids or self.compactions or self.managed
                    or self.originals is not None)

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
    def of(cls, metastore: TableRecord, table: str, location: str, *,
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

    def __init__(self, metastore: TableRecord, table: str, location: str, *,
                 pending: frozenset[int] = frozenset(), originals: bool = False) -> None:
        self._metastore = metastore
        self._table = table
        self._location = location
        self._pending = pending
        #: the table records its original files (``TableInfo.originals_recorded``): loaded,
        #: by partition, when a partition without a base (which would read them) asks
        self._judge_originals = originals
        self._originals: dict[str, dict[str, int]] | None = None
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
        txns = {parsed.visibility_txn_id for _, parsed in state.selected_parsed()} - {0}
        with self._lock:
            self._load_writes(floor)
            self._load_outputs(txns)
            writes = [w for w in self._writes.get(relative, ()) if w.write_id >= floor]
            outputs = [_output(o) for txn in sorted(txns) for o in self._outputs.get(txn, ())
                       if o.partition == relative]
            compactions = frozenset(txn for txn in txns if self._outputs.get(txn))
            write_ids, recorded = self._write_ids, self._recorded
            originals = None
            if self._judge_originals and state.base is None:
                originals = self._load_originals().get(relative, {})
        return PartitionRecord(partition_path, writes, outputs, write_ids, compactions,
                               managed=True, recorded=recorded,
                               every_output=lambda: self._every_output(relative),
                               originals=originals)

    def _load_originals(self) -> dict[str, dict[str, int]]:
        """The table's recorded original files by partition, in one query per snapshot, and
        only once a partition without a base is read (a base holds its originals' rows)."""
        if self._originals is None:
            by_partition: dict[str, dict[str, int]] = defaultdict(dict)
            for o in self._metastore.original_files(self._table):
                by_partition[o.partition][o.name] = o.bytes
            self._originals = dict(by_partition)
        return self._originals

    def _every_output(self, relative: str) -> list[RecordedOutput]:
        return [_output(o) for o in self._metastore.compaction_outputs(
            self._table, partition=relative)]
