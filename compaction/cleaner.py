"""The Cleaner (spec §11): removes what no reader can need any more.

What a compaction replaced and what an INSERT OVERWRITE's ``base_w`` hides are obsolete; the
directories of aborted writes are garbage. The cleaner finds both in every partition of every
table from the committed state itself (the metastore's snapshot plus a listing), not from the
compaction queue alone: a process that died between a commit and its queue bookkeeping, or an
overwrite that never had a queue entry, leaves nothing behind for ever. The queue only tells
which entries are done.

Nothing obsolete vanishes under a reader: the cleaner keeps every directory that a live
snapshot selects, where live snapshots are the metastore's unexpired reader leases and the
snapshots of open transactions (including opens still in flight on PostgreSQL, which it waits
for: ``Cleaner._opens_settled``), and it waits ``retention_seconds`` after the newest commit
that made something of a partition obsolete before touching that partition, so time travel
keeps working for that long (measured on the metastore's clock, which commit times come from:
the cleaner host's own clock does not shorten it). A transaction's files go only once the
metastore says it aborted. Aborted writes' metadata is cleared once none of their files
remain, so their write ids stop being exceptions in every snapshot (Hive's cleaner plus
housekeeper).

Unlike reads and compactions, which plan from the metastore's record, the cleaner lists the
partitions: what it must find includes what no record names, the leftovers of writes that
aborted (a task still writing after its job failed, a crash before the commit), and only a
listing shows them. It removes only what the metastore knows to be garbage, though: a
directory of a write id it says aborted, or an obsolete one that a committed write or
compaction (or an adoption) recorded. Where the table's record is complete
(``TableInfo.originals_recorded``), a directory or file that the listing alone would call
obsolete but no record names is a stray (copied in by hand, say), which no read or
compaction ever used: it is left where it is, for ``fsck`` to report and an operator to
judge, not deleted on an inference from its name.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pyarrow.fs as pafs

from acidstore.config import CLEANER_IN_FLIGHT_WAIT_SECONDS, RETENTION_SECONDS
from acidstore.engine.aborted_files import aborted_directories
from acidstore.engine.core import HasCore, WarehouseCore, core_of
from acidstore.engine.handle import TableHandle
from acidstore.errors import AcidStoreError, StrayPathError, TableNotFoundError
from acidstore.format.directory import AcidState, acid_state
from acidstore.format.layout import STAGING_DIR, ParsedBase, ParsedDelta, parse_directory
from acidstore.format.writeids import ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import History, Transactions
from acidstore.metastore.validate import check_seconds
from compaction.compactor import partition_dirs

__all__ = ["Cleaner", "CleanerReport"]

_LONG_MIN = -(2**63)
#: a commit the metastore has no time for (a Hive-written directory): no time travel reaches it
_LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)
#: how often a pass looks at the opens in flight (PostgreSQL) while it waits for them
#: (``config.CLEANER_IN_FLIGHT_WAIT_SECONDS``)
_IN_FLIGHT_POLL = 0.02


@dataclass
class CleanerReport:
    """What one pass removed and why it kept the rest."""

    removed: list[str] = field(default_factory=list)
    kept_for_readers: list[str] = field(default_factory=list)
    #: what the listing found obsolete but no record names (fsck reports it): left alone
    kept_unrecorded: list[str] = field(default_factory=list)
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


class _CommitTimes:
    """When the directories of one table became visible, asked of the metastore once each:
    ``_v<T>`` output at the commit of T, other directories at the commit of their newest
    write id."""

    def __init__(self, metastore: History, table: str) -> None:
        self._metastore = metastore
        self._table = table
        self._txns: dict[int, datetime] = {}
        self._write_ids: dict[int, datetime] | None = None

    def of(self, parsed: ParsedBase | ParsedDelta) -> datetime:
        txn = parsed.visibility_txn_id
        if txn:
            if txn not in self._txns:
                info = self._metastore.commit_info(txn)
                self._txns[txn] = _LONG_AGO if info is None else info.commit_time
            return self._txns[txn]
        if self._write_ids is None:
            self._write_ids = self._metastore.write_id_commit_times(self._table)
        write_id = parsed.write_id if isinstance(parsed, ParsedBase) else parsed.max_write_id
        return self._write_ids.get(write_id, _LONG_AGO)


def _span(name: str) -> tuple[tuple[int, int], ParsedBase | ParsedDelta | None]:
    """The write ids a directory covers; pre-ACID files and directories sit below them all."""
    try:
        parsed = parse_directory(name)
    except AcidStoreError:
        return (_LONG_MIN, _LONG_MIN), None
    if isinstance(parsed, ParsedBase):
        return (_LONG_MIN, parsed.write_id), parsed
    return (parsed.min_write_id, parsed.max_write_id), parsed


def obsoleted_since(state: AcidState, times: _CommitTimes) -> datetime | None:
    """The newest moment at which something of ``state.obsolete`` became obsolete: each
    obsolete directory became so when the first directory covering its write ids (one of the
    current or obsolete ones) committed. None when nothing is obsolete."""
    present = [*state.obsolete, *([state.base] if state.base else []), *state.deltas]
    spans = {name: _span(name) for name in present}
    newest: datetime | None = None
    for name in state.obsolete:
        (low, high), _ = spans[name]
        covers = [times.of(parsed) for other, ((o_low, o_high), parsed) in spans.items()
                  if other != name and parsed is not None and o_low <= low and high <= o_high]
        since = min(covers, default=_LONG_AGO)
        newest = since if newest is None else max(newest, since)
    return newest


@storage_boundary
class Cleaner:
    """One pass: ``Cleaner(wh).run()``; the scheduled job repeats it."""

    def __init__(self, warehouse: WarehouseCore | HasCore, *,
                 retention_seconds: float = RETENTION_SECONDS,
                 tables: Iterable[str] | None = None) -> None:
        """``tables`` limits the pass to those tables (``Table.vacuum()``); the queue
        entries of other tables, and of dropped ones, are then left for a full pass."""
        self._wh = core_of(warehouse)
        self._retention = timedelta(seconds=check_seconds(retention_seconds,
                                                          "retention_seconds", zero=True))
        #: opens that stayed in flight for a whole wait (dead, or blocked): not waited for
        #: again in this pass, and nothing obsolete is removed while they are in flight
        self._stuck: set[int] = set()
        self._only = None if tables is None else {
            TableHandle.open(self._wh, t).name for t in tables}

    def run(self) -> CleanerReport:
        report = CleanerReport()
        metastore = self._wh.metastore
        # the metastore's clock, which commit times come from: this host's may be off
        now = metastore.current_time()
        # aborted directories go before the pass's first metastore write: a read-only copy
        # (an archive; as root the permission bits stop no removal) is refused up front
        metastore.check_writable()
        # read before the partitions are listed: each entry's compaction is then visible to
        # the listing, so a clean partition really holds nothing that compaction replaced
        ready = metastore.compactions_ready_for_cleaning()
        left: set[tuple[str, str]] = set()  # (table, partition) still holding obsolete dirs
        for name in self._wh.metastore.list_tables() if self._only is None else sorted(self._only):
            try:
                table = TableHandle.open(self._wh, name)
            except TableNotFoundError:  # dropped meanwhile: its files went with it
                continue
            self._clean_table(table, now, report, left)
        for entry in ready:
            if self._only is not None and entry.table not in self._only:
                continue
            if (entry.table, entry.partition) in left:
                report.waiting.append(entry.compaction_id)
            else:  # also a dropped table's, or a partition gone
                metastore.finish_compaction(entry.compaction_id, "succeeded")
                report.cleaned.append(entry.compaction_id)
        return report

    def _clean_table(self, table: TableHandle, now: datetime, report: CleanerReport,
                     left: set[tuple[str, str]]) -> None:
        fs = table.filesystem
        metastore = self._wh.metastore
        removed = []
        for _, path in aborted_directories(fs, metastore, table.name, table.location):
            _remove(fs, path)
            report.removed.append(path)
            removed.append(path)
        _remove_emptied_partitions(table, metastore, removed)
        self._clean_staging(table, report)
        times = _CommitTimes(metastore, table.name)
        strays: list[StrayPathError] = []  # left where they are: fsck reports them
        dirs = partition_dirs(table, strays=strays)
        report.kept_unrecorded.extend(s.path for s in strays if s.path is not None)
        for relative, directory in dirs:
            if not self._clean_partition(table, relative, directory, times=times, now=now,
                                         report=report):
                left.add((table.name, relative))
        write_ids = metastore.valid_write_ids(table.name, metastore.valid_txns())
        aborted = list(write_ids.aborted_write_ids)
        if aborted:
            gone = self._without_files(table, dirs, aborted)
            if gone:
                count = metastore.forget_aborted(table.name, gone)
                if count:
                    report.forgotten[table.name] = count

    def _clean_partition(self, table: TableHandle, partition: str, directory: str, *,
                         times: _CommitTimes, now: datetime, report: CleanerReport) -> bool:
        """Remove the aborted dirs, and the obsolete ones no live snapshot needs once the
        retention has passed; True when nothing obsolete is left."""
        fs = table.filesystem
        metastore = self._wh.metastore
        txns = metastore.valid_txns()
        state = acid_state(directory, metastore.valid_write_ids(table.name, txns), txns,
                           filesystem=fs)
        for name in state.aborted:  # the metastore says aborted: no snapshot reads them
            _remove(fs, afs.join(directory, name))
            report.removed.append(afs.join(directory, name))
        if state.obsolete:
            known = _recorded_names(table, partition)
            if known is not None:
                strays = [n for n in state.obsolete if n not in known]
                report.kept_unrecorded.extend(afs.join(directory, n) for n in strays)
                state = replace(state, obsolete=[n for n in state.obsolete if n in known])
        since = obsoleted_since(state, times)
        if since is None:
            return True
        if since + self._retention > now:
            return False
        # before the live snapshots are read: time travel stops reading around the
        # compactions ``txns`` sees (what they replaced is about to go), and a past snapshot
        # leased from now on sees that (acidstore.read.time_travel)
        metastore.begin_cleaning(table.name, partition, txns)
        # and an open in flight (PostgreSQL) may have taken its snapshot before what made
        # these directories obsolete committed, yet is not among the open txns' snapshots
        # until its row is visible: wait for those in flight now (later ones see the commit)
        keep = _selected(fs, directory, metastore.live_snapshots(table.name)) \
            if self._opens_settled() else None
        clean = True
        for name in state.obsolete:
            path = afs.join(directory, name)
            if keep is None or name in keep:
                report.kept_for_readers.append(path)
                clean = False
                continue
            _remove(fs, path)
            report.removed.append(path)
        return clean

    def _opens_settled(self) -> bool:
        """Whether every open in flight now has become visible (an open is one statement:
        they are waited for up to ``CLEANER_IN_FLIGHT_WAIT_SECONDS``), so that
        ``live_snapshots`` read afterwards lists every snapshot that may predate what was found
        obsolete."""
        metastore = self._wh.metastore
        pending = set(metastore.opens_in_flight())
        if pending and not pending <= self._stuck:
            deadline = time.monotonic() + CLEANER_IN_FLIGHT_WAIT_SECONDS
            while pending and time.monotonic() < deadline:
                time.sleep(_IN_FLIGHT_POLL)
                pending &= set(metastore.opens_in_flight())
            self._stuck |= pending
        return not pending

    def _clean_staging(self, table: TableHandle, report: CleanerReport) -> None:
        """Spark writers' staging dirs (``txn_<id>``) of transactions no longer open, then
        the staging root if that is empty (removed only if empty at that very moment:
        a Spark write may be staging there right now)."""
        fs = table.filesystem
        root = afs.join(table.location, STAGING_DIR)
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            return
        txns = self._wh.metastore.valid_txns()
        for entry in afs.list_dir(fs, root):
            number = entry.name[4:]
            if entry.name.startswith("txn_") and number.isdigit() and \
                    int(number) <= txns.high_watermark and \
                    int(number) not in txns.open_txn_ids:
                _remove(fs, afs.join(root, entry.name))
                report.removed.append(afs.join(root, entry.name))
        afs.remove_empty_directory(fs, root)

    def _without_files(self, table: TableHandle, dirs: list[tuple[str, str]],
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


def _recorded_names(table: TableHandle, partition: str) -> frozenset[str] | None:
    """The names (directly below the partition) of everything the table's record names in
    ``partition``: every committed write's directories, every committed compaction's, and
    the adopted original files. None where the record may lack what the table holds (a
    table from before metastore schema 12): there the listing's verdict stands."""
    if not table.info.originals_recorded:
        return None
    metastore = table.metastore
    names: set[str] = set()
    for component in metastore.committed_components(table.name, partition=partition):
        for path in component.directories:
            parent, _, name = path.rpartition("/")
            if parent == partition:
                names.add(name)
    for output in metastore.compaction_outputs(table.name, partition=partition):
        names.add(output.directory.rsplit("/", 1)[-1])
    names.update(o.name.split("/", 1)[0] for o in metastore.original_files(table.name)
                 if o.partition == partition)
    return frozenset(names)


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


