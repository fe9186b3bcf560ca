"""Reading the ORC files of an ACID table (spec §3, §15).

``OrcFile`` opens one file, ACID or original, and decodes stripes with column projection that
reaches into the ``row`` struct, so a reader decodes only the user fields it needs. Physical
field names (``originalTransaction`` vs ``originaltransaction``, ``_col0`` vs ``id``) are
resolved here once, so readers work with canonical names and field positions.

Every failure to decode becomes a ``CorruptFileError`` that names the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TypeVar, cast

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acidstore.config import HELD_FILE_MAX_BYTES
from acidstore.errors import (
    AcidStoreError,
    CorruptFileError,
    DataError,
    MissingDataError,
)
from acidstore.format.orc.acid_metadata import KEY_INDEX_KEY, RowKey, parse_key_index
from acidstore.format.orc.cache import OpenedFile, held, read_small, remember, small_key
from acidstore.format.orc.schema import ACID_FIELDS, ROW, acid_field_names
from acidstore.format.orc.stats import (
    IntegerStats,
    column_ids,
    integer_statistics,
    stripe_column_statistics,
)
from acidstore.io.fs import is_io_failure, storage_error

_K = TypeVar("_K", int, str)

__all__ = ["OrcFile", "decode_error", "read_flush_length"]


def decode_error(exc: BaseException, path: str, action: str) -> AcidStoreError:
    """What a failed read of an ORC file is: the storage failing (``StorageError``: an errno
    or an object store's error) or bytes that do not decode (``CorruptFileError``). pyarrow
    raises ``OSError`` for both."""
    if is_io_failure(exc):
        return storage_error(exc, path, action=f"{action} (reading {path})")
    return CorruptFileError(f"cannot {action}: {exc}", path=path)


def read_flush_length(fs: pafs.FileSystem, side_file: str) -> int | None:
    """The logical length recorded in a streaming ``_flush_length`` side file (spec §15).

    Returns ``None`` when there is no side file (the real length applies). The last complete
    8-byte big-endian long wins; trailing partial bytes are a flush in progress and ignored.
    """
    info = fs.get_file_info(side_file)
    if info.type != pafs.FileType.File:
        return None
    with fs.open_input_stream(side_file) as stream:
        data = stream.read()
    whole = len(data) // 8
    if whole == 0:
        raise CorruptFileError(
            "side file found but is not readable.  Consider waiting or orcfiledump --recover",
            path=side_file)
    return int.from_bytes(data[(whole - 1) * 8:whole * 8], "big", signed=True)


def _read_whole(fs: pafs.FileSystem, path: str) -> pa.Buffer:
    """A small file (the table's record gives its bytes) read whole: on object storage one
    GET after the open's HEAD, where pyarrow's ORC reader fetches its tail, footer and each
    stripe with a request of their own. The size check then compares what was read."""
    with fs.open_input_file(path) as handle:
        return pa.py_buffer(handle.read())


def _check_events(path: str, events: int | None, actual: int) -> None:
    if events is not None and actual != events:
        raise DataError(f"holds {actual} events, but the compaction that wrote it recorded "
                        f"{events}: events were added or removed after its commit (reading "
                        "or compacting it could keep a row twice, or lose one)", path=path)


def _check_size(path: str, size: int | None, actual: int) -> None:
    if size is not None and actual != size:
        raise MissingDataError(f"committed bucket file {path} of {size} bytes, but it holds "
                               f"{actual} (replaced, emptied or changed by hand?)", path=path)


class OrcFile:
    """One opened ORC data file of a table, ACID events or original rows."""

    def __init__(self, fs: pafs.FileSystem, path: str, *, logical_length: int | None = None,
                 size: int | None = None, events: int | None = None) -> None:
        """``size``: the bytes the table's record says the file holds (None: not checked). A
        read planned from the record lists nothing, so this is where a file replaced, emptied
        or swapped with another since its commit shows, at no extra request (opening a file
        learns its length anyway): a ``MissingDataError`` naming it. ``events``: the event
        count a compaction recorded for its output file (its bytes are recorded only as the
        output's total), a ``DataError`` when the footer says otherwise."""
        self.path = path
        self._fs = fs
        #: the file's readable bytes in memory: a file still streamed, or a small one held
        self._prefix: pa.Buffer | None = None
        self._stats: list[list[bytes]] | None = None  # stripe statistics, once read
        self._stats_read = False
        #: parsed statistics by what was asked (shared by every open of a held file)
        self._parsed_stats: dict[tuple[object, ...], object] = {}
        #: the process's copy of this small committed file (``orc.cache``), if held
        self._opened: OpenedFile | None = None
        key = small_key(fs, path) if logical_length is None else None
        opened = held(key) if key is not None else None
        if opened is not None:
            _check_size(path, size, opened.buffer.size)
            self._adopt(opened)
            _check_events(path, events, self.nrows)
            return
        try:
            if logical_length is not None:
                with fs.open_input_file(path) as handle:
                    self._prefix = pa.py_buffer(handle.read_at(logical_length, 0))
            elif key is not None:
                self._prefix = read_small(fs, key)
            elif size is not None and size <= HELD_FILE_MAX_BYTES:
                self._prefix = _read_whole(fs, path)
            source: pa.NativeFile = pa.BufferReader(self._prefix) \
                if self._prefix is not None else fs.open_input_file(path)
            if logical_length is None:
                _check_size(path, size, source.size())
            self._orc = po.ORCFile(source)
            self.schema: pa.Schema = self._orc.schema
            self.nrows: int = self._orc.nrows
            self.nstripes: int = self._orc.nstripes
            raw_meta = self._orc.metadata
        except FileNotFoundError as exc:
            # a planned file (listed, or named by the metastore's record) that is not
            # there is missing, not corrupt
            raise MissingDataError.gone(path) from exc
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise decode_error(exc, path, "open ORC file") from exc
        _check_events(path, events, self.nrows)
        self.user_metadata: dict[str, bytes] = {
            (k.decode() if isinstance(k, bytes) else str(k)): bytes(v)
            for k, v in (raw_meta.items() if raw_meta is not None else [])
        }
        try:
            self._acid_names = acid_field_names(self.schema)
        except DataError as exc:
            raise CorruptFileError(str(exc), path=path) from exc
        if key is not None and self._prefix is not None:
            self._opened = OpenedFile(key, self._prefix, self._orc, {
                "schema": self.schema, "nrows": self.nrows, "nstripes": self.nstripes,
                "user_metadata": self.user_metadata, "_acid_names": self._acid_names,
                "_parsed_stats": self._parsed_stats})
            remember(self._opened)

    def _adopt(self, opened: OpenedFile) -> None:
        """Take what the first open of this file version derived (no read, no parse)."""
        self._opened = opened
        self._prefix = opened.buffer
        self._orc = opened.orc
        self.__dict__.update(opened.derived)

    # --- what the file is ----------------------------------------------------------------------

    @property
    def held(self) -> bool:
        """A small committed file this process keeps (``orc.cache``): its statistics are read
        once and kept with it, so asking them again costs no read."""
        return self._opened is not None

    @property
    def is_acid(self) -> bool:
        """True for an event file, false for an original (pre-ACID or LOAD DATA) file."""
        return self._acid_names is not None

    @property
    def row_type(self) -> pa.StructType:
        """The user columns: the ``row`` struct of an event file, the whole schema otherwise."""
        if self._acid_names is not None:
            typ: pa.StructType = self.schema.field(self._acid_names[ROW]).type
            return typ
        return pa.struct(list(self.schema))

    @property
    def key_index(self) -> list[RowKey] | None:
        """Per-stripe last keys from ``hive.acid.key.index``, or None when absent."""
        text = self.user_metadata.get(KEY_INDEX_KEY)
        if text is None:
            return None
        try:
            return parse_key_index(text.decode("utf-8"))
        except ValueError as exc:
            raise CorruptFileError(f"unreadable {KEY_INDEX_KEY}: {exc}", path=self.path) from exc

    # --- decoding ------------------------------------------------------------------------------

    def physical_columns(self, acid: Sequence[str], row_fields: Sequence[int] | None
                         ) -> list[str]:
        """Physical column paths for canonical ACID fields and user-field positions.

        ``row_fields`` None means every user field; positions beyond the file's fields are
        skipped (columns added to the table after this file was written).
        """
        row_type = self.row_type
        if self._acid_names is None:
            if acid:
                raise ValueError("an original file has no ACID columns")
            positions = range(row_type.num_fields) if row_fields is None else row_fields
            return [row_type.field(i).name for i in positions if i < row_type.num_fields]
        cols = [self._acid_names[name] for name in acid]
        row_name = self._acid_names[ROW]
        if row_fields is None:
            cols.append(row_name)
        else:
            cols.extend(f"{row_name}.{row_type.field(i).name}" for i in row_fields
                        if i < row_type.num_fields)
        return cols

    def _column_statistics(self) -> list[list[bytes]] | None:
        """Per stripe, each column's undecoded statistics, from the file's metadata section,
        read and split once per opened file: a filtered read and the ROW__ID check may both
        ask (see ``orc.stats``)."""
        if self._stats_read:
            return self._stats
        self._stats_read = True
        opened = self._opened
        if opened is not None:
            with opened.lock:
                self._stats = self._read_column_statistics()
            opened.derived.update(_stats=self._stats, _stats_read=True)
            return self._stats
        self._stats = self._read_column_statistics()
        return self._stats

    def _read_column_statistics(self) -> list[list[bytes]] | None:
        reader = self._orc.reader
        try:
            length = reader.stripe_statistics_length()
            start = reader.file_length() - 1 - reader.file_postscript_length() \
                - reader.file_footer_length() - length
            if length <= 0 or start < 0:
                return None
            if self._prefix is not None:
                metadata = self._prefix.slice(start, length).to_pybytes()
            else:
                with self._fs.open_input_file(self.path) as handle:
                    metadata = handle.read_at(length, start)
        except (pa.ArrowException, OSError, ValueError):
            return None
        return stripe_column_statistics(metadata, reader.compression(), self.nstripes)

    def _statistics(self, wanted: Mapping[int, _K]) -> list[dict[_K, IntegerStats]] | None:
        """Per stripe, the statistics of the ORC column ids ``wanted`` (id -> caller's key)."""
        columns = self._column_statistics()
        if columns is None:
            return None
        stats = integer_statistics(columns, list(wanted))
        if stats is None:
            return None
        return [{wanted[c]: s for c, s in stripe.items()} for stripe in stats]

    def stripe_statistics(self, row_fields: Sequence[int]
                          ) -> list[dict[int, IntegerStats]] | None:
        """Per stripe, the statistics of the user fields at ``row_fields`` (integer fields of
        this file; the keys are those positions), or None when the file has none to read.
        Parsed once per file and shared (a held file's by every open of it): not to be
        changed."""
        key = ("row", *row_fields)
        if key not in self._parsed_stats:  # parsed once per file (a held file: per process)
            row_type = self.row_type
            ids = column_ids(pa.schema(list(row_type)))
            if self._acid_names is not None:
                row_id = column_ids(self.schema)[ACID_FIELDS.index(ROW)]
                ids = [row_id + i for i in ids]
            self._parsed_stats[key] = self._statistics(
                {ids[p]: p for p in row_fields if p < row_type.num_fields})
        return cast("list[dict[int, IntegerStats]] | None", self._parsed_stats[key])

    def acid_statistics(self, names: Sequence[str]) -> list[dict[str, IntegerStats]] | None:
        """Per stripe, the statistics of the ACID columns ``names`` (canonical names, integer
        columns) and, under ``""``, of the root column, whose ``values`` is the stripe's
        number of events; None for a file without ACID columns or statistics."""
        if self._acid_names is None:
            return None
        ids = column_ids(self.schema)
        return self._statistics({0: "", **{ids[ACID_FIELDS.index(name)]: name
                                           for name in names}})

    def read_stripe(self, index: int, columns: Sequence[str]) -> pa.RecordBatch:
        """Decode one stripe with the given physical columns (as from ``physical_columns``)."""
        try:
            # the reader itself: ``ORCFile.read_stripe`` rebuilds the file's schema on every
            # call (to resolve integer columns, which are never passed here)
            batch: pa.RecordBatch = self._orc.reader.read_stripe(index, columns=list(columns)) \
                if self._opened is None else self._opened.read_stripe(index, columns)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise decode_error(exc, self.path, f"decode stripe {index}") from exc
        return batch

    def stripes(self, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """Decode the file stripe by stripe; memory is bounded by the largest stripe."""
        for index in range(self.nstripes):
            yield self.read_stripe(index, columns)

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """Decode the whole file in batches of at most ``batch_rows`` rows (same columns as
        ``read_stripe``). Memory is bounded by the batch, where ``stripes`` holds a decoded
        stripe, and a base's stripe can hold a whole bucket."""
        tops: dict[str, list[str] | None] = {}  # top-level column -> its fields (None: all)
        for column in columns:
            top, _, field = column.partition(".")
            if not field:
                tops[top] = None
            elif tops.get(top, []) is not None:
                tops.setdefault(top, []).append(field)  # type: ignore[union-attr]
        import pyarrow.dataset as pads  # a second to import: only compactions need it

        source = self._prefix if self._prefix is not None else self.path
        try:
            fragment = pads.OrcFileFormat().make_fragment(
                source, filesystem=None if self._prefix is not None else self._fs)
            scanner = pads.Scanner.from_fragment(fragment, columns=list(tops),
                                                 batch_size=batch_rows, use_threads=False,
                                                 batch_readahead=1, fragment_readahead=1)
            for batch in scanner.to_batches():
                if batch.num_rows:
                    yield _select_fields(batch, tops)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise decode_error(exc, self.path, "decode") from exc

    def read(self, columns: Sequence[str]) -> pa.Table:
        """Decode the whole file with the given physical columns."""
        try:
            if self._opened is not None:
                with self._opened.lock:
                    table: pa.Table = self._orc.read(columns=list(columns))
            else:
                table = self._orc.read(columns=list(columns))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise decode_error(exc, self.path, "decode") from exc
        return table

    def canonical(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Rename a decoded batch's top-level ACID columns to their canonical names."""
        if self._acid_names is None:
            return batch
        back = {phys: canon for canon, phys in self._acid_names.items()}
        return batch.rename_columns([back.get(n, n) for n in batch.schema.names])


def _select_fields(batch: pa.RecordBatch, tops: Mapping[str, list[str] | None]
                   ) -> pa.RecordBatch:
    """Keep only the requested fields of struct columns read whole (``row.a`` -> ``row``
    with field ``a``), in the file's order, as a stripe read of those paths returns them."""
    if all(fields is None for fields in tops.values()):
        return batch
    arrays = []
    for name, fields in tops.items():
        column = batch.column(name)
        if fields is not None:
            struct: pa.StructArray = column
            names = [struct.type.field(i).name for i in range(struct.type.num_fields)]
            keep = sorted({names.index(f) for f in fields})
            column = pa.StructArray.from_arrays(
                [struct.field(i) for i in keep], fields=[struct.type.field(i) for i in keep],
                mask=struct.is_null() if struct.null_count else None)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=list(tops))
