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
import pyarrow.orc as po

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.format.layout import ACID_VERSION, ACID_VERSION_FILE, bucket_file_name
from acidstore.format.orc.acid_metadata import (
    ACID_VERSION_KEY,
    KEY_INDEX_KEY,
    STATS_KEY,
    format_key_index,
)
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_writer import WrittenFile, write_event_file
from acidstore.format.orc.footer import add_user_metadata
from acidstore.format.orc.schema import ACID_FIELDS, DELETE, INSERT, event_schema, row_struct
from acidstore.metastore import OriginalFile

Key = tuple[int, int, int]

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])
ACID_FIELD_NAMES: tuple[str, ...] = ACID_FIELDS


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


# --- events from explicit tuples, multi-stripe files, original files ---------------------------

Event = tuple[int, int, int, int, int, Mapping[str, Any] | None]
"""(operation, originalTransaction, bucket, rowId, currentTransaction, row or None)."""


def events_table(events: Sequence[Event], *, schema: pa.Schema = SCHEMA) -> pa.Table:
    """An event table from explicit tuples, in the given order (no sorting, no checks), so
    tests can build streaming files with several write ids, or deliberately broken files."""
    return pa.table({
        "operation": pa.array([e[0] for e in events], pa.int32()),
        "originalTransaction": pa.array([e[1] for e in events], pa.int64()),
        "bucket": pa.array([e[2] for e in events], pa.int32()),
        "rowId": pa.array([e[3] for e in events], pa.int64()),
        "currentTransaction": pa.array([e[4] for e in events], pa.int64()),
        "row": pa.array([None if e[5] is None else dict(e[5]) for e in events],
                        row_struct(schema)),
    }, schema=event_schema(schema))


def write_events(path: Path | str, events: pa.Table, *, rows_per_stripe: int | None = None,
                 compression: str = "zstd") -> WrittenFile:
    """Write one event file. With ``rows_per_stripe`` every stripe holds that many events (the
    last one fewer), with the key index and stats Hive's writer records for such a file."""
    fs = pafs.LocalFileSystem()
    if rows_per_stripe is None:
        return write_event_file(fs, str(path), events, compression=compression)
    sink = pa.BufferOutputStream()
    po.write_table(events, sink, batch_size=rows_per_stripe, stripe_size=1,
                   compression=compression)
    data = sink.getvalue()
    counts = [po.ORCFile(pa.BufferReader(data)).read_stripe(i, columns=["operation"]).num_rows
              for i in range(po.ORCFile(pa.BufferReader(data)).nstripes)]
    rows = events.to_pylist()
    keys: list[Key] = []
    end = 0
    for count in counts:
        end += count
        last = rows[end - 1]
        keys.append((last["originalTransaction"], last["bucket"], last["rowId"]))
    ops = [r["operation"] for r in rows]
    stats = f"{ops.count(INSERT)},{ops.count(1)},{ops.count(DELETE)}"
    out = add_user_metadata(data.to_pybytes(), {
        KEY_INDEX_KEY: format_key_index(keys).encode(),
        STATS_KEY: stats.encode(),
        ACID_VERSION_KEY: b"2",
    })
    Path(path).write_bytes(out)
    return WrittenFile(str(path), len(out), len(rows), keys[-1] if keys else None)


def write_dir_stripes(root: Path | str, name: str, files: Mapping[int, pa.Table], *,
                      rows_per_stripe: int | None = None) -> list[WrittenFile]:
    """Like ``write_dir``, optionally with small stripes (to cross batch boundaries)."""
    directory = Path(root) / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ACID_VERSION_FILE).write_text(ACID_VERSION)
    return [write_events(directory / bucket_file_name(bucket), events,
                         rows_per_stripe=rows_per_stripe)
            for bucket, events in files.items()]


