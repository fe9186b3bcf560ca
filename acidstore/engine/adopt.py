"""Adopting existing files: a directory of plain ORC or Parquet files becomes a transactional
table, the explicit way for what ``create_table`` refuses over existing files.

Hive converts a plain table to a transactional one by keeping its files as *originals*:
pre-ACID files named ``N_0`` (``N_0_copy_K``) whose rows read with synthesised ROW__IDs (write
id 0, the file's bucket, the row's position), which later DELETE/UPDATE/MERGE address like
any other row and the first major compaction folds into a base. Adoption does the same: ORC
files are moved (renamed, never rewritten) into the table's partitions under original names;
Parquet files, which Hive's ACID reader cannot take as originals, are rewritten file for file
as ORC originals. A partition value goes to the directory acidstore's writes use for it
(``p=01`` and ``p=1`` of an integer column are one partition, ``p=1``), so the files of one
value end up in one directory, numbered on. The table is unbucketed: files written by
another engine do not hold rows by Hive's bucket hash.

It runs as every write does, plan -> execute -> publish, with a unit per file instead of a
statement's units, since originals carry no write id and no events:

- plan (``plan_adoption``): every source file checked (``adopt_source``) before anything
  moves, then the table created and each file given its place (``Placement``: values only);
- execute (``place_files``): the placements run on the engine's threads; a rewritten file is
  written under a hidden name and renamed, so no reader sees half of it; a failure puts back
  what was placed and drops the table;
- publish: the metastore records each original placed (name and size) in one call. No write
  records Hive's originals, and fsck must tell them from a file copied in later.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po
import pyarrow.parquet as pq

from acidstore.config import LOCAL_THREADS
from acidstore.engine import catalog
from acidstore.engine.adopt_source import (
    SourceFile,
    canonical,
    check_readable_timestamps,
    find_files,
    refuse_overlap,
    table_schema,
)
from acidstore.engine.core import WarehouseCore
from acidstore.engine.handle import TableHandle
from acidstore.errors import AcidStoreError, InvalidInputError
from acidstore.format.layout import original_file_name
from acidstore.format.orc.file_reader import decode_error
from acidstore.format.partitions import partition_path
from acidstore.io import fs as afs
from acidstore.metastore import OriginalFile

__all__ = ["AdoptionPlan", "Placement", "adopt_table", "place_files", "plan_adoption"]


@dataclass(frozen=True)
class Placement:
    """One source file's unit: where it goes, and whether it is rewritten (Parquet) or moved."""

    source: str
    target: str
    partition: str  # relative to the table's location, "" unpartitioned
    rewrite: bool


@dataclass(frozen=True)
class AdoptionPlan:
    """What an adoption does once its source passed every check: the table it created and
    the placement of each file."""

    table: TableHandle
    root: str
    placements: tuple[Placement, ...]


def adopt_table(wh: WarehouseCore, name: str, path: str, *, partition_by: Sequence[str] = (),
                schema: pa.Schema | None = None,
                properties: Mapping[str, str] | None = None) -> TableHandle:
    """Create table ``name`` holding the rows of the ORC/Parquet files below ``path``
    (Hive-style ``col=value`` directories for ``partition_by``), moving them into the table.
    ``schema`` (every column, partition ones too) is checked against the files; without it
    the files' schema is taken and partition columns are strings."""
    plan = plan_adoption(wh, name, path, partition_by=partition_by, schema=schema,
                         properties=properties)
    fs = wh.filesystem
    try:
        placed = place_files(fs, plan.placements)
        wh.metastore.record_originals(plan.table.name, placed)
    except BaseException:
        _undo(fs, plan.placements)
        with contextlib.suppress(AcidStoreError, OSError):
            catalog.drop_table(wh, name)
        raise
    for item in plan.placements:  # the Parquet sources, now that the table is whole
        if item.rewrite:
            with contextlib.suppress(OSError):
                fs.delete_file(item.source)
    _remove_empty_dirs(fs, plan.root, plan.table.location)
    return plan.table


