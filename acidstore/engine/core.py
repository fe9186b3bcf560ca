"""The warehouse as the engine sees it: a root of files, a filesystem, a metastore.

``WarehouseCore`` is what every engine-side piece (transactions, table handles, Spark,
compaction, fsck) needs of a warehouse and nothing more; the public ``acidstore.Warehouse``
wraps one and adds the user's methods. The public objects reach engine code through
``core_of``, so nothing below the API imports it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import pyarrow.fs as pafs

from acidstore.errors import TableNotFoundError
from acidstore.io import fs as afs
from acidstore.metastore import Metastore, TableInfo
from acidstore.metastore.validate import is_absolute_location, split_table_name

__all__ = ["HasCore", "WarehouseCore", "core_of"]


class WarehouseCore:
    """A warehouse's root (a path on ``filesystem``), its metastore and the heartbeat
    interval of the transactions opened on it."""

    def __init__(self, location: str, filesystem: pafs.FileSystem, metastore: Metastore, *,
                 heartbeat_interval: float) -> None:
        self.location = location
        self.filesystem = filesystem
        self.metastore = metastore
        self.heartbeat_interval = heartbeat_interval

    def table_info(self, name: str) -> TableInfo:
        """The catalog entry of ``name``, its location resolved against this warehouse."""
        return self.resolved(self.metastore.get_table(".".join(split_table_name(name))))

    def resolved(self, info: TableInfo) -> TableInfo:
        """The metastore keeps a table's location relative to the warehouse root
        (``<db>.db/<table>``), so a warehouse copied or moved with its metastore reads and
        writes its own files, never the original's; an absolute location (a table placed
        elsewhere through the metastore directly) is used as it is."""
        if is_absolute_location(info.location):
            return info
        return replace(info, location=afs.join(self.location, info.location))

    def location_of(self, table: str) -> str | None:
        """Where ``table``'s files are. For a table that no longer exists (dropped while a
        transaction wrote it), where its name put them, unless another table lives there
        now: None then, since a table renamed away from that name keeps its directory, and
        an aborted write must never remove files from another table's."""
        try:
            return self.table_info(table).location
        except TableNotFoundError:
            database, name = split_table_name(table)
            relative = f"{database}.db/{name}"
            if self.metastore.table_at(relative) is not None:
                return None
            return afs.join(self.location, relative)


class HasCore(Protocol):
    """A public object over a warehouse (``acidstore.Warehouse``)."""

    @property
    def _core(self) -> WarehouseCore: ...


def core_of(warehouse: WarehouseCore | HasCore) -> WarehouseCore:
    """The engine's warehouse behind a public ``Warehouse`` (or the core itself)."""
    return warehouse if isinstance(warehouse, WarehouseCore) else warehouse._core
