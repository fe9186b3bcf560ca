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
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

import pyarrow.fs as pafs

from acidstore import fs as afs

__all__ = ["FLUSH_ENV", "flush_enabled", "flush_written", "set_flush"]

#: the environment's default for every process that imports acidstore (a test run sets it for
#: the processes it starts): "0" turns flushing off, anything else or unset leaves it on
FLUSH_ENV = "ACIDSTORE_FLUSH"

_enabled = threading.Event()
if os.environ.get(FLUSH_ENV, "1").strip() != "0":
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


def flush_written(fs: pafs.FileSystem, location: str, directories: Iterable[str]) -> None:
    """Flush every file in each of ``directories`` (relative to the table's ``location``),
    the directories themselves and each directory between them and ``location``, inclusive.
    A directory that is not there is skipped: the commit's own checks say what is missing."""
    if not _enabled.is_set():
        return
    root = afs.local_path(fs, location)
    if root is None:
        return
    parents: set[str] = set()
    for relative in dict.fromkeys(directories):  # a directory two components name, once
        directory = os.path.join(root, relative)
        try:
            with os.scandir(directory) as entries:
                files = [e.path for e in entries if e.is_file(follow_symlinks=False)]
        except FileNotFoundError:
            continue
        for path in files:
            _flush(path)
        _flush(directory)
        parent = os.path.dirname(directory)
        while len(parent) >= len(root) and parent not in parents:
            parents.add(parent)
            if parent == root:
                break
            parent = os.path.dirname(parent)
    # deepest first: a directory's entry is flushed after what it names
    for parent in sorted(parents, key=len, reverse=True):
        _flush(parent)
