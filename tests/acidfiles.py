"""Test helpers that lay out ACID directories from explicit events, the way Hive writes them.

Tests use these to build exact on-disk situations (several deltas, statements, aborted write
ids, delete events for any ROW__ID) and then read them with the real readers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.layout import ACID_VERSION, ACID_VERSION_FILE, bucket_file_name
from acidstore.orc.codec import BucketCodec
from acidstore.orc.io import WrittenFile, write_event_file
from acidstore.orc.schema import DELETE, INSERT, event_schema, row_struct

Key = tuple[int, int, int]

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def bucket_property(bucket_id: int, statement_id: int = 0) -> int:
    return BucketCodec.V1.encode(bucket_id, max(statement_id, 0))


def insert_events(write_id: int, bucket_id: int, rows: Sequence[Mapping[str, Any]], *,
                  statement_id: int = 0, first_row_id: int = 0,
                  schema: pa.Schema = SCHEMA, current: int | None = None) -> pa.Table:
    """Insert events for ``rows`` with dense row ids, as one statement writes them."""
    n = len(rows)
    prop = bucket_property(bucket_id, statement_id)
    return pa.table({
        "operation": pa.array([INSERT] * n, pa.int32()),
        "originalTransaction": pa.array([write_id] * n, pa.int64()),
        "bucket": pa.array([prop] * n, pa.int32()),
        "rowId": pa.array(range(first_row_id, first_row_id + n), pa.int64()),
        "currentTransaction": pa.array([write_id if current is None else current] * n,
                                       pa.int64()),
        "row": pa.array([dict(r) for r in rows], row_struct(schema)),
    }, schema=event_schema(schema))


def delete_events(keys: Iterable[Key], current: int, *, schema: pa.Schema = SCHEMA) -> pa.Table:
    """Delete events for ROW__IDs ``keys`` written by ``current``, sorted by key."""
    ordered = sorted(keys)
    n = len(ordered)
    return pa.table({
        "operation": pa.array([DELETE] * n, pa.int32()),
        "originalTransaction": pa.array([k[0] for k in ordered], pa.int64()),
        "bucket": pa.array([k[1] for k in ordered], pa.int32()),
        "rowId": pa.array([k[2] for k in ordered], pa.int64()),
        "currentTransaction": pa.array([current] * n, pa.int64()),
        "row": pa.nulls(n, row_struct(schema)),
    }, schema=event_schema(schema))


def write_dir(root: Path | str, name: str, files: Mapping[int, pa.Table], *,
              stripe_size: int = 64 * 1024 * 1024) -> list[WrittenFile]:
    """Write ``name`` (e.g. ``delta_0000001_0000001_0000``) with one bucket file per entry."""
    directory = Path(root) / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ACID_VERSION_FILE).write_text(ACID_VERSION)
    fs = pafs.LocalFileSystem()
    return [write_event_file(fs, str(directory / bucket_file_name(bucket)), events,
                             stripe_size=stripe_size)
            for bucket, events in files.items()]
