"""Writing the ORC files of an ACID table (spec §3): event files with Hive's ACID user
metadata (``hive.acid.key.index``, ``hive.acid.stats``, ``hive.acid.version``), and plain ORC
files.

A failure to encode is a ``SchemaMismatchError`` (``encode_error``): the rows are what fails,
every time, and nothing was stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acidstore.config import ORC_COMPRESS_PROPERTY, ORC_COMPRESSION
from acidstore.errors import InvalidInputError, SchemaMismatchError
from acidstore.format.orc.acid_metadata import AcidStats, RowKey, acid_metadata
from acidstore.format.orc.footer import POSTSCRIPT_TAIL, add_user_metadata, metadata_tail
from acidstore.format.orc.schema import (
    ACID_FIELDS,
    BUCKET,
    DELETE,
    INSERT,
    OPERATION,
    ORIGINAL_TRANSACTION,
    ROW_ID,
    UPDATE,
)
from acidstore.io.fs import write_bytes

__all__ = [
    "BASE_STRIPE_SIZE",
    "DELTA_STRIPE_SIZE",
    "ORC_BATCH_ROWS",
    "WrittenFile",
    "check_compression",
    "check_event_schema",
    "compression_codec",
    "encode_error",
    "operation_counts",
    "write_event_file",
    "write_orc_file",
]

#: Hive's ``orc.compress`` values that pyarrow spells differently
_CODEC_NAMES = {"none": "uncompressed"}
#: the codecs pyarrow's ORC writer has (Hive's NONE, ZLIB, SNAPPY, LZ4, ZSTD)
_CODECS = frozenset({"uncompressed", "zlib", "snappy", "lz4", "zstd"})


def check_compression(orc_compress: str | None, table: str) -> None:
    """Refuse an ``orc.compress`` no writer can use, at create (every insert would fail)."""
    if compression_codec(orc_compress) not in _CODECS:
        raise InvalidInputError(
            f"table {table}: {ORC_COMPRESS_PROPERTY}={orc_compress!r} is not one of NONE, ZLIB, "
            "SNAPPY, LZ4, ZSTD")


def compression_codec(orc_compress: str | None) -> str:
    """The pyarrow codec for a table's ``orc.compress`` property (Hive's NONE is pyarrow's
    "uncompressed"); the default when the property is not set."""
    name = (orc_compress or ORC_COMPRESSION).lower()
    return _CODEC_NAMES.get(name, name)


#: rows of each row batch the ORC writer encodes (pyarrow's default is 1,024; the CPU per row
#: is the same within 1%). Stripes end only between batches, so this is the granularity of
#: stripe ends, the same for ``write_event_file`` and the streaming ``EventFileWriter``: both
#: write the same bytes for the same events
ORC_BATCH_ROWS = 8192
#: Hive writes deltas with stripes 1/8 of the base's (spec §3.2)
BASE_STRIPE_SIZE = 64 * 1024 * 1024
DELTA_STRIPE_SIZE = BASE_STRIPE_SIZE // 8


@dataclass(frozen=True)
class WrittenFile:
    """What a writer produced: where, how big, how many rows, and its last key."""

    path: str
    size: int
    rows: int
    last_key: RowKey | None


def encode_error(exc: Exception, path: str) -> SchemaMismatchError:
    """The error for rows pyarrow's ORC writer refused: a column type it has no encoding for
    (tables declared one before ``orc.types`` refused them at ``create_table``). The request
    is what fails, every time, and nothing was stored, so it is no ``CorruptFileError``."""
    return SchemaMismatchError(f"cannot encode ORC for {path}: {exc}")


def write_orc_file(fs: pafs.FileSystem, path: str, table: pa.Table, *,
                   user_metadata: Mapping[str, bytes] | None = None,
                   compression: str = ORC_COMPRESSION,
                   stripe_size: int = BASE_STRIPE_SIZE) -> int:
    """Write ``table`` as one ORC file with user metadata; returns the file size in bytes.

    The file is built in memory and written with one call, so a crash never leaves a file
    whose footer lacks the metadata.
    """
    sink = pa.BufferOutputStream()
    try:
        po.write_table(table, sink, compression=compression, stripe_size=stripe_size)
    except (pa.ArrowException, ValueError) as exc:
        raise encode_error(exc, path) from exc
    data = sink.getvalue().to_pybytes()
    if user_metadata:
        data = add_user_metadata(data, user_metadata, path=path)
    write_bytes(fs, path, data)
    return len(data)


def _stripe_row_counts(data: pa.Buffer, rows: int) -> list[int]:
    """Rows per stripe of an encoded file of ``rows`` events. The writer ends a stripe only
    between the row batches it is given, so events that fit in one batch are one stripe (none
    if there are none), known without parsing the file's tail (an ``ORCFile`` over the
    buffer, 10-20 us of each one-row file); a one-stripe file holds all its rows in that
    stripe, so only files of several stripes are decoded to count them."""
    if rows <= ORC_BATCH_ROWS:
        return [rows] if rows else []
    orc = po.ORCFile(pa.BufferReader(data))
    if orc.nstripes <= 1:
        return [orc.nrows] if orc.nstripes else []
    return [orc.read_stripe(i, columns=[OPERATION]).num_rows for i in range(orc.nstripes)]


def operation_counts(operations: npt.NDArray[np.int32]) -> list[int]:
    """How many insert, update and delete events ``operations`` holds (Hive's
    ``hive.acid.stats``), counted by numpy: three pyarrow compute calls (``equal``, then
    ``sum``) cost about 80 us over a one-row file's column, a tenth of its whole write."""
    return [int(np.count_nonzero(operations == op)) for op in (INSERT, UPDATE, DELETE)]


