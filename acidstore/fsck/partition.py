"""fsck of one partition directory against the metastore's record and one snapshot.

The snapshot is a fresh one (leased by the caller, so the cleaner keeps what it selects).
Directory-level checks compare the listing with the metastore: what a committed write made
must be there, what the snapshot selects must come from a committed write (or a committed
compaction), aborted writes' directories are leftovers, and anything outside the layout is
named. File-level checks run on every bucket file the snapshot reads (see ``events``); then
two partition-wide checks: one ROW__ID must not be inserted by two files, and every valid
delete event must find its row among the inserts the snapshot reads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow.fs as pafs

from acidstore.errors import (
    AcidStoreError,
    CorruptFileError,
    InvalidLayoutError,
    MissingDataError,
)
from acidstore.format.directory import AcidState, list_partition, select
from acidstore.format.layout import (
    ParsedBucketFile,
    ParsedDelta,
    ParsedOriginalFile,
    is_acid_directory_name,
    is_bucket_file,
    is_flush_length_file,
    is_hidden,
    is_original_file,
    parse_directory,
)
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.fsck.events import DeleteTargets, Span, scan_file
from acidstore.fsck.findings import Check, Finding, Severity
from acidstore.io import fs as afs
from acidstore.metastore import History
from acidstore.read.record_check import find_file_problems, find_missing, find_strays
from acidstore.read.recorded import RecordedWrites
from acidstore.read.splits import Listed

__all__ = ["TableFacts", "check_partition"]


@dataclass(frozen=True)
class TableFacts:
    """What the metastore says about one table, read once per fsck run."""

    name: str
    location: str
    #: asked only when a ``_v`` directory became visible (its compaction's commit)
    metastore: History
    txns: ValidTxnList
    write_ids: ValidWriteIdList
    recorded: RecordedWrites
    #: directories (relative to the table) that committed writes made
    committed_dirs: frozenset[str]
    #: write ids of the table's aborted transactions that the metastore still remembers
    aborted_write_ids: frozenset[int]
    #: (partition, name, bytes) of the original files adoption placed: Hive's pre-ACID
    #: originals, which no write records
    originals: frozenset[tuple[str, str, int]] = frozenset()
    #: the record names everything the table holds (``TableInfo.originals_recorded``): a
    #: directory it does not name is a stray even where no snapshot selects it (reads and
    #: compactions never use it, and the cleaner leaves it)
    complete: bool = False


class _Partition:
    """The findings of one partition, gathered while walking it."""

    def __init__(self, fs: pafs.FileSystem, facts: TableFacts, partition: str,
                 directory: str) -> None:
        self.fs = fs
        self.facts = facts
        self.partition = partition
        self.directory = directory
        self.findings: list[Finding] = []

    def add(self, path: str, check: Check, severity: Severity, message: str) -> None:
        self.findings.append(Finding(self.facts.name, self.partition, path, check, severity,
                                     message))

    def relative(self, name: str) -> str:
        return afs.join(self.partition, name) if self.partition else name

    # --- directories ---------------------------------------------------------------------------

    def root_entries(self, state: AcidState) -> None:
        """Files and non-ACID directories at the partition root: without a base, readers take
        their files for pre-ACID rows that no committed write made. The originals adoption
        placed are the exception: their rows are the table's, as Hive's converted tables'."""
        severity: Severity = "warning" if state.base else "error"
        why = ("readers take its rows for pre-ACID data no committed write made"
               if not state.base else
               "a base hides it, and as no record names it the cleaner leaves it: remove it"
               if self.facts.complete else "the cleaner removes it (a base hides it)")
        entries = afs.list_dir(self.fs, self.directory)
        for entry in entries:
            if is_hidden(entry.name) or (entry.is_dir and is_acid_directory_name(entry.name)):
                continue
            path = afs.join(self.directory, entry.name)
            if not entry.is_dir and self.adopted(entry.name, entry.size):
                continue
            if entry.is_dir:
                self.add(path, "stray_directory", severity,
                         f"a directory that is no ACID directory in a partition: {why}")
            else:
                self.add(path, "foreign_file", severity,
                         f"a file outside any ACID directory: {why}")
        if not state.base:
            self.lost_originals({e.name for e in entries if not e.is_dir})

    def adopted(self, name: str, size: int) -> bool:
        """An original file adoption placed here, as it placed it: its rows are the table's
        (a file of that name with another size was replaced since, and is reported)."""
        return (self.partition, name, size) in self.facts.originals

    def lost_originals(self, present: set[str]) -> None:
        """Adopted originals gone while no base holds their rows: those rows are lost, since
        the cleaner removes originals only once a base has folded them in."""
        for partition, name, _ in sorted(self.facts.originals):
            if partition == self.partition and name not in present:
                self.add(afs.join(self.directory, name), "missing_file", "error",
                         "an original file adopt_table placed is gone and no base holds its "
                         "rows: they are lost")

    def selected_origin(self, name: str, write_ids: ValidWriteIdList) -> None:
        """A selected directory must come from a committed write (or compaction)."""
        parsed = parse_directory(name)
        path = afs.join(self.directory, name)
        if parsed.visibility_txn_id:
            if self.facts.metastore.commit_info(parsed.visibility_txn_id) is None:
                self.add(path, "unknown_write", "error",
                         f"read as output of compaction txn {parsed.visibility_txn_id}, "
                         "which the metastore has no commit of")
            return
        if self.relative(name) in self.facts.committed_dirs:
            return
        low, high = (parsed.min_write_id, parsed.max_write_id) \
            if isinstance(parsed, ParsedDelta) else (parsed.write_id, parsed.write_id)
        aborted = sorted(w for w in self.facts.aborted_write_ids if low <= w <= high)
        if aborted:
            self.add(path, "aborted_selectable", "error",
                     f"read by the snapshot {write_ids}, but write id {aborted[0]} that made "
                     "it aborted")
        else:
            self.add(path, "unknown_write", "error",
                     f"read by the snapshot {write_ids}, but no committed write recorded it "
                     "(copied in, or a write whose record was lost)")

    def unselected(self, state: AcidState, later: ValidWriteIdList) -> None:
        """ACID directories the snapshot ignores that are neither obsolete nor aborted: fine
        while their write is open; a write id never allocated will be read once it is."""
        known = {*state.obsolete, *state.aborted, *state.deltas,
                 *([state.base] if state.base else [])}
        for entry in afs.list_dir(self.fs, self.directory):
            if not entry.is_dir or entry.name in known or \
                    not is_acid_directory_name(entry.name):
                continue
            parsed = parse_directory(entry.name)
            if parsed.visibility_txn_id:
                continue  # a compaction still running (or aborted and already listed)
            high = parsed.max_write_id if isinstance(parsed, ParsedDelta) else parsed.write_id
            if high > later.high_watermark:
                self.add(afs.join(self.directory, entry.name), "unknown_write", "error",
                         f"write id {high} was never allocated (high watermark "
                         f"{later.high_watermark}): this directory will be read as part of "
                         "whichever write gets that id")

    def obsolete_unrecorded(self, state: AcidState) -> None:
        """Where the record names everything the table holds: obsolete ACID directories no
        committed write or compaction recorded, and files in obsolete recorded directories
        their write did not record. No snapshot selects them, so no read or compaction
        uses them, and the cleaner (which removes only what the record names) leaves them:
        strays an operator removes, named here as the selected ones are."""
        if not self.facts.complete:
            return
        record = self.facts.recorded.partition(self.directory)
        outputs = {o.name for o in record.outputs}
        files: dict[str, set[str]] = defaultdict(set)
        judged: set[str] = set()  # directories whose write recorded its bucket files
        for write in record.writes:
            for path, _ in write.bucket_files or ():
                directory, _, name = path.rpartition("/")
                files[directory.rsplit("/", 1)[-1]].add(name)
            if write.bucket_files is not None:
                judged.update(write.names)
        for name in state.obsolete:
            if not is_acid_directory_name(name):
                continue  # a root entry: ``root_entries`` names it
            path = afs.join(self.directory, name)
            if name in outputs:
                continue
            if self.relative(name) not in self.facts.committed_dirs:
                self.add(path, "unknown_write", "warning",
                         "no committed write or compaction recorded this directory; no "
                         "snapshot reads it (what it would hold is replaced) and the cleaner "
                         "leaves it (copied in by hand?): remove it")
                continue
            if name not in judged:
                continue
            for entry in afs.list_dir(self.fs, path):
                if entry.is_dir or is_hidden(entry.name) or \
                        is_flush_length_file(entry.name) or entry.name in files[name]:
                    continue
                self.add(afs.join(path, entry.name), "foreign_file", "warning",
                         "its write did not record this file; no snapshot reads it (the "
                         "directory is replaced) and it goes when the cleaner removes the "
                         "directory")

    def aborted(self, state: AcidState) -> None:
        for name in state.aborted:
            self.add(afs.join(self.directory, name), "aborted_leftover", "warning",
                     "a directory of an aborted write (no reader selects it)")

    def missing(self, state: AcidState, listed: Listed) -> None:
        record = self.facts.recorded.partition(self.directory)
        reported: set[str] = set()
        for gap in find_missing(self.facts.recorded.location, state, self.facts.write_ids,
                                record, listed):
            if gap.path in reported:
                continue  # one compacted directory that folded in several writes is gone
            reported.add(gap.path)
            self.add(gap.path, "missing_directory" if gap.directory else "missing_file",
                     "error", gap.message)
        # what a read refused while it listed, and now never opens (it plans from the
        # record): a selected directory the record of its write id or compaction lacks
        named = {f.path for f in self.findings}
        for stray in find_strays(self.facts.recorded.location, state, record):
            if stray.path not in named:
                self.add(stray.path, "unknown_write", "error", stray.message)
        gone, strays = find_file_problems(self.facts.recorded.location, state,
                                          self.facts.write_ids, record, listed)
        for gap in gone:
            self.add(gap.path, "missing_file", "error", gap.message)
        for stray in strays:
            self.add(stray.path, "foreign_file", "error", stray.message)

    # --- files ---------------------------------------------------------------------------------

    def directory_files(self, name: str) -> list[tuple[str, int, int]]:
        """(path, bucket id, size) of a selected directory's bucket files; anything else in
        it is reported (original-named files are read as LOAD DATA rows)."""
        directory = afs.join(self.directory, name)
        out = []
        for entry in afs.list_dir(self.fs, directory):
            path = afs.join(directory, entry.name)
            if is_hidden(entry.name) or (not entry.is_dir and is_flush_length_file(entry.name)):
                continue
            if not entry.is_dir and is_bucket_file(entry.name):
                out.append((path, ParsedBucketFile.parse(entry.name).bucket_id, entry.size))
            elif not entry.is_dir and is_original_file(entry.name):
                self.add(path, "foreign_file", "error", "an original-named file in an ACID "
                         "directory: readers take it for LOAD DATA rows no write recorded")
            else:
                self.add(path, "foreign_file", "warning",
                         "not part of the ACID layout (readers ignore it)")
        return out

    def originals(self, state: AcidState, targets: dict[int, DeleteTargets]) -> None:
        """Synthetic ROW__IDs of original files (spec §9): rows of a logical bucket are
        numbered across its files in path order."""
        offsets: dict[int, int] = defaultdict(int)
        for relative in state.original_files:
            name = relative.rsplit("/", 1)[-1]
            if not is_original_file(name):
                continue  # reported as foreign; opening it says nothing more
            bucket = ParsedOriginalFile.parse(name).bucket_id
            path = afs.join(self.directory, relative)
            try:
                rows = OrcFile(self.fs, path).nrows
            except (CorruptFileError, MissingDataError) as exc:  # gone since listed
                self.add(path, "unreadable_file", "error", str(exc))
                continue
            if bucket in targets and rows:
                targets[bucket].mark_range((0, BucketCodec.V1.encode(bucket, 0)),
                                           offsets[bucket], offsets[bucket] + rows - 1)
            offsets[bucket] += rows

    def events(self, state: AcidState, listed: Listed) -> None:
        """File checks of everything the snapshot reads, then duplicates and dangling
        deletes across files. Delete files are read first: their keys are what the insert
        files are matched against, in one pass over the inserts."""
        write_ids = self.facts.write_ids
        targets: dict[int, DeleteTargets] = defaultdict(DeleteTargets)
        ranges: dict[tuple[int, int], list[tuple[int, int, str]]] = defaultdict(list)
        deletes = state.delete_deltas
        inserts = [*([state.base] if state.base else []),
                   *(d for d in state.deltas if d not in deletes)]
        blind: set[int] = set()  # buckets with an insert file that cannot be read
        for name in [*deletes, *inserts]:
            files = self.directory_files(name)
            listed[name] = tuple((path.rsplit("/", 1)[-1], size)
                                 for path, _, size in files if size > 0)
            span = self._span(name, state)
            for path, bucket, size in files:
                if size == 0:
                    self.add(path, "empty_file", "error", "a 0-byte bucket file in a "
                             "directory the snapshot reads (readers would skip its rows)")
                    blind.add(bucket)
                    continue
                report = scan_file(self.fs, path, bucket, span, write_ids=write_ids,
                                   targets=None if span.kind == "delete" else targets.get(bucket))
                for check, message in report.problems:
                    self.add(path, check, "error", message)
                    if check == "unreadable_file" and span.kind != "delete":
                        blind.add(bucket)
                if span.kind == "delete":
                    targets[bucket].add(path, report.deletes)
                for group, (first, last) in report.ranges.items():
                    ranges[group].append((first, last, path))
        self.originals(state, targets)
        for spans in ranges.values():
            self._overlaps(spans)
        for bucket, bucket_targets in targets.items():
            if bucket in blind:
                continue  # its rows are unknown: the unreadable file is the finding
            for path, count, key in bucket_targets.dangling():
                self.add(path, "dangling_delete", "error",
                         f"{count} delete event(s) point at no row the snapshot reads, the "
                         f"first at ROW__ID {key}")

    def _span(self, name: str, state: AcidState) -> Span:
        if name == state.base and state.base_info is not None:
            return Span("base", state.base_info.write_id, state.base_info.write_id)
        delta = state.delta_info[name]
        streaming = not delta.delete and delta.min_write_id != delta.max_write_id \
            and delta.visibility_txn_id == 0
        return Span("delete" if delta.delete else "insert", delta.min_write_id,
                    delta.max_write_id, streaming)

    def _overlaps(self, spans: list[tuple[int, int, str]]) -> None:
        """Two files read together that hold ROW__IDs of one (write id, bucket) group in
        overlapping row-id ranges insert some ROW__IDs twice (row ids are dense per group)."""
        spans.sort()
        reach, holder = spans[0][1], spans[0][2]
        for first, last, path in spans[1:]:
            if first <= reach:
                self.add(path, "duplicate_row_id", "error",
                         f"holds row ids {first}..{min(last, reach)} of a (write id, bucket) "
                         f"group that {holder} holds too: both are read")
            if last > reach:
                reach, holder = last, path


def check_partition(fs: pafs.FileSystem, facts: TableFacts, partition: str, directory: str,
                    later: Callable[[], ValidWriteIdList]) -> list[Finding]:
    """Every finding of one partition. ``later`` gives a write-id list taken after the
    listing, so a directory a writer created meanwhile has a known write id."""
    check = _Partition(fs, facts, partition, directory)
    try:
        state = select(list_partition(fs, directory), facts.write_ids, facts.txns)
    except InvalidLayoutError as exc:
        check.add(exc.path or directory, "invalid_layout", "error", str(exc))
        return check.findings
    except AcidStoreError as exc:
        check.add(directory, "invalid_layout", "error", str(exc))
        return check.findings
    check.root_entries(state)
    check.aborted(state)
    check.obsolete_unrecorded(state)
    for name in [*([state.base] if state.base else []), *state.deltas]:
        check.selected_origin(name, facts.write_ids)
    check.unselected(state, later())
    listed: Listed = {}
    check.events(state, listed)
    check.missing(state, listed)
    return check.findings
