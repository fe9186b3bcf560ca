"""Which directories of a partition a snapshot reads (Hive's ``getAcidState``, spec section 7).

Compaction and cleaning run concurrently with readers, so a partition routinely holds several
generations of the same data: an old base beside its replacement, per-statement deltas beside
the minor-compacted delta covering them, directories of aborted writes, and compactor output
whose transaction has not committed yet. Every reader and the compactor must pick exactly the
same minimal covering set that Hive picks, or rows are lost or read twice.

The decision is a pure function, :func:`select`, from a :class:`PartitionListing` plus the
snapshot to an :class:`AcidState`. :func:`list_partition` is the only I/O: it lists the
partition through ``pyarrow.fs`` and reads the ``_metadata_acid`` markers that tell a compacted
base (history erased) from an INSERT OVERWRITE base (history kept). :func:`acid_state` runs both.
All names in the result are relative to the partition directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow.fs as pafs

from acidstore.errors import InvalidLayoutError, NotEnoughHistoryError
from acidstore.format.layout import (
    BASE_PREFIX,
    DELETE_DELTA_PREFIX,
    DELTA_PREFIX,
    METADATA_FILE,
    ParsedBase,
    ParsedDelta,
    is_hidden,
    parse_directory,
    parse_metadata_acid,
)
from acidstore.format.writeids import RangeResponse, ValidTxnList, ValidWriteIdList
from acidstore.io.fs import Entry, join, list_dir, list_files_recursive, read_bytes, resolve

__all__ = ["AcidState", "PartitionListing", "acid_state", "covered", "extend", "list_partition",
           "select"]

#: The base the first compaction after a non-ACID -> ACID conversion writes (Long.MIN_VALUE):
#: no write can be open below it, so it is always usable.
_CONVERSION_BASE_WRITE_ID = -(2**63)
#: Hive prints "no open write id" as Long.MAX_VALUE and treats it as unset.
_LONG_MAX = 2**63 - 1

_T = TypeVar("_T")


@dataclass(frozen=True)
class PartitionListing:
    """What :func:`select` needs to know about a partition, gathered without interpretation.

    ``entries`` are the partition's immediate children. ``compacted_bases`` names the base
    directories whose ``_metadata_acid`` says ``compacted``. ``original_dir_files`` maps each
    non-ACID child directory to its files, recursively, as (path relative to that directory,
    size) in path order. ``path`` is only used to name the partition in error messages.
    """

    entries: Sequence[Entry]
    compacted_bases: frozenset[str] = frozenset()
    original_dir_files: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    path: str = ""


@dataclass(frozen=True)
class AcidState:
    """The directories a snapshot reads, and what the Cleaner may remove.

    ``deltas`` holds every current directory in read order (spec 7.5), delete deltas included;
    ``delete_deltas`` is their ``delete_delta_`` subset in the same order. ``original_files``
    (pre-ACID data) are in path order, which fixes their synthetic row ids; they are empty once
    a base exists, because the base already holds their rows. ``obsolete`` and ``aborted`` are
    sorted; ``has_uncompacted_aborts`` tells the Cleaner that some current delta still holds
    aborted writes, so their metadata must be kept.
    """

    base: str | None
    deltas: list[str]
    delete_deltas: list[str]
    obsolete: list[str]
    aborted: list[str]
    aborted_write_ids: frozenset[int]
    original_files: list[str]
    original_file_sizes: dict[str, int]
    has_uncompacted_aborts: bool
    base_info: ParsedBase | None
    delta_info: dict[str, ParsedDelta]
    base_is_compacted: bool
    #: the oldest committed base too new for this snapshot (a time-travel read before an
    #: INSERT OVERWRITE): what it replaced may have been cleaned, see ``read.record_check``
    newer_base: tuple[str, int] | None = None

    def selected(self) -> list[str]:
        """The directories this snapshot reads: its base, if any, and its deltas."""
        return [*([self.base] if self.base else []), *self.deltas]

    def insert_deltas(self) -> list[str]:
        """The current deltas that are not delete deltas, in read order (what an operator
        counts apart from the delete deltas)."""
        deletes = set(self.delete_deltas)
        return [name for name in self.deltas if name not in deletes]

    def selected_parsed(self) -> list[tuple[str, ParsedBase | ParsedDelta]]:
        """``selected`` with each name as parsed when the state was decided (the checks of
        every statement read them, and a second parse each time would be their main cost)."""
        out: list[tuple[str, ParsedBase | ParsedDelta]] = []
        if self.base:
            out.append((self.base, self.base_info or parse_directory(self.base)))
        out.extend((name, self.delta_info.get(name) or parse_directory(name))
                   for name in self.deltas)
        return out


# --- the pure decision ------------------------------------------------------------------------


@dataclass
class _Walk:
    """Mutable state of one pass over the children (Hive accumulates the same lists)."""

    write_ids: ValidWriteIdList
    txns: ValidTxnList | None
    base: tuple[str, ParsedBase, bool] | None = None          # name, parsed, compacted
    oldest_base: tuple[str, ParsedBase, bool] | None = None
    newer_base: tuple[str, int] | None = None
    candidates: list[tuple[str, ParsedDelta]] = field(default_factory=list)
    obsolete: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    aborted_write_ids: set[int] = field(default_factory=set)
    has_uncompacted_aborts: bool = False

    def usable(self, name: str, visibility_txn_id: int) -> bool:
        """The visibility gate: compactor output (``_v<T>``) exists before its transaction
        commits, and must stay invisible until it has; if T aborted, the directory is garbage
        to clean. Txn 0 (no suffix) is always visible; no txn list means all committed."""
        if visibility_txn_id == 0 or self.txns is None:
            return True
        if self.txns.is_txn_valid(visibility_txn_id):
            return True
        if self.txns.is_txn_aborted(visibility_txn_id):
            self.aborted.append(name)
        return False

    def is_valid_base(self, base: ParsedBase, compacted: bool) -> bool:
        """A compacted base erased history, so it is unusable if anything inside it is still
        open for this reader; an INSERT OVERWRITE base behaves like a delta of write N.

        Hive's ``AcidUtils.isValidBase`` first accepts any base with ``N <= minOpenWriteId``
        (inclusive), and so does this for compacted bases. For an INSERT OVERWRITE base that
        would include the base of an overwrite still running as write ``minOpenWriteId``:
        Hive never meets it, because the overwrite holds an exclusive lock that keeps readers
        out, but acidstore's writers are optimistic, so readers saw an uncommitted (possibly
        later aborted) overwrite. Such a base must be strictly below the minimum open id.
        """
        if base.write_id == _CONVERSION_BASE_WRITE_ID:
            return True
        min_open = self.write_ids.min_open_write_id
        if min_open is not None and min_open != _LONG_MAX and (
                base.write_id < min_open or (compacted and base.write_id == min_open)):
            return True
        if compacted:
            return self.write_ids.is_valid_base(base.write_id)
        return self.write_ids.is_write_id_valid(base.write_id)

    def add_base(self, name: str, base: ParsedBase, compacted: bool) -> None:
        if not self.usable(name, base.visibility_txn_id):
            return
        if self.oldest_base is None or self.oldest_base[1].write_id > base.write_id:
            self.oldest_base = (name, base, compacted)
        if not compacted and self.write_ids.is_write_id_aborted(base.write_id):
            self.aborted.append(name)            # an aborted INSERT OVERWRITE
            self.aborted_write_ids.add(base.write_id)
            return
        chosen = self.base
        # A committed compactor base beats an INSERT OVERWRITE base of the same write id
        # (the visibility gate above already proved its transaction committed).
        if (chosen is None or chosen[1].write_id < base.write_id
                or (chosen[1].write_id == base.write_id and compacted)):
            if self.is_valid_base(base, compacted):
                if chosen is not None:
                    self.obsolete.append(chosen[0])
                self.base = (name, base, compacted)
            elif self.newer_base is None or self.newer_base[1] > base.write_id:
                # an unusable newer base is neither chosen nor obsolete
                self.newer_base = (name, base.write_id)
        else:
            self.obsolete.append(name)

    def add_delta(self, name: str, delta: ParsedDelta) -> None:
        if not self.usable(name, delta.visibility_txn_id):
            return
        low, high = delta.min_write_id, delta.max_write_id
        aborted = self.write_ids.is_write_id_range_aborted(low, high)
        if aborted is RangeResponse.ALL:
            self.aborted.append(name)
            self.aborted_write_ids.update(range(low, high + 1))
            return
        if aborted is RangeResponse.SOME:
            self.has_uncompacted_aborts = True
        if self.write_ids.is_write_id_range_valid(low, high) is not RangeResponse.NONE:
            self.candidates.append((name, delta))
        # else: nothing committed in it for this snapshot; neither current nor obsolete

    def best_working_deltas(self, start: int | None = None) -> list[tuple[str, ParsedDelta]]:
        """Spec 7.5: walk the candidates widest-first and keep the ones that add write ids
        beyond what is already covered, plus the sibling statements of a kept multi-statement
        write and the delete-delta twin of a kept range (Hive's code also requires the same
        visibility txn, which the spec leaves out); everything else is shadowed.

        ``start``: the write id already covered (``extend``: a walk resumed after the
        deltas an earlier selection kept); None: the base's, or 0."""
        ordered = sorted(self.candidates, key=lambda item: (item[1].sort_key, item[0]))
        kept: list[tuple[str, ParsedDelta]] = []
        current = start if start is not None else \
            0 if self.base is None else self.base[1].write_id
        last_statement = -1
        prev: ParsedDelta | None = None
        for name, delta in ordered:
            if delta.max_write_id > current:
                valid = self.write_ids.is_write_id_range_valid(current + 1, delta.max_write_id)
                if valid is not RangeResponse.NONE:
                    kept.append((name, delta))
                    current = delta.max_write_id
                    last_statement = delta.statement_id
                    prev = delta
                continue
            # another statement of the multi-statement write id just kept
            sibling = delta.max_write_id == current and last_statement >= 0
            # the delta/delete_delta twin of the range just kept (same min, max, statement and,
            # as in Hive 4, visibility txn: a streaming delta_x_y and the compactor's
            # delta_x_y_v<T> copy of it are not twins, and reading both doubled its rows)
            twin = prev is not None and (delta.min_write_id, delta.max_write_id,
                                         delta.statement_id, delta.visibility_txn_id) == (
                prev.min_write_id, prev.max_write_id, prev.statement_id,
                prev.visibility_txn_id)
            if sibling or twin:
                kept.append((name, delta))
                prev = delta
            else:
                self.obsolete.append(name)
        return kept


