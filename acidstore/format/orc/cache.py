"""Small ORC files opened once per process: their bytes, parsed tail and decoded stripes.

A statement among many small ones reads the same few small files of its bucket each time (a
base file, one-row insert deltas, delete files): opening one costs pyarrow a tail parse and
each stripe a decode, 0.1-0.3 ms a file whatever its rows. A committed file never changes
(``acidstore.io.immutable``), so a small one is read into memory once and kept, with what was
decoded from it, keyed by its ``FileKey`` (path, inode, size, modification time): a file
replaced or rewritten has another key and is read again, a missing one has none and fails
where it always did. Bounded with the other caches of ``acidstore.io.immutable``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acidstore.config import DECODED_SETS_PER_FILE, HELD_FILE_MAX_BYTES
from acidstore.io.immutable import FileKey, LruCache, file_key

__all__ = ["OpenedFile", "held", "read_small", "remember", "small_key"]


@dataclass
class OpenedFile:
    """One version of a small file, opened over its bytes in memory. Its reader decodes
    under ``lock`` (an ORC reader is not thread-safe); decoded batches are immutable and
    shared."""

    key: FileKey
    buffer: pa.Buffer
    orc: po.ORCFile
    #: everything ``OrcFile`` derives from the tail, as it derived it the first time
    derived: dict[str, object]
    lock: threading.Lock = field(default_factory=threading.Lock)
    decoded: dict[tuple[int, tuple[str, ...]], pa.RecordBatch] = field(default_factory=dict)

    def read_stripe(self, index: int, columns: Sequence[str]) -> pa.RecordBatch:
        """Decode (or recall) stripe ``index`` with ``columns``; pyarrow's errors pass."""
        wanted = (index, tuple(columns))
        with self.lock:
            found = self.decoded.get(wanted)
            if found is not None:
                return found
            batch: pa.RecordBatch = self.orc.reader.read_stripe(index, columns=list(columns))
            if len(self.decoded) < DECODED_SETS_PER_FILE:
                self.decoded[wanted] = batch
                _FILES.grow(self.key, batch.nbytes)
        return batch


_FILES: LruCache[FileKey, OpenedFile] = LruCache("orc files")


def small_key(fs: pafs.FileSystem, path: str) -> FileKey | None:
    """The key of a small settled local file (see ``file_key``), or None when the file is
    not to be held (also when it is larger than ``HELD_FILE_MAX_BYTES``)."""
    key = file_key(fs, path)
    return key if key is not None and key.size <= HELD_FILE_MAX_BYTES else None


def held(key: FileKey) -> OpenedFile | None:
    """The opened file of this version, if held."""
    return _FILES.get(key)


def read_small(fs: pafs.FileSystem, key: FileKey) -> pa.Buffer | None:
    """The bytes of the file ``key`` names, or None if its size changed since its ``stat``
    (it is then read the ordinary way). Read errors pass to the caller."""
    with fs.open_input_file(key.path) as handle:
        data = handle.read()
    return pa.py_buffer(data) if len(data) == key.size else None


def remember(opened: OpenedFile) -> None:
    """Hold ``opened`` (its bytes counted against the bound)."""
    _FILES.put(opened.key, opened, opened.buffer.size + 1024)
