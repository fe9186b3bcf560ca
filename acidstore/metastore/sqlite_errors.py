"""SQLite's errors as acidstore's: a failing disk under a SQLite file (the metastore's or
its lease file's) is a ``StorageError``, anything else a ``MetastoreError``."""

from __future__ import annotations

import errno
import sqlite3

from acidstore.errors import (
    AcidStoreError,
    MetastoreError,
    StorageError,
    StorageFullError,
    StoragePermissionError,
)

__all__ = ["sqlite_failure"]

#: SQLite's primary result codes of a failing disk (the file's storage, not the database),
#: with the errno each amounts to
_STORAGE_CODES = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_IOERR": errno.EIO,
                  "SQLITE_CANTOPEN": errno.EIO, "SQLITE_PERM": errno.EACCES,
                  "SQLITE_READONLY": errno.EROFS}


def sqlite_failure(exc: sqlite3.Error, path: str, what: str) -> AcidStoreError:
    """A SQLite error as the typed error it means: a ``StorageError`` when the disk under
    the metastore file failed (full, unreadable, refused), else a ``MetastoreError``. SQLite
    rolls a failed transaction back, so either way nothing of the call was changed."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    code = _STORAGE_CODES.get("_".join(name.split("_")[:2]))
    if code is None:
        return MetastoreError(f"{what}: {exc}")
    kind = {errno.ENOSPC: StorageFullError, errno.EACCES: StoragePermissionError,
            errno.EROFS: StoragePermissionError}.get(code, StorageError)
    return kind(f"{what}: {exc} ({name}); nothing of the call was changed", path=path,
                errno=code)