def write_original(path: Path | str, rows: Sequence[Mapping[str, Any]], *,
                   schema: pa.Schema = SCHEMA, rows_per_stripe: int | None = None) -> None:
    """A plain ORC file of user rows (a pre-ACID or LOAD DATA file), with pyarrow."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
    if rows_per_stripe is None:
        po.write_table(table, str(target))
    else:
        po.write_table(table, str(target), batch_size=rows_per_stripe, stripe_size=1)


def record_placed_originals(table: Table) -> None:
    """Record the original files placed by hand at the partition roots of warehouse table
    ``table``, as ``adopt_table`` records what it places: the table then holds them as a
    Hive table converted to ACID does (a file it has no record of is refused as a stray)."""
    files: list[OriginalFile] = []
    for partition in handle_of(table).partition_dirs():
        relative = str(Path(partition.path).relative_to(table.location)) \
            if partition.path != table.location else ""
        files.extend(OriginalFile(relative, path.name, path.stat().st_size)
                     for path in sorted(Path(partition.path).iterdir())
                     if path.is_file() and not path.name.startswith(("_", ".")))
    handle_of(table).core.metastore.record_originals(table.name, files)


# --- files as Hive's own (C++/Java ORC) writer lays them out, via pyorc ------------------------

#: The row struct Hive writes for SCHEMA: fields named by position, not by column name.
HIVE_ROW_FIELDS = "_col0:bigint,_col1:string,_col2:double"


def pyorc_event_schema(row_fields: str = HIVE_ROW_FIELDS,
                       names: Sequence[str] = ACID_FIELD_NAMES) -> str:
    """The ORC type string of an ACID event file, with the given top-level field names."""
    types = ("int", "bigint", "int", "bigint", "bigint")
    head = ",".join(f"{n}:{t}" for n, t in zip(names[:5], types, strict=True))
    return f"struct<{head},{names[5]}:struct<{row_fields}>>"


def write_pyorc_events(path: Path | str, events: Sequence[Event], *,
                       row_fields: str = HIVE_ROW_FIELDS,
                       row_columns: Sequence[str] = tuple(SCHEMA.names),
                       names: Sequence[str] = ACID_FIELD_NAMES, acid_metadata: bool = True,
                       compression: Any = None, flush_after: Sequence[int] = ()) -> list[int]:
    """Write ``events`` with the ORC C++ writer (pyorc), as Hive's writer would.

    ``acid_metadata`` adds ``hive.acid.key.index`` (last key per stripe), ``hive.acid.stats``
    and ``hive.acid.version``. ``flush_after`` lists event counts after which an intermediate
    footer is written (what a streaming writer does at each commit); each flush also ends a
    stripe. Returns the file length after each flush, then the final length.
    """
    import pyorc

    bounds = sorted(set(flush_after))
    ends = [b for b in bounds if 0 < b < len(events)] + [len(events)]
    keys = [(events[e - 1][1], events[e - 1][2], events[e - 1][3]) for e in ends if e]
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lengths: list[int] = []
    with target.open("wb") as out:
        writer = pyorc.Writer(out, pyorc_event_schema(row_fields, names), batch_size=1,
                              compression=compression or pyorc.CompressionKind.ZLIB)
        for i, (op, owid, bucket, row_id, cwid, row) in enumerate(events, start=1):
            user = None if row is None else tuple(row[c] for c in row_columns)
            writer.write((op, owid, bucket, row_id, cwid, user))
            if i in bounds and i < len(events):
                lengths.append(writer.write_intermediate_footer())
        if acid_metadata:
            ops = [e[0] for e in events]
            writer.set_user_metadata(**{
                KEY_INDEX_KEY: format_key_index(keys).encode(),
                STATS_KEY: f"{ops.count(INSERT)},{ops.count(1)},{ops.count(DELETE)}".encode(),
                ACID_VERSION_KEY: b"2",
            })
        writer.close()
    lengths.append(target.stat().st_size)
    return lengths


def write_pyorc_rows(path: Path | str, rows: Sequence[Sequence[Any]], type_string: str
                     ) -> None:
    """A plain (original) ORC file written by the C++ writer, e.g. Hive's ``000000_0``."""
    import pyorc

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out, pyorc.Writer(out, type_string) as writer:
        for row in rows:
            writer.write(tuple(row))


# --- rows and reads of the SCHEMA table ---------------------------------------------------------

Row = dict[str, Any]


def row(i: int, name: str | None = None, amount: float | None = None) -> Row:
    return {"id": i, "name": name, "amount": amount}


def rid(write_id: int, bucket: int, row_id: int) -> dict[str, int]:
    return {"writeid": write_id, "bucketid": bucket, "rowid": row_id}


def read(root: Path, **kwargs: Any) -> list[Row]:
    """Rows of a read, identical (same order) with both readers."""
    vectorized = acidstore.read_directory(root, reader="vectorized", **kwargs)
    merged = acidstore.read_directory(root, reader="merge", **kwargs)
    assert vectorized.equals(merged)
    rows: list[Row] = vectorized.to_pylist()
    return rows
