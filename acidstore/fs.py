"""Filesystem resolution (layer L1): every byte acidstore reads or writes goes through pyarrow.fs.

A path is resolved once, at the edge, into a ``(FileSystem, path)`` pair; everything below
works on that pair. This keeps local disks, HDFS, S3 and fsspec filesystems interchangeable
and keeps global state out of the library. One shortcut: ``list_dir`` reads a local
directory (pyarrow's ``LocalFileSystem`` itself) with ``os.scandir``, with the same answers.
"""

from __future__ import annotations

import contextlib
import errno as errnos
import os
import re
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.errors import (
    InvalidInputError,
    StorageError,
    StorageFullError,
    StoragePermissionError,
)

__all__ = [
    "Entry",
    "is_object_store",
    "join",
    "list_dir",
    "list_files_recursive",
    "local_path",
    "location_uri",
    "read_bytes",
    "relative",
    "resolve",
    "is_storage_failure",
    "storage_error",
    "storage_errors",
    "write_bytes",
]


@dataclass(frozen=True)
class Entry:
    """One child of a directory listing: its name, whether it is a directory, and its size."""

    name: str
    is_dir: bool
    size: int


#: filesystems whose ``move`` is an atomic rename within a directory (object stores copy)
_ATOMIC_RENAME = frozenset({"local", "hdfs"})
#: URI schemes whose path on the filesystem is ``netloc/path`` (a bucket, then its keys)
_BUCKET_SCHEMES = frozenset({"s3", "s3a", "gs", "gcs"})
#: the pyarrow filesystem type each URI scheme names
_SCHEME_TYPES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "file": "local",
                 "hdfs": "hdfs", "viewfs": "hdfs"}


