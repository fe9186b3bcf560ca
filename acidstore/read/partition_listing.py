"""A table's partitions found by listing its directory tree (layer L3).

Tables the metastore does not own (a Hive directory read with ``read_directory``) and
warehouse tables whose record is incomplete find their partitions here; ``fsck`` walks the
same tree to report what lies where no partition belongs. A warehouse table whose record is
complete finds them in the metastore instead (``read.record_plan``), without a listing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow.fs as pafs

from acidstore.errors import StrayPathError
from acidstore.format.layout import is_acid_directory_name, is_hidden
from acidstore.format.partitions import parse_partition_path
from acidstore.io import fs as afs

__all__ = ["PartitionDir", "discover_partitions", "table_partitions"]


@dataclass(frozen=True)
class PartitionDir:
    """A partition directory and its (column, value) pairs; () for an unpartitioned table."""

    path: str
    values: tuple[tuple[str, str | None], ...] = ()


def discover_partitions(fs: pafs.FileSystem, root: str) -> list[PartitionDir]:
    """Partitions under ``root``: the root itself when it holds ACID directories or files,
    otherwise every ``col=value`` directory below it (recursively), in path order."""
    entries = [e for e in afs.list_dir(fs, root) if not is_hidden(e.name)]
    holds_data = any((e.is_dir and is_acid_directory_name(e.name)) or not e.is_dir
                     for e in entries)
    partition_dirs = [e for e in entries if e.is_dir and "=" in e.name]
    if holds_data or not partition_dirs:
        return [PartitionDir(root)]
    found: list[PartitionDir] = []
    for entry in partition_dirs:
        pair = tuple(parse_partition_path(entry.name))
        for child in discover_partitions(fs, afs.join(root, entry.name)):
            found.append(PartitionDir(child.path, pair + child.values))
    return found


def table_partitions(fs: pafs.FileSystem, root: str, columns: Sequence[str], *,
                     strays: list[StrayPathError] | None = None,
                     recorded: Iterable[str] = ()) -> list[PartitionDir]:
    """The partitions of a table partitioned by ``columns`` (in path order): exactly one
    ``column=value`` level per column, in order. Anything else where a partition directory
    belongs (an ACID directory or a data file above the last level, a directory of another
    column) raises StrayPathError naming it; hidden names (``_x``, ``.x``) are skipped.
    With ``strays`` (fsck, which reports every problem rather than stopping at the first)
    each such error is appended there instead and the walk goes on.

    ``recorded``: the partitions (relative paths) the metastore says commits wrote, asked
    for *before* this listing. Those the listing lacks are returned too: their directory is
    gone, and a snapshot planned over it finds nothing where its record says committed
    directories are, so the read stops with ``MissingDataError`` instead of answering
    without the partition's rows (a listing alone cannot tell a removed partition from
    one that never existed)."""
    if not columns:
        return [PartitionDir(root)]
    found = list(_partition_tree(fs, root, list(columns), (), strays))
    listed = {p.path for p in found}
    for relative in recorded:
        path = afs.join(root, relative)
        if path not in listed:
            found.append(PartitionDir(path, tuple(parse_partition_path(relative))))
    if len(found) > len(listed):
        found.sort(key=lambda p: p.path.split("/"))  # the listing's (depth-first) order
    return found


def _partition_tree(fs: pafs.FileSystem, path: str, columns: list[str],
                    values: tuple[tuple[str, str | None], ...],
                    strays: list[StrayPathError] | None) -> Iterator[PartitionDir]:
    if not columns:
        yield PartitionDir(path, values)
        return
    for entry in afs.list_dir(fs, path):
        if is_hidden(entry.name):
            continue
        where = afs.join(path, entry.name)
        pairs = parse_partition_path(entry.name) if entry.is_dir and "=" in entry.name \
            else []
        if len(pairs) != 1 or pairs[0][0].lower() != columns[0].lower():
            error = StrayPathError(
                f"expected only {columns[0]}=<value> directories here (the table is "
                "partitioned by " + ", ".join(columns) + "); move or remove this "
                f"{'directory' if entry.is_dir else 'file'}", path=where)
            if strays is None:
                raise error
            strays.append(error)
            continue
        yield from _partition_tree(fs, where, columns[1:], (*values, pairs[0]), strays)
