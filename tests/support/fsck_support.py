"""Real corruptions of a real warehouse table, for the fsck tests.

Each corruption changes files on disk the way an operator, a crash or a broken copy would,
and returns what fsck must report: the check code and the path it names. They pick their
victim among the directories the table's current snapshot reads (``selected``), so they
work after any sequence of writes and compactions.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po

from acidstore import Table
from acidstore.engine import writes
from acidstore.engine.handle import TableHandle, handle_of
from acidstore.engine.transaction import TransactionCore
from acidstore.format.directory import AcidState, acid_state
from acidstore.format.layout import bucket_file_name
from acidstore.format.orc.acid_metadata import KEY_INDEX_KEY
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.file_writer import write_event_file
from acidstore.format.orc.footer import add_user_metadata
from acidstore.format.orc.schema import DELETE, event_schema, row_struct

Expected = tuple[str, str]
"""(check code, path) fsck must report."""


def state_of(table: Table, partition: Path) -> AcidState:
    txns, write_ids = handle_of(table).read_snapshot()
    return acid_state(partition, write_ids, txns)


def partitions(table: Table) -> list[Path]:
    root = Path(table.location)
    names = handle_of(table).info.partition_schema.names
    if not names:
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(f"{names[0]}="))


def selected(table: Table, *, delete: bool | None = None) -> list[Path]:
    """Directories the current snapshot reads (only delete deltas, or only insert ones)."""
    out = []
    for partition in partitions(table):
        state = state_of(table, partition)
        names = ([state.base] if state.base else []) + state.deltas
        for name in names:
            is_delete = name.startswith("delete_delta_")
            if delete is None or delete == is_delete:
                out.append(partition / name)
    return out


def bucket_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith("bucket_"))


def _insert_file(table: Table) -> Path:
    return next(f for d in selected(table, delete=False) for f in bucket_files(d)
                if OrcFile(pafs.LocalFileSystem(), str(f)).nrows > 0)


def _events(path: Path) -> pa.Table:
    return po.ORCFile(str(path)).read()


def _rewrite(path: Path, events: pa.Table) -> None:
    """Write ``events`` with Hive's metadata computed from them (a consistent key index)."""
    path.unlink()
    write_event_file(pafs.LocalFileSystem(), str(path), events)


def _written(table: Table) -> list[Path]:
    """Selected directories with bucket files, which a write or a compaction made (the
    metastore records the files of both)."""
    return [d for d in selected(table) if bucket_files(d)]


def remove_directory(table: Table) -> Expected:
    victim = _written(table)[-1]
    shutil.rmtree(victim)
    return "missing_directory", str(victim)


def remove_bucket_file(table: Table) -> Expected:
    victim = bucket_files(_written(table)[-1])[-1]
    victim.unlink()
    return "missing_file", str(victim.parent)


def truncate_file(table: Table) -> Expected:
    victim = _insert_file(table)
    victim.write_bytes(b"")
    return "empty_file", str(victim)


def garbage_file(table: Table) -> Expected:
    victim = _insert_file(table)
    victim.write_bytes(b"\x00garbage, not ORC" * 50)
    return "unreadable_file", str(victim)


def drop_key_index(table: Table) -> Expected:
    victim = _insert_file(table)
    events = _events(victim)
    victim.unlink()
    po.write_table(events, str(victim))
    return "missing_acid_metadata", str(victim)


def wrong_key_index(table: Table) -> Expected:
    victim = _insert_file(table)
    events = _events(victim)
    sink = pa.BufferOutputStream()
    po.write_table(events, sink)
    victim.write_bytes(add_user_metadata(sink.getvalue().to_pybytes(),
                                         {KEY_INDEX_KEY: b"1,536870912,999999;"}))
    return "key_index_mismatch", str(victim)


def duplicate_row_id(table: Table) -> Expected:
    victim = _insert_file(table)
    events = _events(victim)
    _rewrite(victim, pa.concat_tables([events.slice(0, 1), events]))
    return "duplicate_row_id", str(victim)


