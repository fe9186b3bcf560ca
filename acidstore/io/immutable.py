"""Per-process memory of what committed ACID directories and files hold (layer L1).

Files inside a committed base or delta directory never change: a writer writes under a hidden
name and renames, compaction writes new directories, the cleaner only deletes. A statement
among many small ones (a one-row DELETE) nevertheless lists every directory of its partition
and decodes the same small files again each time, which is most of its cost. So listings and
decoded files are remembered between statements, keyed by what a replacement must change:

- a file by its path, inode, size and modification time (one ``stat``);
- a directory's listing by its path and modification time (creating, removing or renaming an
  entry changes it), the sizes of its files always taken fresh (``list_dirs``), so a file
  truncated in place is seen as it is now (hidden files, never read as rows, excepted).

A key is trusted only once *settled*: its modification time lies more than ``config.SETTLE_NS``
before the ``stat`` that read it. Filesystem timestamps tick coarsely (a jiffy, up to 10 ms),
so a change within the tick of the remembered one could keep the same time; a change after a
settled ``stat`` cannot. Nothing unsettled is remembered, and anything that does not stat as
expected (a missing file or directory) is read the ordinary way, so it fails as it always did.

Only the local filesystem is cached: object stores have no directory times, and a remote
filesystem's clock is not this process's. Everything here is per process (cleared in a forked
child), thread-safe and bounded in bytes (least recently used first out);
``set_cache_bytes(0)`` turns it off.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pyarrow.fs as pafs

from acidstore.config import FILE_CACHE_BYTES, SETTLE_NS
from acidstore.io.fs import Entry, list_dir

__all__ = [
    "FileKey",
    "LruCache",
    "cache_bytes",
    "file_key",
    "list_dirs",
    "set_cache_bytes",
]

#: what one remembered listing entry costs, roughly (for the byte bound)
_ENTRY_BYTES = 200

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


@dataclass(frozen=True)
class FileKey:
    """What identifies one version of a local file: replacing it changes at least one."""

    path: str
    inode: int
    size: int
    mtime_ns: int


class LruCache(Generic[_K, _V]):
    """A thread-safe mapping bounded by the bytes its values are said to hold; the least
    recently used go first. Bytes may be added to a held value (``grow``) as it fills."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._items: OrderedDict[_K, tuple[_V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        _ALL.append(self)

    def get(self, key: _K) -> _V | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: _K, value: _V, nbytes: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if nbytes > _share():
                return
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            self._evict()

    def get_many(self, keys: Sequence[_K]) -> list[_V | None]:
        """``get`` of each of ``keys`` under one hold of the lock (a statement asks for a
        partition's every directory at once)."""
        out: list[_V | None] = []
        with self._lock:
            items = self._items
            for key in keys:
                found = items.get(key)
                if found is None:
                    out.append(None)
                else:
                    items.move_to_end(key)
                    out.append(found[0])
        return out

    def grow(self, key: _K, nbytes: int) -> None:
        """Count ``nbytes`` more for ``key``'s value (if still held)."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return
            self._items[key] = (found[0], found[1] + nbytes)
            self._bytes += nbytes
            self._evict()

    def discard(self, key: _K) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def _evict(self) -> None:
        limit = _share()
        while self._bytes > limit and self._items:
            _, (_, size) = self._items.popitem(last=False)
            self._bytes -= size


_ALL: list[LruCache[Any, Any]] = []
_limit = FILE_CACHE_BYTES


def _share() -> int:
    """Each cache's part of the bound (there are a few, each with its own lock)."""
    return _limit // max(1, len(_ALL))


def cache_bytes() -> int:
    """The bound on what this process remembers (0: nothing is cached)."""
    return _limit


def set_cache_bytes(nbytes: int) -> int:
    """Bound what this process remembers to ``nbytes`` (0 turns caching off and forgets
    everything); returns the previous bound."""
    global _limit
    previous, _limit = _limit, max(0, int(nbytes))
    for cache in _ALL:
        if _limit == 0:
            cache.clear()
        else:
            with cache._lock:
                cache._evict()
    return previous


def _forget_all() -> None:
    for cache in _ALL:
        cache._lock = threading.Lock()  # a forked child may inherit it held
        cache.clear()


os.register_at_fork(after_in_child=_forget_all)