def select(listing: PartitionListing, write_ids: ValidWriteIdList,
           txns: ValidTxnList | None, *, ignore_empty_files: bool = False) -> AcidState:
    """Choose base, deltas and originals for ``write_ids`` (spec 7.1-7.6); no I/O.

    ``txns`` is needed only for ``_v<T>`` suffixes; ``None`` treats every visibility txn as
    committed. ``ignore_empty_files`` drops zero-length original files, as the compactor does.
    Raises InvalidLayoutError for an unparsable base/delta name and NotEnoughHistoryError when
    only compacted bases that hide open write ids are available.
    """
    walk = _Walk(write_ids, txns)
    root_files: list[tuple[str, int]] = []
    original_dirs: list[str] = []
    for entry in sorted(listing.entries, key=lambda e: e.name):
        name = entry.name
        if is_hidden(name):
            continue
        if not entry.is_dir:
            if not (ignore_empty_files and entry.size == 0):
                root_files.append((name, entry.size))
        elif name.startswith(BASE_PREFIX):
            base = _parse(ParsedBase.parse, name, listing.path)
            compacted = base.visibility_txn_id > 0 or name in listing.compacted_bases
            walk.add_base(name, base, compacted)
        elif name.startswith((DELTA_PREFIX, DELETE_DELTA_PREFIX)):
            walk.add_delta(name, _parse(ParsedDelta.parse, name, listing.path))
        else:
            original_dirs.append(name)

    originals: list[tuple[str, int]] = []
    if walk.base is not None:
        # the base already holds the original rows: the originals are only left for cleaning
        walk.obsolete.extend(name for name, _ in root_files)
        walk.obsolete.extend(original_dirs)
    else:
        originals = root_files + _original_dir_files(listing, original_dirs, ignore_empty_files)

    kept = walk.best_working_deltas()

    oldest = walk.oldest_base
    if oldest is not None and walk.base is None and oldest[2]:
        exceptions = write_ids.exceptions
        first = str(exceptions[0]) if exceptions else "x"
        where = join(listing.path, oldest[0]) if listing.path else oldest[0]
        raise NotEnoughHistoryError(
            f"cannot read {listing.path or 'the directory'} as of this snapshot (write ids up "
            f"to {write_ids.high_watermark}): a compaction has folded the writes it needs into "
            f"{oldest[0]} and the cleaner removed what that replaced, so this version is gone. "
            "Read a later version, or keep more history with a longer cleaner retention. "
            f"Hive: Not enough history available for ({write_ids.high_watermark},{first}).  "
            f"Oldest available base: {where}")

    originals.sort()
    deltas = [name for name, _ in kept]
    chosen = walk.base
    return AcidState(
        base=None if chosen is None else chosen[0],
        deltas=deltas,
        delete_deltas=[name for name in deltas if name.startswith(DELETE_DELTA_PREFIX)],
        obsolete=sorted(walk.obsolete),
        aborted=sorted(walk.aborted),
        aborted_write_ids=frozenset(walk.aborted_write_ids),
        original_files=[path for path, _ in originals],
        original_file_sizes=dict(originals),
        has_uncompacted_aborts=walk.has_uncompacted_aborts,
        base_info=None if chosen is None else chosen[1],
        delta_info=dict(kept),
        base_is_compacted=chosen is not None and chosen[2],
        newer_base=walk.newer_base,
    )


