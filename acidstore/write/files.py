"""Writers of ACID directories: insert deltas, delete deltas and bases (spec §2, §3).

Each writer produces one directory for one (partition, write id, statement id): a
``bucket_NNNNN`` file per bucket holding events sorted by ROW__ID, ``_orc_acid_version``, and
Hive's ORC user metadata. Row ids are dense from 0 per (write id, bucket, statement). Nothing
here makes data visible: the directory's write id stays invalid until the transaction commits,
so a crash leaves only files that no snapshot selects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from acidstore.config import ORC_COMPRESSION
from acidstore.format.layout import (
    ACID_VERSION,
    ACID_VERSION_FILE,
    base_name,
    bucket_file_name,
    delta_name,
)
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_writer import (
    BASE_STRIPE_SIZE,
    DELTA_STRIPE_SIZE,
    ORC_BATCH_ROWS,
    WrittenFile,
    write_event_file,
)
from acidstore.format.orc.schema import DELETE, INSERT, event_schema, is_dropped, row_struct
from acidstore.format.orc.stream import EventFileWriter
from acidstore.io import fs as afs
from acidstore.io.durable import flush_early
from acidstore.write.timestamps import check_timestamps

__all__ = ["SMALL_FILE_ROWS", "STREAM_ROWS", "ChunkedRows",
           "WrittenDirectory", "codec_for", "delete_events", "insert_events",
           "prepare_directory", "write_deletes", "write_inserts"]

Kind = Literal["delta", "base"]

#: bucket files of at most this many events are written uncompressed (``codec_for``)
SMALL_FILE_ROWS = 16

#: an insert's bucket of more rows than this is gathered, turned into events and encoded
#: this many rows at a time, straight into its file (``EventFileWriter``), instead of whole
#: in memory: a thread then holds one slice's rows and events and the stripe being filled,
#: not its bucket's rows, events and encoded file (at 10M rows, ten buckets on four threads,
#: about 400 MB less peak memory). A multiple of ``ORC_BATCH_ROWS``, so the ORC writer gets
#: the row batches one whole-table write gives it, and the bytes are the same.
STREAM_ROWS = 8 * ORC_BATCH_ROWS


def codec_for(compression: str, rows: int) -> str:
    """The codec of a bucket file of ``rows`` events: the table's (``orc.compress``), but
    none for a few rows. pyarrow's ORC writer sets a codec up for every column stream
    whatever the data: a one-row event file of a 7-column table costs about twice the CPU
    with zstd as without (the larger part of a one-row UPDATE's encoding), and a few rows
    compress to no fewer bytes. Every ORC reader, Hive's included, takes the codec from the
    file's postscript, so the files of one table may differ in it."""
    return "uncompressed" if rows <= SMALL_FILE_ROWS else compression


@dataclass(frozen=True)
class WrittenDirectory:
    """One directory a statement wrote, relative to the table location."""

    path: str
    files: tuple[WrittenFile, ...]
    rows: int

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def bucket_files(self) -> tuple[tuple[str, int], ...]:
        """(path relative to the table, bytes) of each file: what the commit records
        (``WriteComponent.bucket_files``), so a reader can tell a renamed or replaced file."""
        return tuple((afs.join(self.path, f.path.rsplit("/", 1)[-1]), f.size)
                     for f in self.files)


def insert_events(rows: pa.Table, write_id: int, bucket_property: int, schema: pa.Schema,
                  first_row_id: int = 0) -> pa.Table:
    """Insert events for ``rows`` (columns in ``schema`` order) with dense row ids. The
    dropped columns' places in ``schema`` (a table's file schema) hold NULL."""
    n = rows.num_rows
    # one struct per chunk of ``rows``: a bucket gathered from a chunked input stays chunked
    # (combining would copy it once more), and the ORC writer fills its row batches across
    # chunks, so the file's bytes do not depend on the chunking
    fields = list(schema)
    live = [f.name for f in fields if not is_dropped(f.name)]

    def row(batch: pa.RecordBatch) -> pa.StructArray:
        given = iter(batch.columns)
        arrays = [pa.nulls(batch.num_rows, f.type) if is_dropped(f.name) else next(given)
                  for f in fields]
        return pa.StructArray.from_arrays(arrays, fields=fields)

    struct = pa.chunked_array([row(b) for b in rows.select(live).to_batches()],
                              type=pa.struct(fields))
    return pa.table({
        "operation": pa.array(np.full(n, INSERT, np.int32)),
        "originalTransaction": pa.array(np.full(n, write_id, np.int64)),
        "bucket": pa.array(np.full(n, bucket_property, np.int32)),
        "rowId": pa.array(np.arange(first_row_id, first_row_id + n, dtype=np.int64)),
        "currentTransaction": pa.array(np.full(n, write_id, np.int64)),
        "row": struct,
    }, schema=event_schema(schema))


def delete_events(write_ids: npt.NDArray[np.int64], buckets: npt.NDArray[np.int32],
                  row_ids: npt.NDArray[np.int64], current_write_id: int, schema: pa.Schema
                  ) -> pa.Table:
    """Delete events for the given ROW__IDs, sorted by key as readers require."""
    order = np.lexsort((row_ids, buckets, write_ids))
    n = len(order)
    return pa.table({
        "operation": pa.array(np.full(n, DELETE, np.int32)),
        "originalTransaction": pa.array(write_ids[order].astype(np.int64)),
        "bucket": pa.array(buckets[order].astype(np.int32)),
        "rowId": pa.array(row_ids[order].astype(np.int64)),
        "currentTransaction": pa.array(np.full(n, current_write_id, np.int64)),
        "row": pa.nulls(n, row_struct(schema)),
    }, schema=event_schema(schema))


def prepare_directory(fs: pafs.FileSystem, location: str, relative: str) -> str:
    """Create an ACID directory with its ``_orc_acid_version`` marker (Hive writes one into
    every directory it creates, compactor output included)."""
    directory = afs.join(location, relative)
    marker = afs.join(directory, ACID_VERSION_FILE)
    local = afs.local_path(fs, marker)
    if local is not None and os.path.isfile(local):
        # another unit of the statement made it: each of a statement's units (a bucket of
        # W2's UPDATE each) writes into the same two directories, and creating them again
        # cost a directory walk and a renamed write per unit. A marker exists only once
        # whole (``write_bytes`` renames it into place), so it stands for both.
        return directory
    afs.make_dirs(fs, directory)
    afs.write_bytes(fs, marker, ACID_VERSION.encode())
    return directory


def write_inserts(fs: pafs.FileSystem, location: str, partition: str, rows: pa.Table,
                  buckets: npt.NDArray[np.int32], *, write_id: int, statement_id: int,
                  schema: pa.Schema, kind: Kind = "delta", compression: str = ORC_COMPRESSION,
                  stripe_size: int | None = None, threads: int = 1) -> WrittenDirectory | None:
    """Write ``rows`` (bucket of each row in ``buckets``) as ``delta_w_w_s`` or ``base_w``.

    An insert delta with no rows writes nothing. A base always exists once written (an empty
    INSERT OVERWRITE must still hide what was there), with an empty ``bucket_00000``.

    ``threads`` > 1 gathers, encodes and writes bucket files on that many threads (pyarrow's
    ``take`` and ORC encoder release the GIL, and encoding is most of a bulk insert's time);
    the files are the same bytes either way. Callers that already run one writer per core
    (statement units, Spark tasks) keep the default of one.
    """
    if rows.num_rows == 0 and kind == "delta":
        return None
    check_timestamps(rows, f"write to {afs.join(location, partition) if partition else location}")
    name = base_name(write_id) if kind == "base" else delta_name(write_id, write_id, statement_id)
    relative = afs.join(partition, name) if partition else name
    directory = prepare_directory(fs, location, relative)
    stripe = stripe_size or (BASE_STRIPE_SIZE if kind == "base" else DELTA_STRIPE_SIZE)
    groups = _groups(buckets)
    if not groups and kind == "base":
        groups = {0: np.zeros(0, dtype=np.int64)}
    whole = len(groups) == 1 and len(next(iter(groups.values()))) == rows.num_rows
    chunks = ChunkedRows(rows)

    def gather(index: npt.NDArray[np.int64], start: int, stop: int) -> pa.Table:
        # one bucket holding every row in order (an unbucketed table, a unit's bucket)
        # needs no gather
        return rows.slice(start, stop - start) if whole else chunks.take(index[start:stop])

    def write(bucket: int, index: npt.NDArray[np.int64]) -> WrittenFile:
        prop = BucketCodec.V1.encode(bucket, max(statement_id, 0))
        path = afs.join(directory, bucket_file_name(bucket))
        if len(index) <= STREAM_ROWS:
            events = insert_events(gather(index, 0, len(index)), write_id, prop, schema)
            return write_event_file(fs, path, events,
                                    compression=codec_for(compression, events.num_rows),
                                    stripe_size=stripe)
        with EventFileWriter(fs, path, event_schema(schema), compression=compression,
                             stripe_size=stripe, replace=True) as writer:
            for start in range(0, len(index), STREAM_ROWS):
                part = gather(index, start, min(start + STREAM_ROWS, len(index)))
                writer.write(insert_events(part, write_id, prop, schema, first_row_id=start))
            written = writer.close()
        flush_early(fs, path)  # a large file: its writeback overlaps the other buckets'
        return written

    workers = max(1, min(threads, len(groups)))
    if workers == 1:
        written = [write(bucket, index) for bucket, index in groups.items()]
    else:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            written = list(pool.map(write, groups.keys(), groups.values()))
    return WrittenDirectory(relative, tuple(written), rows.num_rows)


def write_deletes(fs: pafs.FileSystem, location: str, partition: str,
                  keys: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32],
                              npt.NDArray[np.int64]],
                  *, write_id: int, statement_id: int, schema: pa.Schema,
                  compression: str = ORC_COMPRESSION) -> WrittenDirectory | None:
    """Write delete events for ROW__IDs ``keys`` as ``delete_delta_w_w_s``.

    Each event goes to the ``bucket_N`` of the writer id in its bucket property, which is what
    the readers require (spec §4: a bucket file holds one bucket's events).
    """
    write_ids, bucket_props, row_ids = keys
    if len(row_ids) == 0:
        return None
    name = delta_name(write_id, write_id, statement_id, delete=True)
    relative = afs.join(partition, name) if partition else name
    directory = prepare_directory(fs, location, relative)
    writers = _writer_ids(bucket_props)
    written: list[WrittenFile] = []
    for bucket, index in _groups(writers).items():
        events = delete_events(write_ids[index], bucket_props[index], row_ids[index], write_id,
                               schema)
        written.append(write_event_file(fs, afs.join(directory, bucket_file_name(bucket)),
                                        events,
                                        compression=codec_for(compression, events.num_rows),
                                        stripe_size=DELTA_STRIPE_SIZE))
    return WrittenDirectory(relative, tuple(written), len(row_ids))


