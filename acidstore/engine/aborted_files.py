"""Leftovers of aborted writes: the one rule the cleaner and ``fsck --repair`` share.

A writer registers its directories with the metastore before it writes a file, so the
directories of a transaction the metastore records as *aborted* are garbage: no snapshot
selects them (their write ids are aborted exceptions in every snapshot taken since, and were
open ones in every snapshot taken before). Nothing else is ever removed on this ground: a
transaction that is open, or whose outcome is unknown, keeps its files.
"""

from __future__ import annotations

import pyarrow.fs as pafs

from acidstore.io import fs as afs
from acidstore.metastore import History

__all__ = ["aborted_directories"]


def aborted_directories(fs: pafs.FileSystem, metastore: History, table: str,
                        location: str) -> list[tuple[str, str]]:
    """(partition, absolute path) of every directory that an aborted write of ``table``
    registered and that is still on disk."""
    out: list[tuple[str, str]] = []
    for component in metastore.aborted_components(table):
        for relative in component.directories:
            path = afs.join(location, relative)
            if fs.get_file_info(path).type == pafs.FileType.Directory:
                out.append((component.partition, path))
    return out