def covered(state: AcidState) -> int:
    """The write id up to which ``state``'s walk over its deltas ended covered (its base's,
    or 0, then each delta kept for its range): where ``extend`` resumes it."""
    start = 0 if state.base_info is None else state.base_info.write_id
    return max([start, *(state.delta_info[name].max_write_id for name in state.deltas)])


def extend(state: AcidState, start: int, names: Sequence[str], write_ids: ValidWriteIdList,
           txns: ValidTxnList | None, *, path: str = "") -> AcidState:
    """``state`` with the delta directories ``names`` added to its listing, decided by the
    same walk as ``select`` but over the new names only (``start``: ``covered(state)``).

    It is ``select`` of the whole listing only when the caller has proved that nothing
    ``state`` decided can change (``read.plan_memory`` checks it): ``state`` was selected
    under a list that answers as ``write_ids`` does for every range of write ids up to the
    highest any name it saw carries, and every new name is a delta without a visibility
    suffix whose write ids all lie above that. Then the new deltas sort after every
    old candidate (spec 7.5 orders by min write id first), none can be a sibling or twin of
    an old one, and the walk over the old candidates ends where it did. A statement among
    hundreds of deltas then decides one new directory, not all of them again."""
    walk = _Walk(write_ids, txns)
    for name in sorted(names):
        walk.add_delta(name, _parse(ParsedDelta.parse, name, path))
    kept = walk.best_working_deltas(start)
    new = [name for name, _ in kept]
    return AcidState(
        base=state.base,
        deltas=[*state.deltas, *new],
        delete_deltas=[*state.delete_deltas,
                       *(name for name in new if name.startswith(DELETE_DELTA_PREFIX))],
        obsolete=sorted([*state.obsolete, *walk.obsolete]),
        aborted=sorted([*state.aborted, *walk.aborted]),
        aborted_write_ids=state.aborted_write_ids | walk.aborted_write_ids,
        original_files=list(state.original_files),
        original_file_sizes=dict(state.original_file_sizes),
        has_uncompacted_aborts=state.has_uncompacted_aborts or walk.has_uncompacted_aborts,
        base_info=state.base_info,
        delta_info={**state.delta_info, **dict(kept)},
        base_is_compacted=state.base_is_compacted,
        newer_base=state.newer_base,
    )