def plan_adoption(wh: WarehouseCore, name: str, path: str, *, partition_by: Sequence[str],
                  schema: pa.Schema | None, properties: Mapping[str, str] | None
                  ) -> AdoptionPlan:
    """Check the source (typed errors naming the path, nothing moved), create the table and
    give each file its place: ``N_0`` in its partition's directory, numbered per partition
    in path order."""
    fs = wh.filesystem
    given, root = afs.resolve(path, fs if "://" not in str(path) else None)
    if given.type_name != fs.type_name:
        # files are moved (renamed), which only works within one filesystem; the path alone
        # would otherwise be looked up on the warehouse's filesystem
        raise InvalidInputError(
            f"adopting {path} as table {name}: the files are moved into the table, so they "
            f"must be on the warehouse's filesystem ({fs.type_name}), not {given.type_name}; "
            "copy them there first")
    if isinstance(fs, pafs.LocalFileSystem):
        root = os.path.abspath(root)  # errors name the place, whatever the working directory
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise InvalidInputError(f"adopting {root} as table {name}: not a directory")
    refuse_overlap(wh, root, name)
    columns = list(partition_by)
    found = find_files(fs, root, columns)
    if not found:
        raise InvalidInputError(f"adopting {root} as table {name}: no ORC or Parquet files")
    full = table_schema(fs, found, columns, schema, name)
    found = canonical(found, full, columns)
    check_readable_timestamps(fs, found, name)
    table = TableHandle(wh, catalog.create_table(
        wh, name, full, partition_by=columns, bucket_by=(), buckets=0, properties=properties))
    return AdoptionPlan(table, root, tuple(_placements(found, table.location, columns)))


def _placements(found: Sequence[SourceFile], location: str, partition_by: list[str]
                ) -> list[Placement]:
    counters: dict[tuple[str | None, ...], int] = {}
    out: list[Placement] = []
    for item in found:
        relative = partition_path(partition_by, list(item.values)) if partition_by else ""
        directory = afs.join(location, relative) if relative else location
        number = counters.get(item.values, 0)
        counters[item.values] = number + 1
        out.append(Placement(item.path, afs.join(directory, original_file_name(number)),
                             relative, item.format == "parquet"))
    return out


def place_files(fs: pafs.FileSystem, placements: Sequence[Placement],
                threads: int = LOCAL_THREADS) -> list[OriginalFile]:
    """Execute the placements on up to ``threads`` threads (a Parquet rewrite decodes and
    encodes in pyarrow, which releases the GIL); the record of each placed file in order."""
    for directory in sorted({p.target.rsplit("/", 1)[0] for p in placements}):
        afs.make_dirs(fs, directory)
    if threads <= 1 or len(placements) <= 1:
        return [_place(fs, p) for p in placements]
    with ThreadPoolExecutor(max_workers=min(threads, len(placements))) as pool:
        return list(pool.map(lambda p: _place(fs, p), placements))


def _place(fs: pafs.FileSystem, item: Placement) -> OriginalFile:
    """One unit: the file moved, or rewritten as ORC under a hidden name and renamed."""
    if item.rewrite:
        try:
            with fs.open_input_file(item.source) as source:
                rows = pq.read_table(source)
        except FileNotFoundError:
            raise
        except (pa.ArrowException, OSError) as exc:  # the storage failing, or bad bytes
            raise decode_error(exc, item.source, "adopt a Parquet file") from exc
        sink = pa.BufferOutputStream()
        po.write_table(rows, sink, compression="zstd")
        afs.write_bytes(fs, item.target, sink.getvalue())
    else:
        with afs.storage_errors(item.source, action="move a file into the table"):
            fs.move(item.source, item.target)
    size = fs.get_file_info(item.target).size or 0
    return OriginalFile(item.partition, item.target.rsplit("/", 1)[1], size)


def _undo(fs: pafs.FileSystem, placements: Sequence[Placement]) -> None:
    """Put the source back as it was: moved files back, rewritten ones deleted. Units run on
    threads, so after a failure any of them may have run: a unit ran when its target exists
    (the table was created empty, and a rewrite appears only by its final rename)."""
    for item in reversed(placements):
        if fs.get_file_info(item.target).type != pafs.FileType.File:
            continue
        with contextlib.suppress(OSError):
            if item.rewrite:
                fs.delete_file(item.target)
            else:
                fs.move(item.target, item.source)


def _remove_empty_dirs(fs: pafs.FileSystem, root: str, keep: str) -> None:
    """The source's partition directories the move emptied, deepest first (not ``keep``)."""
    dirs = [afs.join(root, relative) for relative, info in _tree(fs, root) if info]
    for directory in [*sorted(dirs, key=len, reverse=True), root]:
        if directory != keep and not afs.list_dir(fs, directory):
            with contextlib.suppress(OSError):
                fs.delete_dir(directory)


def _tree(fs: pafs.FileSystem, root: str) -> list[tuple[str, bool]]:
    selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    return [(afs.relative(root, i.path), i.type == pafs.FileType.Directory)
            for i in fs.get_file_info(selector)]