def check_event_schema(schema: pa.Schema) -> None:
    """Refuse anything but the ACID event columns, in Hive's order."""
    if tuple(schema.names) != ACID_FIELDS:
        raise ValueError(f"events must have the ACID event schema, got {schema.names}")


def write_event_file(fs: pafs.FileSystem, path: str, events: pa.Table, *,
                     compression: str = ORC_COMPRESSION,
                     stripe_size: int = DELTA_STRIPE_SIZE) -> WrittenFile:
    """Write ACID events (already in key order) with Hive's ACID user metadata.

    The key index gets one entry per stripe, the last key of that stripe, which is what lets a
    reader bound the delete events it needs for a stripe range. (A compactor's output, as
    large as a bucket, goes through the streaming ``orc.stream.EventFileWriter`` instead.)
    """
    check_event_schema(events.schema)
    sink = pa.BufferOutputStream()
    try:
        po.write_table(events, sink, compression=compression, stripe_size=stripe_size,
                       batch_size=ORC_BATCH_ROWS)
    except (pa.ArrowException, ValueError) as exc:
        raise encode_error(exc, path) from exc
    buffer = sink.getvalue()
    owid = events.column(ORIGINAL_TRANSACTION).to_numpy()
    bucket = events.column(BUCKET).to_numpy()
    row_id = events.column(ROW_ID).to_numpy()
    keys: list[RowKey] = []
    end = 0
    for count in _stripe_row_counts(buffer, events.num_rows):
        end += count
        if count:
            keys.append((int(owid[end - 1]), int(bucket[end - 1]), int(row_id[end - 1])))
    stats = AcidStats(*operation_counts(events.column(OPERATION).to_numpy()))
    # only the tail is replaced: the encoded bytes before it are written from pyarrow's
    # buffer as they are (two copies of a bucket's file fewer than joining them in Python)
    drop, tail = metadata_tail(buffer.slice(max(0, buffer.size - POSTSCRIPT_TAIL)).to_pybytes(),
                               acid_metadata(keys, stats), path=path)
    body = buffer.slice(0, buffer.size - drop)
    write_bytes(fs, path, body, tail)
    last = keys[-1] if keys else None
    return WrittenFile(path=path, size=body.size + len(tail), rows=events.num_rows,
                       last_key=last)
