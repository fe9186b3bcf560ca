"""Executing one bucket of a compaction plan (in this process or a Spark task).

Output files are written into the compaction's ``_v<txn>`` directories, which no reader uses
until that transaction commits, so a unit can be re-run or abandoned at any time.

A unit streams: its inputs are decoded in batches of ``batch_rows`` rows (not whole stripes:
a base's stripe can hold a whole bucket), merged in key order by ``streams.merge_sorted``
(every input is already sorted) and written batch by batch with ``orc.stream.EventFileWriter``.
Events held at once are one batch per input plus the stripe being written, however large the
bucket.

- Major: one input per split (a base, insert delta or original file, its deletes applied by
  the vectorized reader); surviving rows keep their ROW__IDs, in ROW__ID order.
- Minor: one input per insert or delete event file; every valid event is kept as it is, in
  Hive's merger order (originalTransaction, bucket, rowId ascending, currentTransaction
  descending), inserts and deletes into their two outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.errors import CorruptFileError, MissingDataError
from acidstore.format.layout import METADATA_FILE, MetadataAcid, bucket_file_name
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.file_writer import DELTA_STRIPE_SIZE, WrittenFile
from acidstore.format.orc.schema import (
    ACID_FIELDS,
    BUCKET,
    CURRENT_TRANSACTION,
    INSERT,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
    event_schema,
    is_dropped,
)
from acidstore.format.orc.stream import DEFAULT_BATCH_ROWS, EventFileWriter
from acidstore.io import fs as afs
from acidstore.read.keys import valid_write_id_mask
from acidstore.read.registry import DeleteCache
from acidstore.read.split_source import SplitBatch
from acidstore.read.splits import Split
from acidstore.read.vectorized import read_split
from acidstore.write.files import prepare_directory
from compaction.memory import release_free_memory
from compaction.plan import BucketWork, EventFile
from compaction.streams import Keyed, merge_sorted

__all__ = ["OUTPUT_STRIPE_SIZE", "BucketOutput", "prepare_outputs", "run_bucket"]

#: the stripe size of every output, a base's too: the size the table's inserts write (Hive's
#: delta stripe). A base stripe of 64 MiB held a whole bucket of up to 64 MiB in the ORC
#: writer's buffers (35 MB resident per writer at 10M rows, 18 MB with 8 MiB) and gave a
#: bucket file one stripe where a plain copy of it has four: readers decode, and hold, a
#: stripe at a time.
OUTPUT_STRIPE_SIZE = DELTA_STRIPE_SIZE


@dataclass(frozen=True)
class BucketOutput:
    """What one unit wrote. ``largest_batch``: the most events it held at once between
    reading and writing (one merged round), which stays bounded as buckets grow."""

    bucket_id: int
    files: tuple[WrittenFile, ...]
    rows: int
    largest_batch: int = 0


def prepare_outputs(work: Sequence[BucketWork]) -> None:
    """Create every output directory once (also for buckets with no rows: an empty
    compaction still produces its directories, as Hive's does)."""
    done: set[tuple[str, str]] = set()
    for unit in work:
        for name in unit.outputs:
            if (unit.partition_dir, name) in done:
                continue
            done.add((unit.partition_dir, name))
            directory = prepare_directory(unit.filesystem, unit.partition_dir, name)
            if name.startswith("base_"):
                # Hive 3 readers tell a compacted base from an INSERT OVERWRITE one by this
                afs.write_bytes(unit.filesystem, afs.join(directory, METADATA_FILE),
                                MetadataAcid(data_format="compacted").to_json().encode())


def _conformed_rows(row: pa.Array, schema: pa.Schema) -> pa.StructArray:
    """A file's ``row`` struct in the table's current file schema, matched by position
    (Hive's ``_colN`` names) with nulls for columns added after the file was written and for
    dropped columns (their values leave the files as they are compacted)."""
    if isinstance(row, pa.ChunkedArray):
        row = row.combine_chunks()
    n = len(row)
    arrays = [row.field(i).cast(f.type) if i < row.type.num_fields and not is_dropped(f.name)
              else pa.nulls(n, f.type) for i, f in enumerate(schema)]
    return pa.StructArray.from_arrays(arrays, fields=list(schema),
                                      mask=row.is_null() if row.null_count else None)


def _file_events(unit: BucketWork, source: EventFile, target: pa.Schema, batch_rows: int
                 ) -> Iterator[Keyed]:
    """The valid events of one delta file, batch by batch, keyed in Hive's merger order
    (currentTransaction descending, hence negated). Events of aborted (or unresolved) write
    ids are dropped. The file is opened with the bytes it must hold, so one gone, emptied or
    cut short since its commit is ``MissingDataError`` (``OrcFile``'s check, a read's), and
    one holding other events than its compaction recorded is ``DataError``: copied as it
    is, it would fold a gap (or a duplicate) into the output for good."""
    orc = OrcFile(unit.filesystem, source.path, logical_length=source.logical_length,
                  size=source.size, events=source.rows)
    columns = orc.physical_columns(list(ACID_FIELDS[:5]), None)
    for raw in orc.batches(columns, batch_rows):
        batch = raw.rename_columns(list(ACID_FIELDS))
        current = batch.column(CURRENT_TRANSACTION).to_numpy()
        keep = valid_write_id_mask(np.asarray(current, dtype=np.int64), unit.write_ids)
        if not keep.all():
            batch = batch.filter(pa.array(keep))
            current = current[keep]
        if not batch.num_rows:
            continue
        arrays = [batch.column(i).cast(target.field(i).type) for i in range(5)]
        arrays.append(_conformed_rows(batch.column(ROW), unit.schema))
        keys = (np.asarray(batch.column(ORIGINAL_TRANSACTION).to_numpy(), dtype=np.int64),
                np.asarray(batch.column(BUCKET).to_numpy(), dtype=np.int32),
                np.asarray(batch.column(ROW_ID).to_numpy(), dtype=np.int64),
                -np.asarray(current, dtype=np.int64))
        yield Keyed(pa.RecordBatch.from_arrays(arrays, schema=target), keys)


def _split_events(unit: BucketWork, split: Split, cache: DeleteCache, target: pa.Schema,
                  batch_rows: int) -> Iterator[Keyed]:
    """The surviving rows of one split (its deletes applied) as insert events that keep
    their ROW__IDs, batch by batch."""
    for decoded in read_split(unit.filesystem, split, unit.write_ids, None, with_row_id=True,
                              cache=cache, batch_rows=batch_rows):
        yield _as_inserts(decoded, unit.schema, target)


def _as_inserts(decoded: SplitBatch, schema: pa.Schema, target: pa.Schema) -> Keyed:
    keys = decoded.keys
    assert keys is not None and decoded.row is not None
    n = decoded.num_rows
    write_id = pa.array(keys.write_id, pa.int64())
    batch = pa.RecordBatch.from_arrays([
        pa.array(np.full(n, INSERT, np.int32)), write_id, pa.array(keys.bucket, pa.int32()),
        pa.array(keys.row_id, pa.int64()), write_id, _conformed_rows(decoded.row, schema),
    ], schema=target)
    return Keyed(batch, (keys.write_id, keys.bucket, keys.row_id))


def _write(unit: BucketWork, directory_name: str, merged: Iterable[pa.Table], stripe: int,
           batch_rows: int) -> tuple[WrittenFile | None, int]:
    """Write merged events into ``directory_name``'s bucket file (none when there are no
    events); also returns the most events of one merged batch."""
    path = afs.join(unit.partition_dir, directory_name, bucket_file_name(unit.bucket_id))
    writer: EventFileWriter | None = None
    largest = 0
    try:
        for events in merged:
            largest = max(largest, events.num_rows)
            if writer is None:
                writer = EventFileWriter(unit.filesystem, path, events.schema,
                                         compression=unit.compression, stripe_size=stripe,
                                         batch_rows=batch_rows)
            writer.write(events)
        return (writer.close() if writer is not None else None), largest
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


def _major(unit: BucketWork, batch_rows: int, stripe: int) -> BucketOutput:
    target = event_schema(unit.schema)
    cache = DeleteCache()  # the splits of a bucket share its delete files
    merged = merge_sorted([_split_events(unit, split, cache, target, batch_rows)
                           for split in unit.splits], [split.path for split in unit.splits])
    written, largest = _write(unit, unit.outputs[0], merged, stripe, batch_rows)
    if written is None:  # every row of the bucket was deleted
        return BucketOutput(unit.bucket_id, (), 0, largest)
    return BucketOutput(unit.bucket_id, (written,), written.rows, largest)


def _minor(unit: BucketWork, batch_rows: int, stripe: int) -> BucketOutput:
    target = event_schema(unit.schema)
    files: list[WrittenFile] = []
    largest = 0
    for sources, directory in ((unit.inserts, unit.outputs[0]), (unit.deletes, unit.outputs[1])):
        merged = merge_sorted([_file_events(unit, source, target, batch_rows)
                               for source in sources], [source.path for source in sources])
        written, most = _write(unit, directory, merged, stripe, batch_rows)
        largest = max(largest, most)
        if written is not None:
            files.append(written)
    return BucketOutput(unit.bucket_id, tuple(files), sum(f.rows for f in files), largest)


def run_bucket(unit: BucketWork, batch_rows: int = DEFAULT_BATCH_ROWS, *,
               stripe_size: int = OUTPUT_STRIPE_SIZE) -> BucketOutput:
    """Produce one bucket's output files (the output directories must exist).
    ``batch_rows``: the most rows decoded from an input, or handed to the writer, at once;
    ``stripe_size``: the ORC stripe size of the outputs. The memory the unit freed is handed
    back to the operating system when it ends (``memory.release_free_memory``), so a process
    that runs unit after unit does not keep the largest one's."""
    try:
        if unit.kind == "major":
            return _major(unit, batch_rows, stripe_size)
        return _minor(unit, batch_rows, stripe_size)
    except CorruptFileError as exc:
        missing = _emptied(unit, exc)
        if missing is None:
            raise
        raise missing from exc
    finally:
        release_free_memory()


def _emptied(unit: BucketWork, exc: CorruptFileError) -> MissingDataError | None:
    """``exc`` as the missing data it is when the input that failed to decode was emptied or
    cut short since its commit (asked only on this error path, with stats). Every input was
    planned non-empty (a recorded file holds events; a listed empty one is skipped), so an
    empty one was emptied. A compaction output's files have no bytes of their own in the
    record, only their sum: files that no longer add up to it were changed."""
    path = exc.path
    if path is None:
        return None
    fs = unit.filesystem
    try:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.File and info.size == 0:
            return MissingDataError(f"committed bucket file {path} is empty, yet this "
                                    "compaction must read its events (emptied by hand?)",
                                    path=path)
        directory = path.rsplit("/", 1)[0]
        for recorded, total, names in unit.recorded_bytes:
            if recorded != directory or not names:
                continue
            infos = fs.get_file_info([afs.join(directory, name) for name in names])
            held = sum(i.size or 0 for i in infos if i.type == pafs.FileType.File)
            if held != total:
                return MissingDataError(
                    f"the compaction that wrote {directory} committed {total} bytes of bucket "
                    f"files there, but they hold {held}: this one was cut short or changed "
                    "since (by hand?)", path=path)
    except OSError:
        return None
    return None