def _parse(parser: Callable[[str], _T], name: str, partition: str) -> _T:
    """Parse a base/delta name; on failure name the full path, never guess past it."""
    try:
        return parser(name)
    except InvalidLayoutError as exc:
        where = join(partition, name) if partition else name
        raise InvalidLayoutError(f"unparsable ACID directory name ({exc})", path=where) from None


def _original_dir_files(listing: PartitionListing, dirs: list[str],
                        ignore_empty_files: bool) -> list[tuple[str, int]]:
    """Files under non-ACID directories, skipping hidden names at any depth (staging dirs,
    ``_metadata_acid``/``_orc_acid_version`` markers are never data)."""
    out: list[tuple[str, int]] = []
    for directory in dirs:
        for relative, size in listing.original_dir_files.get(directory, []):
            parts = relative.split("/")
            if any(is_hidden(part) for part in parts):
                continue
            if ignore_empty_files and size == 0:
                continue
            out.append((f"{directory}/{relative}", size))
    return out


# --- the I/O edge -----------------------------------------------------------------------------


def list_partition(fs: pafs.FileSystem, path: str) -> PartitionListing:
    """List a partition for :func:`select`: its children, the ``_metadata_acid`` verdict of each
    base without a visibility suffix, and the files below non-ACID directories."""
    entries = list_dir(fs, path)
    compacted: set[str] = set()
    original_dirs: dict[str, list[tuple[str, int]]] = {}
    for entry in entries:
        if not entry.is_dir or is_hidden(entry.name):
            continue
        if entry.name.startswith(BASE_PREFIX):
            if _reads_as_compacted(fs, path, entry.name):
                compacted.add(entry.name)
        elif not entry.name.startswith((DELTA_PREFIX, DELETE_DELTA_PREFIX)):
            original_dirs[entry.name] = list_files_recursive(
                fs, join(path, entry.name))
    return PartitionListing(tuple(entries), frozenset(compacted), original_dirs, path)