class ChunkedRows:
    """Rows gathered chunk by chunk. pyarrow's ``take`` on a table of several chunks first
    concatenates every chunk (a copy of the whole input, about 0.1 s and 540 MB for 10M
    benchmark rows, paid by each of the ten buckets' gathers, which is most of why a 10M
    insert read from an Arrow file of six batches cost more per row than a 1M one of one
    batch); taking each chunk's share of the indices from that chunk copies only the rows
    taken, and the pieces stay the chunks of the result."""

    def __init__(self, rows: pa.Table) -> None:
        self.rows = rows
        self.batches = rows.to_batches()  # zero-copy; aligns columns chunked differently
        self.starts = np.cumsum([0] + [b.num_rows for b in self.batches])

    def take(self, index: npt.NDArray[np.int64]) -> pa.Table:
        """The rows at ``index`` (ascending, as ``_groups`` gives them), in that order."""
        if len(self.batches) <= 1:
            return self.rows.take(pa.array(index))
        cuts = np.searchsorted(index, self.starts)
        pieces = [batch.take(pa.array(index[lo:hi] - start))
                  for batch, start, lo, hi in zip(self.batches, self.starts, cuts, cuts[1:],
                                                  strict=False) if hi > lo]
        return pa.Table.from_batches(pieces, schema=self.rows.schema)


