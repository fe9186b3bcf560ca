"""What the metastore says a snapshot must find on disk (layer L3).

Directory listings alone cannot tell a missing committed directory from one that never
existed: a removed ``delete_delta`` brings deleted rows back, a removed delta or bucket file
drops rows, and the reader would answer without a word. The metastore records, for every
committed write, the directories it wrote and how many bucket files. A reader compares them
with what it listed: a recorded directory of a write id the snapshot sees, which no selected
base or compacted directory has replaced, must be selected and hold at least as many bucket
non-empty files as the write made; otherwise the read stops with ``MissingDataError`` naming it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from acidstore import fs as afs
from acidstore.directory import AcidState
from acidstore.errors import MissingDataError
from acidstore.layout import ParsedDelta, is_acid_directory_name, is_bucket_file
from acidstore.writeids import ValidWriteIdList

__all__ = ["Missing", "RecordedWrite", "RecordedWrites", "check_listed", "check_recorded",
           "find_missing"]


@dataclass(frozen=True)
class RecordedWrite:
    """One committed write of a partition: its write id, directories (relative to the
    table), and the bucket files it wrote across them."""

    write_id: int
    directories: tuple[str, ...]
    files: int


@dataclass(frozen=True)
class RecordedWrites:
    """A table's committed writes by partition (relative to ``location``, "" unpartitioned)."""

    location: str
    by_partition: Mapping[str, Sequence[RecordedWrite]]

    def writes(self, partition_path: str) -> Sequence[RecordedWrite]:
        return self.by_partition.get(afs.relative(self.location, partition_path), ())


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


@dataclass(frozen=True)
class Missing:
    """One committed directory (``directory`` True) or some of its bucket files that a
    snapshot must read but did not find; ``path`` is absolute."""

    path: str
    message: str
    directory: bool


def find_missing(location: str, state: AcidState, write_ids: ValidWriteIdList,
                 writes: Sequence[RecordedWrite], listed: Mapping[str, int]
                 ) -> Iterator[Missing]:
    """Every committed directory (or bucket file) of ``writes`` (one partition's) that
    ``state`` should read but did not find. ``listed``: bucket files per selected directory
    name, as the caller counted them."""
    selected = set(_selected(state))
    for write in writes:
        if not write_ids.is_write_id_valid(write.write_id):
            continue
        names = [d.rsplit("/", 1)[-1] for d in write.directories]
        if not all(is_acid_directory_name(n) for n in names):
            continue  # not a layout this check knows; never guess
        counted = 0
        for relative, name in zip(write.directories, names, strict=True):
            if name in selected:
                counted += listed.get(name, 0)
                continue
            if _replaced(name, write.write_id, state):
                break  # read from the base or compacted directory that replaced it
            yield Missing(afs.join(location, relative),
                          f"write id {write.write_id} committed {relative}, which this "
                          "snapshot must read, but it is not there (removed or moved by hand?)",
                          True)
            break
        else:
            if counted < write.files:
                yield Missing(afs.join(location, write.directories[0]),
                              f"write id {write.write_id} committed {write.files} bucket "
                              f"file(s) in {', '.join(write.directories)} but {counted} are "
                              "there (not empty)", False)


def check_recorded(location: str, state: AcidState,
                   write_ids: ValidWriteIdList, writes: Sequence[RecordedWrite],
                   listed: Mapping[str, int]) -> None:
    """Raise MissingDataError for the first committed directory (or bucket file) of
    ``writes`` (one partition's) that ``state`` should read but did not find. ``listed``:
    bucket files per selected directory name, as the planner listed them."""
    for missing in find_missing(location, state, write_ids, writes, listed):
        raise MissingDataError(missing.message, path=missing.path)


def check_listed(fs: pafs.FileSystem, directory: str, state: AcidState,
                 write_ids: ValidWriteIdList, recorded: RecordedWrites) -> None:
    """``check_recorded`` for a caller that has not listed the selected directories (the
    compactor: what it folds into a base must not silently lack a committed write)."""
    writes = recorded.writes(directory)
    if not writes:
        return
    listed = {name: sum(1 for e in afs.list_dir(fs, afs.join(directory, name))
                        if not e.is_dir and is_bucket_file(e.name) and e.size > 0)
              for name in _selected(state)}
    check_recorded(recorded.location, state, write_ids, writes, listed)
