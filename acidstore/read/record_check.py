"""Checks of what a snapshot listed against what the metastore recorded (layer L3).

Directory listings alone cannot tell a missing committed directory from one that never
existed: a removed ``delete_delta`` brings deleted rows back, a removed delta or bucket file
drops rows, and the reader would answer without a word. ``read.recorded`` loads the record
of the writes and compactions a snapshot reads; these checks compare it with the listing:

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

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import pyarrow.fs as pafs

from acidstore.config import WRITE_NAMES_KEPT
from acidstore.errors import MissingDataError, NotEnoughHistoryError, StrayPathError
from acidstore.format.directory import AcidState
from acidstore.format.layout import ParsedBase, ParsedDelta, is_bucket_file, parse_directory
from acidstore.format.writeids import ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.read.recorded import PartitionRecord, Recorded, RecordedOutput
from acidstore.read.splits import Split

__all__ = ["Missing", "Stray", "check_listed", "check_recorded", "find_file_problems",
           "find_missing", "find_original_problems", "find_strays", "with_recorded_rows"]


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
    selected = set(state.selected())
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


@lru_cache(maxsize=WRITE_NAMES_KEPT)
def _files_by_directory(bucket_files: tuple[tuple[str, int], ...]
                        ) -> dict[str, tuple[tuple[str, int], ...]]:
    """A write's recorded bucket files as {directory name: ((file name, bytes), ...)} in
    name order, as a listing has them: worked out once per process per write, as a write's
    ``names`` are (every statement checks the same writes), and compared with a listing as it is."""
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
    selected = set(state.selected())
    sound: set[str] = set()  # directories whose listing is what their one record names
    wanted: dict[str, _Expected] = {}
    for write in record.writes:
        bucket_files = write.bucket_files
        if bucket_files is None:
            continue
        names = write.names
        if not write.follows_layout or not write_ids.is_write_id_valid(write.write_id):
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
    for name, parsed in state.selected_parsed():
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
    lost, foreign = find_original_problems(state, record)
    for missing in [*gone, *lost]:
        raise MissingDataError(missing.message, path=missing.path)
    for stray in [*strays, *foreign]:
        raise StrayPathError(stray.message, path=stray.path)


def find_original_problems(state: AcidState, record: PartitionRecord
                           ) -> tuple[list[Missing], list[Stray]]:
    """The original files ``state`` reads (a partition without a base takes every file
    outside the ACID directories for pre-ACID rows) against those adoption recorded, where
    the table records them all: a recorded one gone, emptied or of other bytes
    (``Missing``: its rows would silently be absent), and one no adoption placed
    (``Stray``: a data file copied into the partition would be read as rows no write
    made). Tables that may hold unrecorded originals (created before metastore schema 12)
    and partitions with a base (which holds the originals' rows) are not judged."""
    expected = record.originals
    if expected is None or state.base is not None:
        return [], []
    listed = state.original_file_sizes
    missing: list[Missing] = []
    for name, size in sorted(expected.items()):
        path = afs.join(record.path, name)
        if name not in listed:
            missing.append(Missing(path, f"adopt_table placed original file {name} here, "
                                   "which this snapshot must read, but it is not there "
                                   "(removed, renamed or emptied by hand?)", False))
        elif listed[name] != size:
            missing.append(Missing(path, f"adopt_table placed original file {name} of {size} "
                                   f"bytes here, but it holds {listed[name]} (replaced or "
                                   "changed by hand?)", False))
    strays = [Stray(afs.join(record.path, name),
                    "a file outside the ACID directories that no adoption placed, yet with "
                    "no base here it would be read as pre-ACID rows of the table (copied in "
                    "by hand?)")
              for name in state.original_files if name not in expected]
    return missing, strays


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
    compactor of a partition it cannot plan from the record, ``read.record_plan``: what it
    folds into a base must not silently lack a committed write, nor take in a directory no
    write made)."""
    record = recorded.partition(directory, state)
    if not record:
        return
    listed = {name: tuple(sorted((e.name, e.size)
                                 for e in afs.list_dir(fs, afs.join(directory, name))
                                 if not e.is_dir and is_bucket_file(e.name) and e.size > 0))
              for name in state.selected()}
    check_recorded(recorded.location, state, write_ids, record, listed)