def unsorted_row_ids(table: Table) -> Expected:
    victim = next(f for d in selected(table, delete=False) for f in bucket_files(d)
                  if OrcFile(pafs.LocalFileSystem(), str(f)).nrows > 1)
    events = _events(victim)
    _rewrite(victim, events.take(list(range(events.num_rows))[::-1]))
    return "row_id_order", str(victim)


def dangling_delete(table: Table) -> Expected:
    """A delete event for a row id no write made: appended to a delete file the snapshot
    reads, or (when there is none) in a delete delta of its own."""
    files = [f for d in selected(table, delete=True) for f in bucket_files(d)]
    schema = pa.schema(list(handle_of(table).info.schema))
    if files:
        victim = files[0]
        events = _events(victim)
        ghost = events.slice(events.num_rows - 1).to_pylist()[0]
        ghost["rowId"] = 10**9
        _rewrite(victim, pa.concat_tables([events, pa.Table.from_pylist(
            [ghost], schema=events.schema)]))
        return "dangling_delete", str(victim)
    insert = _insert_file(table)
    bucket = int(insert.name.split("_")[1])
    write_id = table.snapshot().high_watermark  # above any base: the snapshot reads it
    directory = insert.parent.parent / f"delete_delta_{write_id:07d}_{write_id:07d}_0009"
    directory.mkdir()
    victim = directory / bucket_file_name(bucket)
    write_event_file(pafs.LocalFileSystem(), str(victim), pa.table({
        "operation": pa.array([DELETE], pa.int32()),
        "originalTransaction": pa.array([1], pa.int64()),
        "bucket": pa.array([BucketCodec.V1.encode(bucket, 0)], pa.int32()),
        "rowId": pa.array([10**9], pa.int64()),
        "currentTransaction": pa.array([write_id], pa.int64()),
        "row": pa.nulls(1, row_struct(schema)),
    }, schema=event_schema(schema)))
    return "dangling_delete", str(victim)


def copied_directory(table: Table) -> Expected:
    """A committed delta copied under a write id never allocated."""
    source = next(d for d in selected(table, delete=False) if bucket_files(d))
    target = source.parent / "delta_0000090_0000090_0000"
    shutil.copytree(source, target)
    return "unknown_write", str(target)


def copied_statement(table: Table) -> Expected:
    """A committed write's delta copied under a statement id that write never used: read
    as more rows of that write."""
    source = next(d for d in selected(table, delete=False)
                  if bucket_files(d) and "_v" not in d.name)
    target = source.parent / f"{source.name.rsplit('_', 1)[0]}_0007"
    shutil.copytree(source, target)
    return "unknown_write", str(target)


def foreign_file(table: Table) -> Expected:
    victim = partitions(table)[0] / "junk.txt"
    victim.write_text("not table data")
    return "foreign_file", str(victim)


def stray_directory(table: Table) -> Expected:
    names = handle_of(table).info.partition_schema.names
    victim = Path(table.location) / ("other=1" if names else "misc")
    victim.mkdir()
    return "stray_directory", str(victim)


def aborted_leftover(table: Table) -> Expected:
    """An aborted write whose files a crash left behind (its abort is recorded)."""
    rows = table.to_arrow().slice(0, 1)
    wh = handle_of(table).core
    txn = TransactionCore.begin(wh)
    result = writes.insert(TableHandle.open(wh, table.name, txn), rows, "insert")
    parent = Path(table.location)
    written = [p for p in parent.rglob(f"delta_{result.write_id:07d}_*")]
    saved = parent.parent / "_saved"
    for i, path in enumerate(written):
        shutil.copytree(path, saved / str(i))
    txn.abort()
    for i, path in enumerate(written):
        shutil.copytree(saved / str(i), path)
    shutil.rmtree(saved)
    return "aborted_leftover", str(written[0])


CORRUPTIONS: dict[str, Callable[[Table], Expected]] = {
    f.__name__: f for f in (
        remove_directory, remove_bucket_file, truncate_file, garbage_file, drop_key_index,
        wrong_key_index, duplicate_row_id, unsorted_row_ids, dangling_delete,
        copied_directory, copied_statement, foreign_file, stray_directory, aborted_leftover)
}
