"""Flushing a transaction's files to disk before its commit (layer L1).

The metastore makes a commit durable (SQLite's and PostgreSQL's WAL are flushed before the
commit returns), but the files the commit names were written through the page cache. After a
power loss or a kernel crash within the writeback window, the metastore would name directories
whose bucket files are missing, empty or cut short: the rows of a committed write lost (reads
stop with a typed error naming the file, never with fewer rows, but the rows are gone). So the
commit first flushes, on a local filesystem, every file in the directories it publishes, each
of those directories (their entries name the files) and every directory from there up to the
table's location (whose entries name the new directories), as a database flushes its data
before its log record says the data is there.

Object stores need nothing (a file is stored when its upload returns); HDFS's pyarrow client
offers no hsync, and HDFS replicates on close. ``set_flush(False)`` (or ``ACIDSTORE_FLUSH=0`` in
the environment of every process) turns flushing off, for throwaway warehouses whose loss
after a power cut does not matter (about 1 ms a one-row statement on this project's machines:
4-7 flushes, which the disk's journal commits together).

The flushes of one commit run side by side on a small thread pool: each waits on the disk, and
the filesystem commits its journal once for the flushes that wait together (a one-row UPDATE's
seven: 1.4 ms one after the other, 0.9 ms together). Their order does not matter: nothing is
visible until the metastore's commit, which starts only after every flush has returned, and a
crash before it leaves an uncommitted transaction whose files are removed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait

import pyarrow.fs as pafs

from acidstore.config import FLUSH_COMMITS, FLUSH_THREADS
from acidstore.io import fs as afs

__all__ = ["flush_early", "flush_enabled", "flush_written", "set_flush"]

_enabled = threading.Event()
if FLUSH_COMMITS:
    _enabled.set()


def set_flush(enabled: bool) -> None:
    """Whether commits of this process flush their files first (on unless turned off)."""
    if enabled:
        _enabled.set()
    else:
        _enabled.clear()


def flush_enabled() -> bool:
    return _enabled.is_set()


def _flush(path: str) -> None:
    """fsync one file or directory (Linux and macOS flush a file through a read-only handle,
    and a directory must be opened read-only)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _flush_quietly(path: str) -> None:
    """An early flush: its failure is the commit's to report (it flushes the file again)."""
    with contextlib.suppress(OSError):
        _flush(path)


class _Pool:
    """The process's flush pool, started on first use (most processes never commit)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(FLUSH_THREADS,
                                                    thread_name_prefix="acidstore-flush")
            return self._executor

    def forget(self) -> None:
        """In a forked child: none of the parent's pool threads exist there (and the lock may
        have been held), so the child starts a pool of its own."""
        self._lock = threading.Lock()
        self._executor = None


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def _flush_all(paths: list[str]) -> None:
    """fsync every path, side by side; when any fails, the first failure is raised once all
    have returned (no flush of a commit that is about to be aborted is left running)."""
    if len(paths) <= 1:
        for path in paths:
            _flush(path)
        return
    try:
        pool = _POOL.get()
        futures = [pool.submit(_flush, path) for path in paths]
    except RuntimeError:  # the interpreter is shutting down: no new threads, flush here
        for path in paths:
            _flush(path)
        return
    wait(futures)
    for future in futures:
        future.result()


def flush_early(fs: pafs.FileSystem, path: str) -> None:
    """Start flushing a large finished file of an uncommitted write now, on the flush pool,
    while the statement goes on writing its other files: at commit the disk then has little
    left to write back for it (a 2M-row load's commit waited 10-110 ms for its flushes).

    Nothing relies on this flush: ``flush_written`` flushes every file of the commit again
    (a file without dirty pages returns at once) and reports any failure, so a file removed
    meanwhile (the write aborted) or a failed early flush changes nothing."""
    if not _enabled.is_set():
        return
    local = afs.local_path(fs, path)
    if local is None:
        return
    with contextlib.suppress(RuntimeError):  # shutting down: no new threads; commit flushes
        _POOL.get().submit(_flush_quietly, local)


def flush_written(fs: pafs.FileSystem, location: str, directories: Iterable[str]) -> None:
    """Flush every file in each of ``directories`` (relative to the table's ``location``),
    the directories themselves and each directory between them and ``location``, inclusive.
    A directory that is not there is skipped: the commit's own checks say what is missing."""
    if not _enabled.is_set():
        return
    root = afs.local_path(fs, location)
    if root is None:
        return
    paths: list[str] = []
    parents: set[str] = set()
    for relative in dict.fromkeys(directories):  # a directory two components name, once
        directory = os.path.join(root, relative)
        try:
            with os.scandir(directory) as entries:
                paths += [e.path for e in entries if e.is_file(follow_symlinks=False)]
        except FileNotFoundError:
            continue
        paths.append(directory)
        parent = os.path.dirname(directory)
        while len(parent) >= len(root) and parent not in parents:
            parents.add(parent)
            if parent == root:
                break
            parent = os.path.dirname(parent)
    _flush_all(paths + sorted(parents))