def _remove_emptied_partitions(table: TableHandle, metastore: Transactions, removed: list[str]
                               ) -> None:
    """Remove partition directories left empty by removing a dead write's directories (an
    insert into a new partition that never committed made ``dt=c/`` for nothing). Only
    where no open transaction has registered a write to the partition, and only with a
    removal that fails on a non-empty directory (``os.rmdir``), so a writer creating its
    delta there right now keeps it.

    Object stores have no such removal: pyarrow keeps a zero-byte marker object for a
    "directory" it created, and the only way it offers to drop one (``delete_dir``) deletes
    every object under the prefix, so a writer's bucket file uploaded between our listing and
    that call would be lost. There the marker stays: no object is under it, readers and fsck
    read it as a partition with no rows, and the next insert into it uses it."""
    if not isinstance(table.filesystem, pafs.LocalFileSystem) or not removed:
        return
    database, name = table.name.split(".", 1)
    busy = {lock.partition or "" for lock in metastore.show_locks()
            if (lock.database, lock.table) == (database, name)}
    parents = sorted({afs.relative(table.location, path.rsplit("/", 1)[0])
                      for path in removed} - {""}, key=len, reverse=True)
    for partition in parents:
        levels = partition.split("/")
        for depth in range(len(levels), 0, -1):  # dt=a/h=1, then dt=a
            relative = "/".join(levels[:depth])
            if relative in busy or any(b.startswith(relative + "/") for b in busy):
                break
            try:
                os.rmdir(afs.join(table.location, relative))
            except OSError:  # not empty (data, or a writer's new delta), or already gone
                break


def _remove(fs: pafs.FileSystem, path: str) -> None:
    """Remove an obsolete directory, or an obsolete pre-ACID original file (a major
    compaction's base holds its rows; ``delete_dir`` alone failed on it, quietly, and left
    every original of a converted table behind forever)."""
    with contextlib.suppress(OSError):
        if fs.get_file_info(path).type == pafs.FileType.File:
            fs.delete_file(path)
        else:
            fs.delete_dir(path)
