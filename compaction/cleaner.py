"""The Cleaner (spec §11): removes what no reader can need any more.

After a compaction commits, the directories it replaced are obsolete; after a write aborts,
its directories are garbage. Neither may vanish under a reader: the cleaner keeps every
directory that a live snapshot selects, where live snapshots are the metastore's unexpired
reader leases and the snapshots of open transactions, and it waits ``retention_seconds``
after a compaction before touching what it replaced, so time travel keeps working for that
long. Aborted writes' metadata is cleared once none of their files remain, so their write ids
stop being exceptions in every snapshot (Hive's cleaner plus housekeeper).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow.fs as pafs

from acidstore import fs as afs
from acidstore.directory import acid_state
from acidstore.errors import AcidStoreError, TableNotFoundError
from acidstore.layout import STAGING_DIR, ParsedBase, ParsedDelta, parse_directory
from acidstore.metastore import CompactionInfo
from acidstore.table import Table
from acidstore.warehouse import Warehouse
from acidstore.writeids import ValidWriteIdList
from compaction.compactor import partition_dirs

__all__ = ["DEFAULT_RETENTION_SECONDS", "Cleaner", "CleanerReport"]

#: how long what a compaction replaced stays readable (time travel, readers still planning)
DEFAULT_RETENTION_SECONDS = 300.0


@dataclass
class CleanerReport:
    """What one pass removed and why it kept the rest."""

    removed: list[str] = field(default_factory=list)
    kept_for_readers: list[str] = field(default_factory=list)
    cleaned: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    forgotten: dict[str, int] = field(default_factory=dict)


def _selected(fs: pafs.FileSystem, directory: str, snapshots: Iterable[
        tuple[object, ValidWriteIdList]]) -> set[str] | None:
    """Every directory a live snapshot reads in this partition; None: protect everything
    (a snapshot that cannot be resolved here must not lose its files either)."""
    keep: set[str] = set()
    for txns, write_ids in snapshots:
        try:
            state = acid_state(directory, write_ids, txns, filesystem=fs)  # type: ignore[arg-type]
        except AcidStoreError:
            return None
        if state.base:
            keep.add(state.base)
        keep.update(state.deltas)
        keep.update(p.split("/", 1)[0] for p in state.original_files)
    return keep


class Cleaner:
    """One pass: ``Cleaner(wh).run()``; the scheduled job repeats it."""

    def __init__(self, warehouse: Warehouse, *,
                 retention_seconds: float = DEFAULT_RETENTION_SECONDS) -> None:
        self._wh = warehouse
        self._retention = timedelta(seconds=retention_seconds)

    def run(self) -> CleanerReport:
        report = CleanerReport()
        now = datetime.now(UTC)
        # a pass removes everything obsolete in the partition, also what a newer compaction
        # replaced: so the newest compaction of a partition decides when retention has passed
        newest: dict[tuple[str, str], datetime] = {}
        for entry in self._wh.metastore.show_compactions():
            if entry.state == "ready for cleaning" and entry.compacted is not None:
                key = (entry.table, entry.partition)
                newest[key] = max(entry.compacted, newest.get(key, entry.compacted))
        for entry in self._wh.metastore.compactions_ready_for_cleaning():
            last = newest.get((entry.table, entry.partition), entry.compacted)
            if last is not None and last + self._retention > now:
                report.waiting.append(entry.compaction_id)
                continue
            self._clean_entry(entry, report)
        for name in self._wh.tables():
            self._clean_aborted(self._wh.table(name), report)
        return report

    # --- obsolete directories after a compaction -----------------------------------------------

    def _clean_partition(self, table: Table, partition: str, directory: str,
                         report: CleanerReport) -> bool:
        """Remove obsolete and aborted dirs no live snapshot needs; True when none is left."""
        fs = table.filesystem
        metastore = self._wh.metastore
        txns = metastore.valid_txns()
        # before anything is listed or removed: time travel stops reading around these
        # compactions (what they replaced is about to go); see acidstore.time_travel
        metastore.begin_cleaning(table.name, partition, txns)
        state = acid_state(directory, metastore.valid_write_ids(table.name, txns), txns,
                           filesystem=fs)
        candidates = sorted(set(state.obsolete) | set(state.aborted))
        if not candidates:
            return True
        keep = _selected(fs, directory, metastore.live_snapshots(table.name))
        left = False
        for name in candidates:
            path = afs.join(directory, name)
            if keep is None or name in keep:
                report.kept_for_readers.append(path)
                left = True
                continue
            _remove(fs, path)
            report.removed.append(path)
        return not left

    def _clean_entry(self, entry: CompactionInfo, report: CleanerReport) -> None:
        metastore = self._wh.metastore
        try:
            table = self._wh.table(entry.table)
        except TableNotFoundError:  # dropped: its files went with it
            metastore.finish_compaction(entry.compaction_id, "succeeded")
            report.cleaned.append(entry.compaction_id)
            return
        directory = afs.join(table.location, entry.partition) if entry.partition \
            else table.location
        if table.filesystem.get_file_info(directory).type != pafs.FileType.Directory or \
                self._clean_partition(table, entry.partition, directory, report):
            metastore.finish_compaction(entry.compaction_id, "succeeded")
            report.cleaned.append(entry.compaction_id)
        else:
            report.waiting.append(entry.compaction_id)

    # --- aborted writes ----------------------------------------------------------------------

    def _clean_aborted(self, table: Table, report: CleanerReport) -> None:
        fs = table.filesystem
        metastore = self._wh.metastore
        for component in metastore.aborted_components(table.name):
            for relative in component.directories:
                path = afs.join(table.location, relative)
                if fs.get_file_info(path).type == pafs.FileType.Directory:
                    _remove(fs, path)
                    report.removed.append(path)
        self._clean_staging(table, report)
        dirs = partition_dirs(table)
        for _, directory in dirs:
            txns = metastore.valid_txns()
            state = acid_state(directory, metastore.valid_write_ids(table.name, txns), txns,
                               filesystem=fs)
            for name in state.aborted:
                _remove(fs, afs.join(directory, name))
                report.removed.append(afs.join(directory, name))
        write_ids = metastore.valid_write_ids(table.name, metastore.valid_txns())
        aborted = list(write_ids.aborted_write_ids)
        if aborted:
            gone = self._without_files(table, dirs, aborted)
            if gone:
                count = metastore.forget_aborted(table.name, gone)
                if count:
                    report.forgotten[table.name] = count

    def _clean_staging(self, table: Table, report: CleanerReport) -> None:
        """Spark writers' staging dirs (``txn_<id>``) of transactions no longer open."""
        fs = table.filesystem
        root = afs.join(table.location, STAGING_DIR)
        entries = afs.list_dir(fs, root) if fs.get_file_info(root).type == \
            pafs.FileType.Directory else []
        txns = self._wh.metastore.valid_txns()
        for entry in entries:
            number = entry.name[4:]
            if entry.name.startswith("txn_") and number.isdigit() and \
                    int(number) <= txns.high_watermark and \
                    int(number) not in txns.open_txn_ids:
                _remove(fs, afs.join(root, entry.name))
                report.removed.append(afs.join(root, entry.name))

    def _without_files(self, table: Table, dirs: list[tuple[str, str]],
                       aborted: list[int]) -> list[int]:
        """The aborted write ids no directory on disk can hold events of. A compactor's
        output dropped the events of every write id its own list marked aborted."""
        dropped: dict[int, ValidWriteIdList] = {}
        for entry in self._wh.metastore.show_compactions():
            if entry.table == table.name and entry.txn_id is not None and \
                    entry.compactor_write_ids is not None:
                dropped[entry.txn_id] = ValidWriteIdList.parse(entry.compactor_write_ids)
        candidates = set(aborted)
        held: set[int] = set()
        for _, directory in dirs:
            for item in afs.list_dir(table.filesystem, directory):
                if not item.is_dir or item.name.startswith(("_", ".")):
                    continue
                try:
                    parsed = parse_directory(item.name)
                except AcidStoreError:
                    continue
                held |= _held(parsed, candidates, dropped)
        return sorted(candidates - held)


def _held(parsed: ParsedBase | ParsedDelta, candidates: set[int],
          dropped: dict[int, ValidWriteIdList]) -> set[int]:
    """Candidates whose events ``parsed`` may hold (they stay remembered as aborted)."""
    compactor = dropped.get(parsed.visibility_txn_id) if parsed.visibility_txn_id else None
    if isinstance(parsed, ParsedBase):
        low, high = (parsed.write_id, parsed.write_id) if not parsed.visibility_txn_id \
            else (1, parsed.write_id)
    else:
        low, high = parsed.min_write_id, parsed.max_write_id
    held = {w for w in candidates if low <= w <= high}
    if compactor is not None:  # (output of an unknown compaction may hold them: kept)
        held = {w for w in held if not compactor.is_write_id_aborted(w)}
    return held


def _remove(fs: pafs.FileSystem, path: str) -> None:
    with contextlib.suppress(OSError):
        fs.delete_dir(path)
