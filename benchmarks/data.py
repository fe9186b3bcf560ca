"""Seeded synthetic data of docs/benchmarks.md and the on-disk layouts the workloads read.

The same generated rows feed every peer: the ACID layout (one insert delta of ten bucket
files, then delete deltas) and the "limit" layout (ten plain ORC files with no ACID columns).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acidstore.config import ORC_COMPRESSION
from acidstore.format.layout import ACID_VERSION, ACID_VERSION_FILE, bucket_file_name, delta_name
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_writer import ORC_BATCH_ROWS, write_event_file
from acidstore.format.orc.schema import DELETE, INSERT, event_schema

BUCKETS = 10
SCHEMA = pa.schema([
    ("id", pa.int64()), ("k", pa.int32()), ("v1", pa.float64()), ("v2", pa.float64()),
    ("c", pa.int32()), ("s", pa.string()), ("ts", pa.timestamp("us")),
])


def generate(rows: int, seed: int = 42) -> pa.Table:
    """``rows`` rows of the benchmark schema; ``id`` is unique 0..rows-1."""
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    chars = letters[rng.integers(0, 26, size=(rows, 10))]
    strings = pa.array(chars.view("S10").ravel().astype(str))
    base = np.datetime64("2024-01-01T00:00:00", "us")
    return pa.table({
        "id": ids,
        "k": rng.integers(0, 1000, rows, dtype=np.int32),
        "v1": rng.random(rows),
        "v2": rng.random(rows),
        "c": rng.integers(0, 100, rows, dtype=np.int32),
        "s": strings,
        "ts": pa.array(base + rng.integers(0, 86_400_000_000 * 365, rows)
                       .astype("timedelta64[us]")),
    }, schema=SCHEMA)


def bucket_of(table: pa.Table) -> np.ndarray:
    """Ten bucket files: by ``id`` modulo 10 (ids are unique, so buckets are even)."""
    ids: np.ndarray = table.column("id").to_numpy()
    return ids % BUCKETS


def _write_files(parts: list[pa.Table], directory: Path, stripe_size: int,
                 encode: Callable[[int, pa.Table], pa.Table] | None = None) -> list[Path]:
    """Write ``parts[b]`` (through ``encode(b, part)``, on the writing thread, if given) to
    ``part-<b>.orc`` on one thread per core: pyarrow's ORC writer encodes a file on the
    calling thread alone, so ten files written one after another leave every core but one
    idle, and a limit that does is no limit."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"part-{b:05d}.orc" for b in range(len(parts))]

    def write(b: int) -> None:
        part = parts[b] if encode is None else encode(b, parts[b])
        po.write_table(part, str(paths[b]), compression=ORC_COMPRESSION,
                       stripe_size=stripe_size, batch_size=ORC_BATCH_ROWS)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(write, range(len(parts))))
    return paths


def by_bucket(table: pa.Table) -> list[pa.Table]:
    """``table``'s rows of each bucket, in their order: one stable sort and one gather, then
    zero-copy slices (filtering the table once per bucket reads it ten times)."""
    buckets = bucket_of(table)
    order = np.argsort(buckets, kind="stable")
    ends = np.cumsum(np.bincount(buckets, minlength=BUCKETS))
    grouped = table.take(pa.array(order))
    return [grouped.slice(int(end - count), int(count))
            for end, count in zip(ends, np.diff(ends, prepend=0), strict=True)]