def _unwrapped(fs: pafs.FileSystem, path: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem under any ``SubTreeFileSystem`` wrappers, and ``path`` on it."""
    while isinstance(fs, pafs.SubTreeFileSystem):
        path = join(fs.base_path, path)
        fs = fs.base_fs
    return fs, path


def _base(fs: pafs.FileSystem) -> pafs.FileSystem:
    return _unwrapped(fs, "")[0]


def local_path(fs: pafs.FileSystem, path: str) -> str | None:
    """``path`` of ``fs`` as an operating-system path, or None if ``fs`` is not local."""
    base, unwrapped = _unwrapped(fs, path)
    return unwrapped if base.type_name == "local" else None


def is_object_store(fs: pafs.FileSystem) -> bool:
    """True for S3, GCS and other key-value stores: no atomic rename, no empty directories
    (a "directory" is a key prefix, or a zero-byte marker object pyarrow keeps for it)."""
    return _base(fs).type_name not in _ATOMIC_RENAME


def _path_in_uri(text: str, filesystem: pafs.FileSystem) -> str:
    """The path a URI names on ``filesystem`` (``s3://bucket/wh`` -> ``bucket/wh``), which
    must be a filesystem of the URI's kind: an S3 URI on a local filesystem would write the
    warehouse somewhere no other client looks."""
    parsed = urllib.parse.urlsplit(text)
    scheme = parsed.scheme.lower()
    kind = _base(filesystem).type_name
    if _SCHEME_TYPES.get(scheme) != kind or isinstance(filesystem, pafs.SubTreeFileSystem):
        raise InvalidInputError(
            f"{text!r} is a {scheme}:// URI but filesystem= is a {filesystem.type_name!r} "
            "filesystem: pass the URI alone (pyarrow resolves it) or the path on the given "
            "filesystem (for S3: 'bucket/path')")
    if scheme in _BUCKET_SCHEMES:
        return f"{parsed.netloc}{parsed.path}"
    return parsed.path


def resolve(path: str | os.PathLike[str], filesystem: pafs.FileSystem | None = None,
            ) -> tuple[pafs.FileSystem, str]:
    """Turn a user path (or URI) into a filesystem and a path on it, normalised without a
    trailing slash. A local relative path becomes absolute so that names stay stable.

    With ``filesystem`` given, ``path`` is a path on it (``bucket/wh`` for S3) or a URI of
    the same kind (``s3://bucket/wh``), whose scheme is dropped: the filesystem carries the
    endpoint and credentials. Without it, pyarrow builds the filesystem from the URI (for
    S3: region, endpoint and credentials from the environment, ``AWS_ENDPOINT_URL``,
    ``AWS_ACCESS_KEY_ID`` ..., or the URI's query, ``?endpoint_override=host:port&scheme=http``).
    """
    text = os.fspath(path)
    if filesystem is not None:
        if "://" in text:
            text = _path_in_uri(text, filesystem)
        return filesystem, text.rstrip("/") or "/"
    if "://" not in text:
        text = os.path.abspath(text)
        return pafs.LocalFileSystem(), text.rstrip("/") or "/"
    try:
        fs, inner = pafs.FileSystem.from_uri(text)
    except (pa.ArrowInvalid, ValueError, OSError) as exc:
        raise InvalidInputError(f"cannot open the filesystem of {text!r}: {exc}") from exc
    return fs, inner.rstrip("/") or "/"


#: the URI scheme a location of each pyarrow filesystem type is spelled with
_TYPE_SCHEMES = {"local": "file", "s3": "s3", "gcs": "gs", "hdfs": "hdfs"}


def location_uri(fs: pafs.FileSystem, path: str) -> str:
    """One spelling of a location, however it was given, so two can be compared: a local
    path absolute with its symbolic links resolved (``file:///data/wh``), any other as the
    scheme of its filesystem's type and the path on it (``s3://bucket/wh`` whether it was
    opened as ``s3://bucket/wh/``, ``s3a://bucket/wh`` or ``bucket/wh`` on an S3
    filesystem), ``SubTreeFileSystem`` wrappers taken off. Endpoints, hosts and credentials
    are not part of it: a bucket named alike on two S3 services spells the same."""
    base, full = _unwrapped(fs, path)
    kind = base.type_name
    if kind == "local":
        full = os.path.realpath(full)
    scheme = _TYPE_SCHEMES.get(kind, kind)
    return f"{scheme}://{'/' + full.strip('/') if kind in ('local', 'hdfs') else full.strip('/')}"


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


_DIRECTORY, _FILE = pafs.FileType.Directory, pafs.FileType.File


def list_dir(fs: pafs.FileSystem, path: str) -> list[Entry]:
    """Immediate children of ``path``, sorted by name (an empty list if it does not exist)."""
    if type(fs) is pafs.LocalFileSystem and os.path.isabs(path):
        return _list_local(path)
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
    out = []
    for info in infos:
        # each ``type`` read builds an enum: once per entry, not twice (a statement lists
        # every directory of the partition, three entries each)
        kind = info.type
        out.append(Entry(info.base_name, kind == _DIRECTORY,
                         (info.size or 0) if kind == _FILE else 0))
    out.sort(key=lambda e: e.name)
    return out


def _list_local(path: str) -> list[Entry]:
    """``list_dir`` on the local disk, as pyarrow lists it, from the directory's own entry
    types: pyarrow stats every child, which costs a statement among hundreds of deltas
    about 2 ms a listing of its partition. Only files are stat'ed (for their size); a child
    that does not stat (a dangling link, or removed meanwhile) is left out, as pyarrow
    leaves it out."""
    try:
        children = os.scandir(path)
    except FileNotFoundError:
        return []
    out = []
    with children:
        for child in children:
            try:
                if child.is_dir():
                    out.append(Entry(child.name, True, 0))
                elif child.is_file():
                    out.append(Entry(child.name, False, child.stat().st_size))
                elif not child.is_symlink() or os.path.exists(child.path):
                    out.append(Entry(child.name, False, 0))  # a socket, a pipe, a device
            except FileNotFoundError:
                continue
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




def hidden_temporary(path: str) -> str:
    """A unique hidden sibling of ``path`` (readers skip names starting with '.') to write a
    file under before renaming it over ``path``."""
    head, _, name = path.rpartition("/")
    return join(head, f".{name}.{uuid.uuid4().hex}.tmp")


def write_bytes(fs: pafs.FileSystem, path: str, data: bytes | pa.Buffer,
                *more: bytes | pa.Buffer) -> None:
    """Create or replace a file with ``data`` (followed by ``more``: parts need not be joined
    in memory first), all at once: a reader, or a second writer of the same bytes, never sees
    it truncated or half-written.

    Two Spark attempts of one task (speculation, or a retry while the first attempt's executor
    still runs) write identical bytes to the same path; writing in place, the loser's
    truncate after the winner's last byte would leave an empty file in a committed directory.
    So on filesystems with an atomic rename the bytes go to a hidden sibling (readers skip
    names starting with '.') that is renamed over ``path``; an object store's single PUT is
    atomic by itself. A crashed writer may leave the hidden sibling behind, never ``path``
    partly written.
    """
    if is_object_store(fs):
        with fs.open_output_stream(path) as stream:
            for part in (data, *more):
                stream.write(part)
        return
    temporary = hidden_temporary(path)
    try:
        with fs.open_output_stream(temporary) as stream:
            for part in (data, *more):
                stream.write(part)
        fs.move(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            fs.delete_file(temporary)
        raise


_FULL = frozenset({errnos.ENOSPC, errnos.EDQUOT, errnos.EFBIG})
_DENIED = frozenset({errnos.EACCES, errnos.EPERM, errnos.EROFS})
#: "[Errno 28]" in the text of an error that crossed pyarrow (a Python file's OSError is
#: re-raised by pyarrow as an ``ArrowIOError`` whose errno is lost but whose text keeps it)
_ERRNO_TEXT = re.compile(r"\[Errno (\d+)\]|errno[:=]? ?(\d+)", re.IGNORECASE)
_FULL_TEXT = ("no space left", "disk quota exceeded", "file too large")
_DENIED_TEXT = ("permission denied", "access denied", "read-only file system", "forbidden")


def _errno_of(exc: BaseException) -> int | None:
    number = getattr(exc, "errno", None)
    if isinstance(number, int) and number > 0:
        return number
    found = _ERRNO_TEXT.search(str(exc))
    if found:
        return int(found.group(1) or found.group(2))
    return None


def storage_error(exc: BaseException, path: str | None, *, action: str,
                  retry_safe: bool = True) -> StorageError:
    """The typed error for a filesystem failure (an ``OSError``, pyarrow's ``ArrowIOError``
    or an object store's failed request) while ``action`` (a verb phrase: "write", "list")
    was done on ``path``: ``StorageFullError`` for a full disk or quota,
    ``StoragePermissionError`` for refused access, ``StorageError`` otherwise. Callers raise
    it ``from exc``, so the original error stays in the chain."""
    if isinstance(exc, StorageError):
        return exc
    number = _errno_of(exc)
    text = str(exc).strip() or type(exc).__name__
    lowered = text.lower()
    path = path if path is not None else getattr(exc, "filename", None)
    message = f"cannot {action}: {text}"
    kind: type[StorageError] = StorageError
    if number in _FULL or any(word in lowered for word in _FULL_TEXT):
        kind = StorageFullError
    elif number in _DENIED or any(word in lowered for word in _DENIED_TEXT):
        kind = StoragePermissionError
    return kind(message, path=path, retry_safe=retry_safe, errno=number)


def is_storage_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the storage itself (and not, say, a missing file the
    caller turns into ``MissingDataError``, or a value pyarrow could not encode)."""
    if isinstance(exc, StorageError):
        return True
    if isinstance(exc, FileNotFoundError):
        return False
    return isinstance(exc, OSError)


@contextlib.contextmanager
def storage_errors(path: str | None, *, action: str, retry_safe: bool = True
                   ) -> Iterator[None]:
    """Turn a storage failure inside the block into a ``StorageError`` (see
    ``storage_error``); ``FileNotFoundError`` passes through, for the caller to judge."""
    try:
        yield
    except OSError as exc:
        if not is_storage_failure(exc):
            raise
        raise storage_error(exc, path, action=action, retry_safe=retry_safe) from exc