def _cacheable(fs: pafs.FileSystem) -> bool:
    return _limit > 0 and type(fs) is pafs.LocalFileSystem


def file_key(fs: pafs.FileSystem, path: str) -> FileKey | None:
    """The settled identity of the file at ``path``, or None when it is not to be cached: not
    on the local filesystem, caching off, not a regular file (missing included: the caller
    then reads it the ordinary way and fails as it would have), or changed too recently."""
    if not _cacheable(fs):
        return None
    now = time.time_ns()
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or now - st.st_mtime_ns <= SETTLE_NS:
        return None
    return FileKey(path, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class _Listing:
    mtime_ns: int
    #: the listing as taken, sorted by name
    entries: list[Entry]
    #: the children the next check stats, in the same order
    checked: list[Entry]
    #: their full paths
    paths: tuple[str, ...]
    #: what each one's ``FileInfo.size`` reads while it is as listed (None for a
    #: directory), so the check is one list comparison rather than a loop per child
    sizes: list[int | None]
    #: whether any of them is a directory: a directory's size reads None, as a vanished
    #: file's does, so such a listing is checked child by child (``_still``)
    has_dirs: bool


def _listing(mtime_ns: int, path: str, entries: list[Entry]) -> _Listing:
    """Remember ``entries``; the hidden ones (Hive's filter: a name starting with '_' or
    '.', such as ``_orc_acid_version``) are never read as rows, so their sizes are not
    checked again: a third fewer ``stat`` calls for a delta of one bucket file."""
    checked = [e for e in entries if not e.name.startswith(("_", "."))]
    return _Listing(mtime_ns, entries, checked, tuple(f"{path}/{e.name}" for e in checked),
                    [None if e.is_dir else e.size for e in checked],
                    any(e.is_dir for e in checked))


_LISTINGS: LruCache[str, _Listing] = LruCache("listings")


def list_dirs(fs: pafs.FileSystem, paths: Sequence[str]) -> dict[str, list[Entry]]:
    """``fs.list_dir`` of each of ``paths``, answered from remembered listings where the
    directory did not change since (checked, with every remembered file's size, by one
    batched ``stat`` of the directories and their files; hidden files, never read as rows,
    keep the size they were listed with). Callers must not modify the lists returned:
    they may be the remembered ones.

    A statement among hundreds of deltas checks every one of them, so the check reads each
    ``FileInfo`` once and compares whole size lists, not entry by entry."""
    if not _cacheable(fs) or not paths:
        return {path: list_dir(fs, path) for path in paths}
    known = _LISTINGS.get_many(paths)
    probe: list[str] = list(paths)
    for listing in known:
        if listing is not None:
            probe.extend(listing.paths)
    now = time.time_ns()
    infos = fs.get_file_info(probe)
    sizes = [info.size for info in infos]
    out: dict[str, list[Entry]] = {}
    at = len(paths)
    for path, listing, info, size in zip(paths, known, infos, sizes, strict=False):
        entries = None
        mtime = info.mtime_ns
        is_dir = mtime is not None and size is None  # ``_is_dir`` without the call
        if listing is not None:
            end = at + len(listing.paths)
            if mtime == listing.mtime_ns and is_dir:
                if not listing.has_dirs:
                    entries = listing.entries if sizes[at:end] == listing.sizes else None
                else:
                    entries = _still(listing, infos[at:end])
            at = end
        if entries is None:
            entries = list_dir(fs, path)
            if is_dir and now - mtime > SETTLE_NS:
                _LISTINGS.put(path, _listing(mtime, path, entries),
                              _ENTRY_BYTES * (1 + len(entries)))
        out[path] = entries
    return out


def _is_dir(info: pafs.FileInfo) -> bool:
    """What ``info.type == Directory`` says, without building the enum ``type`` returns
    (a few microseconds, paid per directory and file of every statement): only an existing
    entry has a time, and only a regular file a size."""
    return info.mtime_ns is not None and info.size is None


def _still(listing: _Listing, children: Sequence[pafs.FileInfo]) -> list[Entry] | None:
    """The remembered listing if every checked child is still there as it was (the same
    kind, a file of the same size), else None."""
    for entry, child in zip(listing.checked, children, strict=True):
        if not (_is_dir(child) if entry.is_dir else child.size == entry.size):
            return None
    return listing.entries