def write_limit(table: pa.Table, directory: Path, *, stripe_size: int,
                bucketed: bool = True) -> list[Path]:
    """The plain-ORC peer: the same rows in ten files, no ACID columns, written on every core.

    ``bucketed`` puts each bucket's rows in its own file (the layout the scans read beside
    the ACID table's bucket files); without it the files are ten contiguous slices, the least
    work there is to write the rows as ten files (W1's limit: plain files need no buckets)."""
    if bucketed:
        parts = by_bucket(table)
    else:
        size = -(-table.num_rows // BUCKETS)
        parts = [table.slice(b * size, size) for b in range(BUCKETS)]
    return _write_files(parts, directory, stripe_size)


def _events(rows: pa.Table | None, n: int, op: int, write_id: np.ndarray, bucket: np.ndarray,
            row_id: np.ndarray, current: int) -> pa.Table:
    row_type = pa.struct(list(SCHEMA))
    row = pa.StructArray.from_arrays([c.combine_chunks() for c in rows.columns],
                                     fields=list(SCHEMA)) if rows is not None \
        else pa.nulls(n, row_type)
    return pa.table({
        "operation": pa.array(np.full(n, op, np.int32)),
        "originalTransaction": pa.array(write_id.astype(np.int64)),
        "bucket": pa.array(bucket.astype(np.int32)),
        "rowId": pa.array(row_id.astype(np.int64)),
        "currentTransaction": pa.array(np.full(n, current, np.int64)),
        "row": row,
    }, schema=event_schema(SCHEMA))


def write_events(table: pa.Table, directory: Path, *, stripe_size: int) -> list[Path]:
    """W1's floor: pyarrow alone writing the rows as one insert delta's events in Hive's
    layout (each bucket's rows with its ROW__ID columns, the user columns as fields of the
    ``row`` struct), on every core, and nothing else (no metastore, no ACID metadata tail,
    no key index): what the event layout alone costs pyarrow's ORC writer beside the limit."""
    def events(b: int, part: pa.Table) -> pa.Table:
        n = part.num_rows
        prop = np.full(n, BucketCodec.V1.encode(b, 0), np.int32)
        return _events(part, n, INSERT, np.ones(n), prop, np.arange(n), 1)

    return _write_files(by_bucket(table), directory, stripe_size, events)


def write_acid(table: pa.Table, directory: Path, *, stripe_size: int, delete_deltas: int = 10,
               delete_fraction: float = 0.01) -> int:
    """The ACID layout: write id 1 inserts every row (ten bucket files, dense row ids), then
    ``delete_deltas`` write ids each delete an equal share of ``delete_fraction`` of the rows.
    Returns the number of deleted rows."""
    fs = pafs.LocalFileSystem()
    buckets = bucket_of(table)
    insert_dir = directory / delta_name(1, 1, 0)
    insert_dir.mkdir(parents=True, exist_ok=True)
    (insert_dir / ACID_VERSION_FILE).write_text(ACID_VERSION)
    row_ids = np.empty(table.num_rows, dtype=np.int64)
    for b in range(BUCKETS):
        mask = buckets == b
        part = table.filter(pa.array(mask))
        n = part.num_rows
        row_ids[mask] = np.arange(n)
        prop = np.full(n, BucketCodec.V1.encode(b, 0), np.int32)
        write_event_file(fs, str(insert_dir / bucket_file_name(b)),
                         _events(part, n, INSERT, np.ones(n), prop, np.arange(n), 1),
                         stripe_size=stripe_size)
    ids = table.column("id").to_numpy()
    period = round(delete_deltas / delete_fraction)  # e.g. 1000: id % 1000 == r per delta
    deleted = 0
    for d in range(delete_deltas):
        write_id = 2 + d
        ddir = directory / delta_name(write_id, write_id, 0, delete=True)
        ddir.mkdir(parents=True, exist_ok=True)
        (ddir / ACID_VERSION_FILE).write_text(ACID_VERSION)
        hit = ids % period == d
        for b in range(BUCKETS):
            sel = hit & (buckets == b)
            n = int(sel.sum())
            if not n:
                continue
            prop = np.full(n, BucketCodec.V1.encode(b, 0), np.int32)
            order = np.argsort(row_ids[sel], kind="stable")
            write_event_file(fs, str(ddir / bucket_file_name(b)),
                             _events(None, n, DELETE, np.ones(n), prop, row_ids[sel][order],
                                     write_id), stripe_size=stripe_size)
            deleted += n
    return deleted


def merge_source(table: pa.Table, fraction: float = 0.01, seed: int = 7) -> pa.Table:
    """W4's MERGE source: ``fraction`` of the existing ids (a seeded random sample, sorted; they
    update) followed by as many new ids after the last one (they insert), with fresh values."""
    rows = table.num_rows
    count = max(1, round(rows * fraction))
    rng = np.random.default_rng(seed)
    existing = np.sort(rng.choice(rows, size=min(count, rows), replace=False)).astype(np.int64)
    new = np.arange(rows, rows + count, dtype=np.int64)
    values = generate(len(existing) + count, seed=seed)
    return values.set_column(0, SCHEMA.field("id"), pa.array(np.concatenate([existing, new])))