def _reads_as_compacted(fs: pafs.FileSystem, path: str, name: str) -> bool:
    """Pre-Hive-4 compactors marked their base with ``_metadata_acid``; a ``_v`` suffix already
    says "compacted", so the marker is read only when it can change the answer."""
    try:
        if ParsedBase.parse(name).visibility_txn_id > 0:
            return False
    except InvalidLayoutError:
        return False                     # select() reports the bad name with its path
    marker = join(path, name, METADATA_FILE)
    if fs.get_file_info(marker).type != pafs.FileType.File:
        return False
    raw = read_bytes(fs, marker)
    try:
        return parse_metadata_acid(raw.decode("utf-8")).is_compacted
    except (InvalidLayoutError, UnicodeDecodeError) as exc:
        raise InvalidLayoutError(f"unreadable {METADATA_FILE} ({exc})", path=marker) from None


def acid_state(partition_dir: str | os.PathLike[str], write_ids: ValidWriteIdList | str | None,
               txns: ValidTxnList | str | None = None, filesystem: pafs.FileSystem | None = None,
               *, ignore_empty_files: bool = False) -> AcidState:
    """List ``partition_dir`` and select what the snapshot reads.

    ``write_ids`` and ``txns`` may be given in Hive's string forms (a string always reads as a
    reader list; pass a ``ValidCompactorWriteIdList`` object for compactor semantics).
    ``txns=None`` treats every visibility txn as committed.
    """
    if not isinstance(write_ids, ValidWriteIdList):
        write_ids = ValidWriteIdList.parse(write_ids)
    if txns is not None and not isinstance(txns, ValidTxnList):
        txns = ValidTxnList.parse(txns)
    fs, path = resolve(partition_dir, filesystem)
    listing = list_partition(fs, path)
    return select(listing, write_ids, txns, ignore_empty_files=ignore_empty_files)