def _writer_ids(bucket_props: npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
    props = np.unique(bucket_props)
    lookup: Mapping[int, int] = {int(p): BucketCodec.decode(int(p))[0] for p in props}
    out: npt.NDArray[np.int32] = np.array([lookup[int(p)] for p in props], dtype=np.int32)[
        np.searchsorted(props, bucket_props)]
    return out


def _groups(buckets: npt.NDArray[np.int32]) -> dict[int, npt.NDArray[np.int64]]:
    """Row indices per bucket id, each in original order."""
    if len(buckets) == 0:
        return {}
    low, high = int(buckets.min()), int(buckets.max())
    if low == high:
        return {low: np.arange(len(buckets), dtype=np.int64)}
    # Arrow's sort is stable, and over a small range of integers (bucket ids) a counting
    # sort: 3 ms for 2M rows in ten buckets where numpy's stable argsort (a radix sort of
    # the ids as bytes) takes 6-10, every row waiting for it before any bucket file starts
    order = pc.array_sort_indices(pa.array(buckets)).to_numpy().view(np.int64)
    if low >= 0 and high < 1 << 16:
        # the groups' bounds from a count of each id, not from the sorted ids (a gather, a
        # diff and a search of 4 bytes a row)
        counts = np.bincount(buckets)
        ends = np.cumsum(counts)
        return {int(b): order[ends[b] - counts[b]:ends[b]] for b in np.flatnonzero(counts)}
    sorted_buckets = buckets[order]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(sorted_buckets)) + 1))
    # views of ``order``: no per-bucket copy
    return {int(sorted_buckets[start]): chunk
            for start, chunk in zip(starts, np.split(order, starts[1:]), strict=True)}
