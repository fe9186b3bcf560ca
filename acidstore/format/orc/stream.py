"""Writing an ACID event file batch by batch, with Hive's user metadata, in bounded memory.

``write_event_file`` encodes a whole table in memory and then adds the metadata to its
footer; a compactor's output is as large as a bucket, so ``EventFileWriter`` streams instead.
pyarrow's ORC writer sends each stripe to the file as soon as it is full, and only the file's
last ``POSTSCRIPT_TAIL`` bytes (which hold the postscript) are held back, to be replaced by
``footer.metadata_tail`` once the metadata is known. Memory: the stripe being filled plus one
chunk of rows, whatever the size of the file.

The key index needs the last key of each stripe, and pyarrow does not say where a stripe
ended. The ORC writer ends a stripe only at the end of an ``add`` of a row batch, and pyarrow
makes one ``add`` of each write of at most ``batch_size`` rows; so the writer hands it one
chunk of at most ``batch_rows`` rows at a time, and a stripe ended after the chunk during
which the file grew. ``close`` checks this against the stripes of the finished file (their
row counts, read back), so a writer that behaved otherwise fails loudly instead of writing a
wrong index.
"""

from __future__ import annotations

import contextlib
from types import TracebackType

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acidstore.config import ORC_COMPRESSION
from acidstore.errors import CorruptFileError
from acidstore.format.orc.acid_metadata import AcidStats, RowKey, acid_metadata
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.file_writer import (
    DELTA_STRIPE_SIZE,
    ORC_BATCH_ROWS,
    WrittenFile,
    check_event_schema,
    encode_error,
    operation_counts,
)
from acidstore.format.orc.footer import POSTSCRIPT_TAIL, metadata_tail
from acidstore.format.orc.schema import (
    BUCKET,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW_ID,
)
from acidstore.io.fs import hidden_temporary, is_object_store, storage_error, storage_errors

__all__ = ["DEFAULT_BATCH_ROWS", "EventFileWriter"]

#: rows handed to the ORC writer per call (the granularity of stripe ends, not a memory bound
#: that matters: a chunk is a slice of a batch the caller already holds); the row batch of
#: ``write_event_file`` too, so both write the same bytes for the same events
DEFAULT_BATCH_ROWS = ORC_BATCH_ROWS
_MAGIC_LENGTH = 3  # "ORC", written before the first row batch, ending no stripe


class _HoldingSink:
    """A file-like sink for pyarrow's ORC writer: passes bytes on to ``out`` but always holds
    back the last ``POSTSCRIPT_TAIL`` of them (where the postscript will be).

    pyarrow's writer calls ``write`` from C++, where an exception cannot pass: the ORC
    library throws it on as a C++ exception that nothing catches, and the process ends in
    ``std::terminate``. So a failure of ``out`` (a full disk, a failed upload) is held in
    ``error`` and every later write is dropped; the ``EventFileWriter`` raises it once the
    ORC writer has returned."""

    closed = False

    def __init__(self, out: pa.NativeFile) -> None:
        self._out = out
        self.held = b""
        self.position = 0
        self.error: BaseException | None = None

    def write(self, data: bytes | memoryview) -> int:
        try:
            return self._write(data)
        except BaseException as exc:  # nothing may cross into pyarrow's C++ writer
            if self.error is None:
                self.error = exc
            return len(memoryview(data).cast("B"))

    def _write(self, data: bytes | memoryview) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        self.position += n
        if self.error is not None:
            return n
        if n >= POSTSCRIPT_TAIL:
            if self.held:
                self._out.write(self.held)
            self._out.write(view[:n - POSTSCRIPT_TAIL])
            self.held = bytes(view[n - POSTSCRIPT_TAIL:])
        else:
            combined = self.held + bytes(view)
            cut = max(0, len(combined) - POSTSCRIPT_TAIL)
            if cut:
                self._out.write(combined[:cut])
            self.held = combined[cut:]
        return n

    def tell(self) -> int:
        return self.position

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        """Nothing to do: bytes not held back were passed on already."""

    def close(self) -> None:
        """The writer closes ``out`` itself, after it has replaced the held-back tail."""


