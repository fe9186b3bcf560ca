"""Executing one bucket of a compaction plan (in this process or a Spark task).

Output files are written into the compaction's ``_v<txn>`` directories, which no reader uses
until that transaction commits, so a unit can be re-run or abandoned at any time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidstore import fs as afs
from acidstore.layout import METADATA_FILE, MetadataAcid, bucket_file_name
from acidstore.orc.io import (
    BASE_STRIPE_SIZE,
    DELTA_STRIPE_SIZE,
    OrcFile,
    WrittenFile,
    write_event_file,
)
from acidstore.orc.schema import (
    ACID_FIELDS,
    BUCKET,
    CURRENT_TRANSACTION,
    INSERT,
    ORIGINAL_TRANSACTION,
    ROW,
    ROW_ID,
    ROW_ID_COLUMN,
    event_schema,
)
from acidstore.read.scan import PartitionDir, Scan
from acidstore.write.files import prepare_directory
from compaction.plan import BucketWork, EventFile

__all__ = ["BucketOutput", "prepare_outputs", "run_bucket"]


@dataclass(frozen=True)
class BucketOutput:
    """What one unit wrote."""

    bucket_id: int
    files: tuple[WrittenFile, ...]
    rows: int


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


def _sorted_by_key(events: pa.Table) -> pa.Table:
    order = pc.sort_indices(events, sort_keys=[(ORIGINAL_TRANSACTION, "ascending"),
                                               (BUCKET, "ascending"), (ROW_ID, "ascending"),
                                               (CURRENT_TRANSACTION, "descending")])
    return events.take(order)


def _conformed_rows(row: pa.Array, schema: pa.Schema) -> pa.StructArray:
    """A file's ``row`` struct in the table's current columns, matched by position (Hive's
    ``_colN`` names) with nulls for columns added after the file was written."""
    if isinstance(row, pa.ChunkedArray):
        row = row.combine_chunks()
    n = len(row)
    arrays = [row.field(i).cast(f.type) if i < row.type.num_fields else pa.nulls(n, f.type)
              for i, f in enumerate(schema)]
    return pa.StructArray.from_arrays(arrays, fields=list(schema), mask=row.is_null())


def _read_events(unit: BucketWork, files: Sequence[EventFile]) -> pa.Table:
    """Every valid event of ``files``: events of aborted (or unresolved) write ids dropped."""
    target = event_schema(unit.schema)
    parts = []
    for source in files:
        orc = OrcFile(unit.filesystem, source.path, logical_length=source.logical_length)
        table = orc.read(orc.physical_columns(list(ACID_FIELDS[:5]), None))
        table = table.rename_columns(list(ACID_FIELDS))
        unique, inverse = np.unique(table.column(CURRENT_TRANSACTION).to_numpy(),
                                    return_inverse=True)
        valid = np.array([unit.write_ids.is_write_id_valid(int(w)) for w in unique], dtype=bool)
        keep = valid[inverse]
        if not keep.all():
            table = table.filter(pa.array(keep))
        columns = [table.column(i).cast(target.field(i).type) for i in range(5)]
        columns.append(_conformed_rows(table.column(ROW), unit.schema))
        parts.append(pa.Table.from_arrays(columns, schema=target))
    if not parts:
        return target.empty_table()
    return _sorted_by_key(pa.concat_tables(parts))


def _write(unit: BucketWork, directory_name: str, events: pa.Table, stripe: int
           ) -> WrittenFile:
    path = afs.join(unit.partition_dir, directory_name, bucket_file_name(unit.bucket_id))
    return write_event_file(unit.filesystem, path, events, compression=unit.compression,
                            stripe_size=stripe)


def _major(unit: BucketWork) -> BucketOutput:
    scan = Scan(unit.filesystem, [], unit.write_ids, unit.txns, schema=unit.schema,
                partition_schema=pa.schema([]), with_row_id=True, threads=1,
                planned=[(PartitionDir(unit.partition_dir), s) for s in unit.splits])
    rows = scan.to_table()
    ids = rows.column(ROW_ID_COLUMN).combine_chunks()
    n = rows.num_rows
    events = pa.Table.from_arrays([
        pa.array(np.full(n, INSERT, np.int32)), ids.field("writeid"), ids.field("bucketid"),
        ids.field("rowid"), ids.field("writeid"),
        pa.StructArray.from_arrays([rows.column(f.name).combine_chunks() for f in unit.schema],
                                   fields=list(unit.schema)),
    ], schema=event_schema(unit.schema))
    if n == 0:  # every row of the bucket was deleted
        return BucketOutput(unit.bucket_id, (), 0)
    written = _write(unit, unit.outputs[0], _sorted_by_key(events), BASE_STRIPE_SIZE)
    return BucketOutput(unit.bucket_id, (written,), n)


def _minor(unit: BucketWork) -> BucketOutput:
    files = []
    rows = 0
    for events, directory in ((_read_events(unit, unit.inserts), unit.outputs[0]),
                              (_read_events(unit, unit.deletes), unit.outputs[1])):
        if events.num_rows:
            files.append(_write(unit, directory, events, DELTA_STRIPE_SIZE))
            rows += events.num_rows
    return BucketOutput(unit.bucket_id, tuple(files), rows)


def run_bucket(unit: BucketWork) -> BucketOutput:
    """Produce one bucket's output files (the output directories must exist)."""
    return _major(unit) if unit.kind == "major" else _minor(unit)
