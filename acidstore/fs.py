"""Filesystem resolution (layer L1): every byte acidstore reads or writes goes through pyarrow.fs.

A path is resolved once, at the edge, into a ``(FileSystem, path)`` pair; everything below
works on that pair. This keeps local disks, HDFS, S3 and fsspec filesystems interchangeable
and keeps global state out of the library.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

__all__ = [
    "Entry",
    "join",
    "list_dir",
    "list_files_recursive",
    "read_bytes",
    "relative",
    "resolve",
    "write_bytes",
]


@dataclass(frozen=True)
class Entry:
    """One child of a directory listing: its name, whether it is a directory, and its size."""

    name: str
    is_dir: bool
    size: int


def resolve(path: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None,
            ) -> tuple[pafs.FileSystem, str]:
    """Turn a user path (or URI) into a filesystem and a path on it, normalised without a
    trailing slash. A local relative path becomes absolute so that names stay stable."""
    text = os.fspath(path)
    if filesystem is not None:
        return filesystem, text.rstrip("/") or "/"
    if "://" not in text:
        text = os.path.abspath(text)
        return pafs.LocalFileSystem(), text.rstrip("/") or "/"
    fs, inner = pafs.FileSystem.from_uri(text)
    return fs, inner.rstrip("/") or "/"


def join(base: str, *parts: str) -> str:
    """Join path segments with '/', the separator of every pyarrow filesystem."""
    out = base.rstrip("/")
    for part in parts:
        out = f"{out}/{part.strip('/')}" if out else part.strip("/")
    return out


def relative(base: str, path: str) -> str:
    """``path`` relative to the directory ``base`` ("" for ``base`` itself or a path outside
    it: a table's partition directory relative to the table)."""
    prefix = base.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else ""


def list_dir(fs: pafs.FileSystem, path: str) -> list[Entry]:
    """Immediate children of ``path``, sorted by name (an empty list if it does not exist)."""
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
    out = [
        Entry(info.base_name, info.type == pafs.FileType.Directory,
              info.size if info.type == pafs.FileType.File and info.size is not None else 0)
        for info in infos
    ]
    out.sort(key=lambda e: e.name)
    return out


def list_files_recursive(fs: pafs.FileSystem, path: str) -> list[tuple[str, int]]:
    """All files below ``path`` as (path relative to ``path``, size), in path order."""
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
    prefix = path.rstrip("/") + "/"
    out = [
        (info.path[len(prefix):] if info.path.startswith(prefix) else info.path,
         info.size or 0)
        for info in infos
        if info.type == pafs.FileType.File
    ]
    out.sort()
    return out


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    """The whole content of a (small) file."""
    with fs.open_input_stream(path) as stream:
        data: bytes = stream.read()
    return data


#: filesystems whose ``move`` is an atomic rename within a directory (object stores copy)
_ATOMIC_RENAME = frozenset({"local", "hdfs"})


def _renames_atomically(fs: pafs.FileSystem) -> bool:
    while isinstance(fs, pafs.SubTreeFileSystem):
        fs = fs.base_fs
    return fs.type_name in _ATOMIC_RENAME


def write_bytes(fs: pafs.FileSystem, path: str, data: bytes | pa.Buffer) -> None:
    """Create or replace a file with ``data``, all at once: a reader, or a second writer of
    the same bytes, never sees it truncated or half-written.

    Two Spark attempts of one task (speculation, or a retry while the first attempt's executor
    still runs) write identical bytes to the same path; writing in place, the loser's
    truncate after the winner's last byte would leave an empty file in a committed directory.
    So on filesystems with an atomic rename the bytes go to a hidden sibling (readers skip
    names starting with '.') that is renamed over ``path``; an object store's single PUT is
    atomic by itself. A crashed writer may leave the hidden sibling behind, never ``path``
    partly written.
    """
    if not _renames_atomically(fs):
        with fs.open_output_stream(path) as stream:
            stream.write(data)
        return
    head, _, name = path.rpartition("/")
    temporary = join(head, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        with fs.open_output_stream(temporary) as stream:
            stream.write(data)
        fs.move(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            fs.delete_file(temporary)
        raise
