"""What ``acidstore read`` and ``inspect`` were pointed at: a table (or partition) of a
warehouse, a warehouse root, or a plain Hive directory with no warehouse around it.

Inside a warehouse the metastore knows which transactions are open or aborted, so its
snapshot is the only right one: reading the files alone would show the rows of a transaction
that has not committed. A plain directory (copied from Hive, say) has no metastore, so there
every write id present counts as committed unless ``--write-ids`` / ``--txns`` say otherwise.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

from acidstore.api.connect import connect
from acidstore.api.pairing import DEFAULT_METASTORE_FILE, MARKER_FILE, default_warehouse
from acidstore.api.warehouse import Warehouse
from acidstore.cli.common import (
    handle,
    open_warehouse,
)
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.errors import InvalidInputError, TableNotFoundError
from acidstore.io import fs as afs
from acidstore.read.scan import PartitionDir

__all__ = ["Located", "locate", "table_partition_dirs"]


@dataclass
class Located:
    """A warehouse and, unless the warehouse root itself was named, one of its tables and
    the partition under it ("" for the whole table)."""

    warehouse: Warehouse
    table: TableHandle | None
    partition: str = ""


def _warehouse_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a warehouse's SQLite metastore or
    its marker (a warehouse whose metastore is elsewhere)."""
    for candidate in (path, *path.parents):
        if (candidate / DEFAULT_METASTORE_FILE).is_file() or (
                candidate / MARKER_FILE).is_file():
            return candidate
    return None


def _names_a_table(args: argparse.Namespace) -> bool:
    """Whether TARGET is a table of a warehouse named by ``--warehouse`` or, for a table
    name (``db.table``, not an existing path), by ``ACIDSTORE_WAREHOUSE``."""
    if args.warehouse:
        return True
    looks_like_name = all(c not in args.target for c in ("/", "\\", "://"))
    if looks_like_name and not Path(args.target).exists():
        args.warehouse = default_warehouse()
    return bool(args.warehouse)


def _table_at(wh: Warehouse, path: Path) -> Located:
    for name in wh.tables():
        location = Path(core_of(wh).table_info(name).location).resolve()
        if path == location or location in path.parents:
            return Located(wh, handle(wh, name), path.relative_to(location).as_posix()
                           if path != location else "")
    raise TableNotFoundError(
        f"{path} is inside the warehouse {wh.location} but is no table's directory; its "
        f"tables: {', '.join(wh.tables()) or 'none'} (acidstore tables --warehouse "
        f"{wh.location})")


def locate(args: argparse.Namespace) -> Located | None:
    """The warehouse table ``args`` name (``--warehouse W TABLE``, or a path inside a
    warehouse), or None for a plain directory. A path that does not exist is a
    ``TableNotFoundError``."""
    if _names_a_table(args):
        wh = open_warehouse(args)
        try:
            return Located(wh, handle(wh, args.target), args.partition or "")
        except BaseException:
            wh.close()
            raise
    if args.partition:
        raise InvalidInputError("--partition goes with --warehouse and a table name; for a "
                                "directory, give the partition's directory instead")
    if "://" in args.target:
        return None  # a remote directory: no local metastore to find
    path = Path(args.target).resolve()
    if not path.exists():
        raise TableNotFoundError(f"no table directory at {path}")
    root = _warehouse_root(path)
    if root is None:
        return None
    wh = connect(root, metastore=args.metastore, create=False)
    try:
        return Located(wh, None) if path == root else _table_at(wh, path)
    except BaseException:
        wh.close()
        raise


def table_partition_dirs(table: TableHandle, partition: str) -> list[PartitionDir]:
    """The table's partitions at or below ``partition`` (all of them for "")."""
    fs = table.filesystem
    every = table.partition_dirs()
    if not partition:
        return every
    target = afs.join(table.location, partition.strip("/"))
    chosen = [p for p in every if p.path == target or p.path.startswith(target + "/")]
    if not chosen:
        exists = fs.get_file_info(target).type == pafs.FileType.Directory
        raise InvalidInputError(
            f"table {table.name} has no partition {partition!r}" + (
                "" if exists else f" (no directory {target}; a value is written escaped as "
                "in Hive's directory names, '/' as %2F)"))
    return chosen