class EventFileWriter:
    """One ACID event file, written from batches already in key order.

    Use as a context manager (an exception removes the partial file) or call ``close`` /
    ``abort``. ``largest_chunk`` is the most rows ever handed to the ORC writer at once.

    With ``replace`` the file is written under a hidden name and renamed over ``path`` once
    finished (on an object store, whose upload completes at once, straight to ``path``), as
    ``fs.write_bytes`` writes: two attempts of one Spark task that write the same file
    never leave it truncated. A compaction's outputs go to directories of their own and need
    no rename.
    """

    def __init__(self, fs: pafs.FileSystem, path: str, schema: pa.Schema, *,
                 compression: str = ORC_COMPRESSION, stripe_size: int = DELTA_STRIPE_SIZE,
                 batch_rows: int = DEFAULT_BATCH_ROWS, replace: bool = False) -> None:
        check_event_schema(schema)
        if batch_rows < 1:
            raise ValueError(f"batch_rows must be positive, not {batch_rows}")
        self.path = path
        self.schema = schema
        self._fs = fs
        self._batch_rows = batch_rows
        self._written = hidden_temporary(path) if replace and not is_object_store(fs) else path
        with storage_errors(self._written, action="create an ORC file"):
            self._out = fs.open_output_stream(self._written)
        self._sink = _HoldingSink(self._out)
        try:
            self._orc = po.ORCWriter(self._sink, compression=compression,
                                     stripe_size=stripe_size, batch_size=batch_rows)
        except (pa.ArrowException, ValueError) as exc:
            self._out.close()
            self._remove()
            raise CorruptFileError(f"cannot start an ORC writer: {exc}", path=path) from exc
        self._stripe_rows: list[int] = []
        self._stripe_keys: list[RowKey] = []
        self._pending = 0  # rows of the stripe being filled
        self._last: pa.Table | None = None  # the last event written
        self._ops = np.zeros(3, dtype=np.int64)
        self._state = "open"
        self.rows = 0
        self.largest_chunk = 0

    def __enter__(self) -> EventFileWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is not None:
            self.abort()

    def write(self, events: pa.RecordBatch | pa.Table) -> None:
        """Append events that follow every event written so far in key order."""
        if self._state != "open":
            raise ValueError(f"{self.path}: the writer is {self._state}")
        if events.schema != self.schema:
            raise ValueError(f"{self.path}: events have schema {events.schema}, the file "
                             f"{self.schema}")
        table = events if isinstance(events, pa.Table) else pa.Table.from_batches([events])
        for offset in range(0, table.num_rows, self._batch_rows):
            chunk = table.slice(offset, self._batch_rows)
            before = self._sink.position
            try:
                self._orc.write(chunk)
            except (pa.ArrowException, ValueError) as exc:
                self._raise_held()
                raise encode_error(exc, self.path) from exc
            self._raise_held()
            n = chunk.num_rows
            self.largest_chunk = max(self.largest_chunk, n)
            self.rows += n
            self._pending += n
            self._last = chunk.slice(n - 1)
            if self._sink.position > max(before, _MAGIC_LENGTH):  # the add ended a stripe
                self._end_stripe()
            self._ops += operation_counts(chunk.column(OPERATION).to_numpy())

    def _raise_held(self) -> None:
        """Raise the error the sink held back from pyarrow's C++ writer, as a storage error
        (the writer is then unusable: the file has a hole where the failed bytes were)."""
        error = self._sink.error
        if error is None:
            return
        self._discard()
        if isinstance(error, OSError):
            raise storage_error(error, self._written, action="write an ORC file") from error
        raise error

    def _end_stripe(self) -> None:
        last = self._last
        assert last is not None
        self._stripe_keys.append((int(last.column(ORIGINAL_TRANSACTION)[0].as_py()),
                                  int(last.column(BUCKET)[0].as_py()),
                                  int(last.column(ROW_ID)[0].as_py())))
        self._stripe_rows.append(self._pending)
        self._pending = 0

    def close(self) -> WrittenFile:
        """Finish the file: its last stripe, footer and Hive's ACID metadata."""
        if self._state != "open":
            raise ValueError(f"{self.path}: the writer is {self._state}")
        try:
            try:
                if not self.rows:  # pyarrow starts the file at the first write
                    self._orc.write(self.schema.empty_table())
                self._orc.close()
            except (pa.ArrowException, ValueError) as exc:
                self._raise_held()
                raise encode_error(exc, self.path) from exc
            self._raise_held()
            if self._pending:
                self._end_stripe()
            inserts, updates, deletes = (int(v) for v in self._ops)
            metadata = acid_metadata(self._stripe_keys, AcidStats(inserts, updates, deletes))
            held = self._sink.held
            drop, replacement = metadata_tail(held, metadata, path=self.path)
            with storage_errors(self._written, action="write an ORC file"):
                self._out.write(held[:len(held) - drop])
                self._out.write(replacement)
                size = self._sink.position - drop + len(replacement)
                self._out.close()
            self._check_stripes()
            if self._written != self.path:
                with storage_errors(self.path, action="rename a finished ORC file"):
                    self._fs.move(self._written, self.path)
        except BaseException:
            self._discard()
            raise
        self._state = "closed"
        last_key = self._stripe_keys[-1] if self._stripe_keys else None
        return WrittenFile(path=self.path, size=size, rows=self.rows, last_key=last_key)

    def _check_stripes(self) -> None:
        """The key index is only right if the stripes end where the writer saw them end."""
        orc = OrcFile(self._fs, self._written)
        found = [orc.read_stripe(i, orc.physical_columns([OPERATION], [])).num_rows
                 for i in range(orc.nstripes)]
        if found != self._stripe_rows:
            raise CorruptFileError(
                f"stripes of {found} rows, but the writer saw stripes of {self._stripe_rows}: "
                "its hive.acid.key.index would be wrong", path=self.path)

    def abort(self) -> None:
        """Stop and remove whatever was written (a no-op once closed or aborted)."""
        if self._state == "open":
            self._discard()

    def _discard(self) -> None:
        self._state = "aborted"
        with contextlib.suppress(Exception):  # the error that made us stop is what matters
            self._orc.close()
        with contextlib.suppress(Exception):
            self._out.close()
        self._remove()

    def _remove(self) -> None:
        with contextlib.suppress(OSError, pa.ArrowException):
            self._fs.delete_file(self._written)
