"""Planning a compaction (spec §10.2, §10.3): which directories go in, what comes out.

A plan is computed from one partition's ``AcidState`` under the compactor's write-id list
(never past the lowest open write id, §6.4), so it only ever covers resolved write ids. The
state and the files come from the metastore's record where it is complete for the
partition (``read.record_plan``, as reads plan): no directory is listed, only recorded
files are compacted (so the output holds what reads returned, and a stray beside them is
left for ``fsck``), and each input carries what its record says it holds, checked as it is
opened. Elsewhere the partition is listed and the listing checked against the record. It is
split into one unit of work per bucket (writer id): a unit holds everything needed to produce
that bucket's output files, so it can run in this process or in a Spark task.

- Minor: the current insert and delete deltas become ``delta_min_max_vT`` and
  ``delete_delta_min_max_vT``; events are copied with their ROW__IDs, aborted ones dropped.
- Major: base + deltas (+ pre-ACID originals) become ``base_N_vT`` (N = highest input write
  id); deletes are applied, surviving rows keep their ROW__IDs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.format.directory import AcidState, acid_state
from acidstore.format.layout import (
    FLUSH_LENGTH_SUFFIX,
    ParsedBucketFile,
    base_name,
    delta_name,
    is_bucket_file,
)
from acidstore.format.orc.file_reader import read_flush_length
from acidstore.format.writeids import ValidCompactorWriteIdList, ValidTxnList
from acidstore.io import fs as afs
from acidstore.read.record_check import check_listed
from acidstore.read.record_plan import PlannedPartition, RecordPlan
from acidstore.read.recorded import Recorded
from acidstore.read.splits import Split, plan_partition

__all__ = ["BucketWork", "Kind", "PartitionPlan", "plan_partition_compaction", "still_there"]

Kind = Literal["minor", "major"]
#: Hive's base name when only pre-ACID files are compacted (Long.MIN_VALUE: always valid)
_CONVERSION_BASE = -(2**63)


@dataclass(frozen=True)
class EventFile:
    """An ACID event file to copy (minor compaction), with its readable length and what it
    must hold: a copy folds the file's events into the output as they are, so a file
    removed, emptied, cut short or swapped since its commit must stop the compaction
    (``MissingDataError``) rather than leave a gap the output then hides for good."""

    path: str
    logical_length: int | None = None
    #: the bytes the table's record (or the planner's listing) gives it, checked as it is
    #: opened (None: not known, or a streaming file read up to ``logical_length``)
    size: int | None = None
    #: the events the compaction that wrote it recorded (None: not a compaction's output)
    rows: int | None = None


@dataclass(frozen=True)
class BucketWork:
    """One bucket's share of a compaction: everything a worker process or task needs."""

    kind: Kind
    filesystem: pafs.FileSystem
    partition_dir: str
    bucket_id: int
    schema: pa.Schema
    write_ids: ValidCompactorWriteIdList
    txns: ValidTxnList
    compression: str
    #: major: the splits to read with deletes applied; minor: empty
    splits: tuple[Split, ...] = ()
    #: minor: the insert and delete event files to copy
    inserts: tuple[EventFile, ...] = ()
    deletes: tuple[EventFile, ...] = ()
    #: output directories, relative to the partition (major: the base; minor: delta, delete)
    outputs: tuple[str, ...] = ()
    #: (absolute directory, bytes, bucket file names) of each compaction output it reads,
    #: as the record has them: what tells an input file cut short from a corrupt one
    recorded_bytes: tuple[tuple[str, int, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class PartitionPlan:
    """A partition's compaction: inputs, outputs and the per-bucket work (empty if there is
    nothing to compact; ``reason`` then says why)."""

    partition: str
    directory: str
    kind: Kind
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    work: tuple[BucketWork, ...] = field(default=())
    reason: str = ""
    #: obsolete or aborted directories exist: worth a cleaner pass even without compacting
    needs_cleaning: bool = False

    @property
    def enough(self) -> bool:
        return bool(self.outputs)


def _event_files(fs: pafs.FileSystem, directory: str) -> dict[int, list[EventFile]]:
    """Bucket id -> the (non-empty) bucket files of one delta directory."""
    out: dict[int, list[EventFile]] = defaultdict(list)
    entries = afs.list_dir(fs, directory)
    names = {e.name for e in entries}
    for entry in entries:
        if entry.is_dir or not is_bucket_file(entry.name):
            continue
        length = None
        if entry.name + FLUSH_LENGTH_SUFFIX in names:
            length = read_flush_length(fs, afs.join(directory, entry.name + FLUSH_LENGTH_SUFFIX))
            if length == 0:
                continue
        elif entry.size == 0:
            continue
        out[ParsedBucketFile.parse(entry.name).bucket_id].append(
            EventFile(afs.join(directory, entry.name), length,
                      entry.size if length is None else None))
    return out


def _recorded_event_files(fs: pafs.FileSystem, directory: str, streaming: bool,
                          planned: PlannedPartition) -> dict[int, list[EventFile]]:
    """``_event_files`` from the record: the bucket files it names in ``directory``, with
    their recorded bytes or events, unlisted. A streaming delta's side file is read as a
    reader reads it (a stat, no listing)."""
    out: dict[int, list[EventFile]] = defaultdict(list)
    for name, size in planned.files(directory):
        if not is_bucket_file(name):
            continue
        path = afs.join(directory, name)
        length = read_flush_length(fs, path + FLUSH_LENGTH_SUFFIX) if streaming else None
        if length == 0:
            continue
        out[ParsedBucketFile.parse(name).bucket_id].append(EventFile(
            path, length, size if length is None else None, planned.expected_rows.get(path)))
    return out


@dataclass(frozen=True)
class _Context:
    fs: pafs.FileSystem
    schema: pa.Schema
    write_ids: ValidCompactorWriteIdList
    txns: ValidTxnList
    compression: str
    txn_id: int
    #: the partition's state and files from the record (None: planned from listings)
    planned: PlannedPartition | None = None

    def splits(self, directory: str, state: AcidState) -> list[Split]:
        if self.planned is not None:
            return self.planned.splits(self.fs, directory, self.write_ids)
        return plan_partition(self.fs, directory, state, self.write_ids)

    def event_files(self, directory: str, name: str, state: AcidState
                    ) -> dict[int, list[EventFile]]:
        path = afs.join(directory, name)
        if self.planned is None:
            return _event_files(self.fs, path)
        parsed = state.delta_info[name]
        streaming = parsed.min_write_id != parsed.max_write_id and \
            parsed.visibility_txn_id == 0
        return _recorded_event_files(self.fs, path, streaming, self.planned)

    def needs_cleaning(self, directory: str, state: AcidState) -> bool:
        """Whether obsolete or aborted directories are left (asked only when a compaction
        is refused)."""
        if self.planned is None:
            return bool(state.obsolete or state.aborted)
        return bool(still_there(self.fs, directory, self.planned, state.obsolete))

    def work(self, kind: Kind, directory: str, bucket: int, outputs: tuple[str, ...], *,
             splits: tuple[Split, ...] = (), inserts: tuple[EventFile, ...] = (),
             deletes: tuple[EventFile, ...] = ()) -> BucketWork:
        recorded: tuple[tuple[str, int, tuple[str, ...]], ...] = ()
        if self.planned is not None:
            planned = self.planned
            recorded = tuple((path, total, planned.recorded.get(path.rsplit("/", 1)[-1], ()))
                             for path, total in sorted(planned.output_bytes.items()))
        return BucketWork(kind, self.fs, directory, bucket, self.schema, self.write_ids,
                          self.txns, self.compression, splits, inserts, deletes, outputs,
                          recorded)


def still_there(fs: pafs.FileSystem, directory: str, planned: PlannedPartition,
                names: list[str]) -> list[str]:
    """Those of ``names`` (recorded directories a snapshot does not select) still on disk.
    The record keeps naming what the cleaner has removed, so a recorded file of each (the
    directory itself where it recorded none) is looked for: one batch of stats, no listing."""
    if not names:
        return []
    paths = []
    for name in names:
        files = planned.recorded.get(name, ())
        paths.append(afs.join(directory, name, files[0]) if files else afs.join(directory, name))
    return [name for name, info in zip(names, fs.get_file_info(paths), strict=True)
            if info.type != pafs.FileType.NotFound]


def _minor(ctx: _Context, partition: str, directory: str, state: AcidState) -> PartitionPlan:
    inputs = tuple(state.deltas)
    kinds = {state.delta_info[d].delete for d in inputs}
    if len(inputs) < 2 or (len(inputs) == 2 and len(kinds) == 2):
        return PartitionPlan(partition, directory, "minor", inputs, (),
                             reason=f"{len(inputs)} delta(s): nothing for a minor compaction",
                             needs_cleaning=ctx.needs_cleaning(directory, state))
    raw = [s for s in ctx.splits(directory, state)
           if s.synthetic is not None and s.path.rsplit("/", 2)[-2] in inputs]
    if raw:
        return PartitionPlan(partition, directory, "minor", inputs, (),
                             reason="deltas hold raw (LOAD DATA) files: run a major compaction",
                             needs_cleaning=ctx.needs_cleaning(directory, state))
    low = min(state.delta_info[d].min_write_id for d in inputs)
    high = max(state.delta_info[d].max_write_id for d in inputs)
    outputs = (delta_name(low, high, visibility_txn_id=ctx.txn_id),
               delta_name(low, high, delete=True, visibility_txn_id=ctx.txn_id))
    inserts: dict[int, list[EventFile]] = defaultdict(list)
    deletes: dict[int, list[EventFile]] = defaultdict(list)
    for name in inputs:
        target = deletes if state.delta_info[name].delete else inserts
        for bucket, files in ctx.event_files(directory, name, state).items():
            target[bucket].extend(files)
    work = tuple(ctx.work("minor", directory, bucket, outputs,
                          inserts=tuple(inserts.get(bucket, ())),
                          deletes=tuple(deletes.get(bucket, ())))
                 for bucket in sorted(set(inserts) | set(deletes)))
    return PartitionPlan(partition, directory, "minor", inputs, outputs, work,
                         needs_cleaning=True)


def _major(ctx: _Context, partition: str, directory: str, state: AcidState) -> PartitionPlan:
    inputs = tuple(([state.base] if state.base else []) + state.deltas
                   + state.original_files)
    if not state.original_files and len(state.deltas) + (1 if state.base else 0) <= 1:
        return PartitionPlan(partition, directory, "major", inputs, (),
                             reason="a single base or delta: nothing for a major compaction",
                             needs_cleaning=ctx.needs_cleaning(directory, state))
    highs = [state.delta_info[d].max_write_id for d in state.deltas]
    if state.base_info is not None:
        highs.append(state.base_info.write_id)
    output = base_name(max(highs) if highs else _CONVERSION_BASE, ctx.txn_id)
    splits: dict[int, list[Split]] = defaultdict(list)
    for split in ctx.splits(directory, state):
        splits[split.bucket_id].append(split)
    work = tuple(ctx.work("major", directory, bucket, (output,), splits=tuple(splits[bucket]))
                 for bucket in sorted(splits))
    return PartitionPlan(partition, directory, "major", inputs, (output,), work,
                         needs_cleaning=True)


def plan_partition_compaction(fs: pafs.FileSystem, partition: str, directory: str, kind: Kind,
                              *, schema: pa.Schema, write_ids: ValidCompactorWriteIdList,
                              txns: ValidTxnList, txn_id: int, compression: str,
                              recorded: Recorded | None = None,
                              record_plan: RecordPlan | None = None) -> PartitionPlan:
    """The plan for one partition (``partition`` relative to the table, ``directory`` its
    absolute path), for the compaction transaction ``txn_id`` (the output's ``_v`` suffix).

    With ``record_plan`` (a table whose record is complete, ``read.record_plan``) the
    partition's directories and files come from the metastore's record, as a read's do:
    nothing is listed, a directory or file nobody recorded is not compacted (``fsck``
    reports it), and a recorded file that is gone or changed stops the compaction as it is
    opened (``MissingDataError``). Where the record may not stand for a listing the
    partition is listed, and with ``recorded`` the listing is checked against the record:
    a committed directory or bucket file that is missing stops it, a stray is refused."""
    planned = record_plan.plan(directory, write_ids, txns) if record_plan is not None \
        else None
    if planned is not None:
        state = planned.state
    else:
        state = acid_state(directory, write_ids, txns, filesystem=fs, ignore_empty_files=True)
        if recorded is not None:
            check_listed(fs, directory, state, write_ids, recorded)
    ctx = _Context(fs, schema, write_ids, txns, compression, txn_id, planned)
    if kind == "minor":
        return _minor(ctx, partition, directory, state)
    return _major(ctx, partition, directory, state)
