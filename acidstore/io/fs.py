"""Filesystem resolution (layer L1): every byte acidstore reads or writes goes through pyarrow.fs.

A path is resolved once, at the edge, into a ``(FileSystem, path)`` pair; everything below
works on that pair. This keeps local disks, HDFS, S3 and fsspec filesystems interchangeable
and keeps global state out of the library. One shortcut: ``list_dir`` reads a local
directory (pyarrow's ``LocalFileSystem`` itself) with ``os.scandir``, with the same answers.
"""

from __future__ import annotations

import contextlib
import errno as errnos
import functools
import inspect
import os
import re
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

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
    "make_dirs",
    "location_uri",
    "read_bytes",
    "relative",
    "remove_empty_directory",
    "resolve",
    "is_io_failure",
    "is_text",
    "storage_boundary",
    "storage_error",
    "storage_errors",
    "storage_guarded",
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


def is_text(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (a lone surrogate, e.g. from a file name
    decoded with ``surrogateescape``, cannot: no path, ORC schema or metastore holds it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
    (a "directory" is a key prefix, or a zero-byte marker object pyarrow keeps for it).
    A Python filesystem (``pyarrow.fs.PyFileSystem``) counts as one unless its handler says
    ``atomic_rename = True``."""
    base = _base(fs)
    if isinstance(base, pafs.PyFileSystem):
        return not getattr(base.handler, "atomic_rename", False)
    return base.type_name not in _ATOMIC_RENAME


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
    if not isinstance(text, str) or not is_text(text):
        raise InvalidInputError(f"the path {text!r} is no valid text (it holds a lone "
                                "surrogate or is bytes): give it as a str")
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
    with storage_errors(path, action="list a directory"):
        if type(fs) is pafs.LocalFileSystem and os.path.isabs(path):
            return _list_local(path)
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True,
                                                   recursive=False))
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
    with storage_errors(path, action="list a directory"):
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True,
                                                   recursive=True))
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
    with storage_errors(path, action="read a file"), fs.open_input_stream(path) as stream:
        data: bytes = stream.read()
    return data


def make_dirs(fs: pafs.FileSystem, path: str) -> None:
    """Create ``path`` and its missing parents (nothing if it exists)."""
    with storage_errors(path, action="create a directory"):
        fs.create_dir(path, recursive=True)


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
    partly written. A failure of the storage (a full disk) is a ``StorageError`` naming
    ``path``.
    """
    with storage_errors(path, action="write a file"):
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
_ERRNO_TEXT = re.compile(r"\[errno (\d+)\]", re.IGNORECASE)
#: a path quoted in the text of pyarrow's I/O errors ("Failed to open local file '/x'")
_QUOTED_PATH = re.compile(r"'(/[^']+|[a-z0-9][a-z0-9.-]*/[^']+)'")
_FULL_TEXT = ("no space left", "disk quota exceeded", "file too large")
_DENIED_TEXT = ("permission denied", "access denied", "read-only file system", "forbidden")
#: words of an object store's or a network's failure in pyarrow's error text: such an
#: ``OSError`` is the storage failing, not a file that cannot be decoded
_IO_TEXT = ("aws error", "curl error", "connection", "timed out", "timeout", "network",
            "when reading", "when writing", "when uploading", "when completing",
            "when initiating", "when listing", "when getting", "when deleting",
            "when copying", "http ", "503", "500 ", "no space left", "permission denied",
            "input/output error", "i/o error")


def _errno_of(exc: BaseException) -> int | None:
    number = getattr(exc, "errno", None)
    if isinstance(number, int) and number > 0:
        return number
    found = _ERRNO_TEXT.search(str(exc))
    return int(found.group(1)) if found else None


def is_io_failure(exc: BaseException) -> bool:
    """Whether an ``OSError`` raised while *decoding* a file is the storage failing (it
    carries an errno, or an object store's or network's error text) rather than bytes that
    do not decode: pyarrow reports both as ``OSError``, and the first is a
    ``StorageError`` (retry once the storage is back) where the second is a
    ``CorruptFileError`` (the data is wrong)."""
    if isinstance(exc, StorageError):
        return True
    if not isinstance(exc, OSError) or isinstance(exc, FileNotFoundError):
        return False
    if _errno_of(exc) is not None:
        return True
    lowered = str(exc).lower()
    return any(word in lowered for word in _IO_TEXT)


def storage_error(exc: BaseException, path: str | None, *, action: str,
                  retry_safe: bool = True) -> StorageError:
    """The typed error for a storage failure (an ``OSError``, pyarrow's ``ArrowIOError``,
    an object store's failed request) while ``action`` (a verb phrase: "write an ORC file")
    was done on ``path``: ``StorageFullError`` for a full disk or quota,
    ``StoragePermissionError`` for refused access, ``StorageError`` otherwise. Callers raise
    it ``from exc``, so the original error stays in the chain."""
    if isinstance(exc, StorageError):
        return exc
    number = _errno_of(exc)
    text = str(exc).strip() or type(exc).__name__
    lowered = text.lower()
    if path is None:
        filename = getattr(exc, "filename", None)
        quoted = _QUOTED_PATH.search(text)
        path = str(filename) if filename else quoted.group(1) if quoted else None
    kind: type[StorageError] = StorageError
    if number in _FULL or any(word in lowered for word in _FULL_TEXT):
        kind = StorageFullError
    elif number in _DENIED or any(word in lowered for word in _DENIED_TEXT):
        kind = StoragePermissionError
    return kind(f"cannot {action}: {text}", path=path, retry_safe=retry_safe, errno=number)


@contextlib.contextmanager
def storage_errors(path: str | None, *, action: str, retry_safe: bool = True
                   ) -> Iterator[None]:
    """Turn an ``OSError`` of a filesystem call inside the block into a ``StorageError``
    (see ``storage_error``). ``FileNotFoundError`` passes through: a missing file is for
    the caller to judge (often a ``MissingDataError``)."""
    try:
        yield
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise storage_error(exc, path, action=action, retry_safe=retry_safe) from exc


_Class = TypeVar("_Class", bound=type)
_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def storage_boundary(cls: _Class) -> _Class:
    """A class decorator for the public API (``Table``, ``Warehouse``, ...): an ``OSError``
    that escapes one of its public methods, from wherever below, leaves it as a
    ``StorageError`` naming the method. The layers below type what they can at the call
    that failed (with its path); this is the one place that guarantees the rest, so a
    caller never has to catch ``OSError`` beside ``AcidStoreError``. A write method's
    transaction is aborted before the error gets here, so the call is safe to retry."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") and name != "__exit__":
            continue
        if isinstance(member, staticmethod | classmethod):
            setattr(cls, name, type(member)(_guarded(member.__func__, cls.__name__)))
        elif inspect.isfunction(member):
            setattr(cls, name, _guarded(member, cls.__name__))
    return cls


def storage_guarded(function: Callable[_Params, _Result]) -> Callable[_Params, _Result]:
    """``storage_boundary`` for a public function (``compaction.compact``)."""
    return _guarded(function, function.__module__.rsplit(".", 1)[-1])


def _guarded(method: Callable[_Params, _Result], owner: str) -> Callable[_Params, _Result]:
    where = f"{owner}.{getattr(method, '__name__', 'call')}"

    @functools.wraps(method)
    def guarded(*args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        try:
            return method(*args, **kwargs)
        except StorageError:
            raise
        except OSError as exc:
            raise storage_error(exc, None, action=f"complete {where}") from exc

    return guarded


def remove_empty_directory(fs: pafs.FileSystem, path: str) -> bool:
    """Remove ``path`` if it is an empty directory, in one step that cannot take anything
    with it: another process may be creating its own files below it at the same moment, and
    an emptiness check followed by a recursive delete could remove them. So only where the
    filesystem has such a step (a local directory: ``rmdir`` refuses one that is not empty);
    on object stores, whose "directory" is a key prefix or marker that no call removes
    atomically, nothing is done. True when it was removed; False when it was not empty, was
    gone already or could not be removed (all fine for a caller tidying up)."""
    local = local_path(fs, path)
    if local is None:
        return False
    try:
        os.rmdir(local)
    except OSError:
        return False
    return True
