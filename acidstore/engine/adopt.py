"""Adopting existing files: a directory of plain ORC or Parquet files becomes a transactional
table (layer L4), the explicit way for what ``create_table`` refuses over existing files.

Hive converts a plain table to a transactional one by keeping its files as *originals*:
pre-ACID files named ``N_0`` (``N_0_copy_K``) whose rows read with synthesised ROW__IDs (write
id 0, the file's bucket, the row's position), which later DELETE/UPDATE/MERGE address like
any other row and the first major compaction folds into a base. Adoption does the same: ORC
files are moved (renamed, never rewritten) into the table's partitions under original names;
Parquet files, which Hive's ACID reader cannot take as originals, are rewritten file for file
as ORC originals. Every file is checked first (format, schema, partition directory names and
values), so a directory that cannot be adopted is refused with a typed error naming the path
before anything moves; a partition value goes to the directory acidstore's writes use for it
(``p=01`` and ``p=1`` of an integer column are one partition, ``p=1``), so the files of one
value end up in one directory, numbered on; a failure while moving puts back what was moved
and drops the table.
Since the files are moved away, a source sharing files with the warehouse (its directory, a
table's location, the metastore file) is refused: adopting a table's directory would empty
that table. The metastore records each original placed (name and size): no write records
Hive's originals, and fsck must tell them from a file copied in later. The table is
unbucketed: files written by another engine do not hold rows by Hive's bucket hash.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po
import pyarrow.parquet as pq

from acidstore.engine import catalog
from acidstore.engine.core import WarehouseCore
from acidstore.engine.handle import TableHandle
from acidstore.errors import (
    AcidStoreError,
    InvalidInputError,
    InvalidPartitionValueError,
    SchemaMismatchError,
    TableNotFoundError,
)
from acidstore.format.layout import is_acid_directory_name, is_hidden, original_file_name
from acidstore.format.partitions import parse_partition_path, partition_path
from acidstore.io import fs as afs
from acidstore.metastore import OriginalFile, SqliteMetastore
from acidstore.write.conform import canonical_partition_values
from acidstore.write.timestamps import check_timestamps, holds_timestamps

__all__ = ["adopt_table"]

_ORC, _PARQUET = b"ORC", b"PAR1"


@dataclass(frozen=True)
class _Found:
    """One data file to adopt: where it is, its format, and its partition's values."""

    path: str
    format: str  # "orc" or "parquet"
    values: tuple[str | None, ...]


def adopt_table(wh: WarehouseCore, name: str, path: str, *, partition_by: Sequence[str] = (),
                schema: pa.Schema | None = None,
                properties: Mapping[str, str] | None = None) -> TableHandle:
    """Create table ``name`` holding the rows of the ORC/Parquet files below ``path``
    (Hive-style ``col=value`` directories for ``partition_by``), moving them into the table.
    ``schema`` (every column, partition ones too) is checked against the files; without it
    the files' schema is taken and partition columns are strings."""
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
    _refuse_overlap(wh, root, name)
    found = _walk(fs, root, list(partition_by))
    if not found:
        raise InvalidInputError(f"adopting {root} as table {name}: no ORC or Parquet files")
    full = _schema(fs, found, list(partition_by), schema, name)
    found = _canonical(found, full, list(partition_by))
    _check_timestamps(fs, found, name)
    table = TableHandle(wh, catalog.create_table(
        wh, name, full, partition_by=list(partition_by), bucket_by=(), buckets=0,
        properties=properties))
    moved: list[tuple[str, str, bool]] = []  # (source, target, rewritten)
    try:
        _move_all(fs, found, table, list(partition_by), moved)
        wh.metastore.record_originals(table.name, _originals(fs, table, moved))
    except BaseException:
        for source, target, rewritten in reversed(moved):
            with contextlib.suppress(OSError):
                if rewritten:
                    fs.delete_file(target)
                else:
                    fs.move(target, source)
        with contextlib.suppress(AcidStoreError, OSError):
            catalog.drop_table(wh, name)
        raise
    for source, _, rewritten in moved:  # the Parquet sources, now that the table is whole
        if rewritten:
            with contextlib.suppress(OSError):
                fs.delete_file(source)
    _remove_empty_dirs(fs, root, table.location)
    return table


def _refuse_overlap(wh: WarehouseCore, root: str, name: str) -> None:
    """Adoption moves the files below ``root`` away and removes the directories it empties,
    so ``root`` must share no file with the warehouse (its tables, its metastore file), with
    any table placed outside it, or with the metastore file wherever that lives: adopting a
    table's own directory would empty that table. Paths are compared resolved (absolute,
    symlinks followed), so no spelling of a guarded directory gets through."""
    fs = wh.filesystem
    source = _real(fs, root)
    for what, guarded in _guarded(wh):
        relation = _relation(source, _real(fs, guarded))
        if relation:
            raise InvalidInputError(
                f"adopting {root} as table {name}: refused, it {relation} {what} {guarded}; "
                "adoption moves the source's files away, which would take them from under "
                "it (copy the files to a directory outside the warehouse and adopt the copy)")


def _guarded(wh: WarehouseCore) -> Iterator[tuple[str, str]]:
    """(what, path) of everything a source must not overlap."""
    for table in wh.metastore.list_tables():
        with contextlib.suppress(TableNotFoundError):  # dropped meanwhile
            yield f"the location of table {table}", wh.table_info(table).location
    if isinstance(wh.metastore, SqliteMetastore):
        yield "the metastore file", wh.metastore.path
    yield "the warehouse directory", wh.location


def _real(fs: pafs.FileSystem, path: str) -> str:
    """``path`` as the filesystem resolves it: a local one follows symlinks and ``..``."""
    if isinstance(fs, pafs.LocalFileSystem):
        return os.path.realpath(path)
    return posixpath.normpath("/" + path.lstrip("/"))


def _relation(source: str, guarded: str) -> str:
    """How ``source`` overlaps ``guarded`` ("" when they share nothing)."""
    if source == guarded:
        return "is"
    if guarded.startswith(source.rstrip("/") + "/"):
        return "contains"
    if source.startswith(guarded.rstrip("/") + "/"):
        return "lies inside"
    return ""


def _walk(fs: pafs.FileSystem, root: str, partition_by: list[str]) -> list[_Found]:
    """Every data file below ``root``, checked for its place: files only at the partition
    depth, directories only ``col=value`` of the expected column, hidden names skipped."""
    found: list[_Found] = []
    pending: list[tuple[str, tuple[str | None, ...]]] = [(root, ())]
    while pending:
        directory, values = pending.pop()
        for entry in afs.list_dir(fs, directory):
            path = afs.join(directory, entry.name)
            if is_hidden(entry.name):
                continue
            depth = len(values)
            if entry.is_dir:
                if is_acid_directory_name(entry.name):
                    raise InvalidInputError(
                        f"{path} is a Hive ACID directory: the files are already a "
                        "transactional table's (read them with acidstore.read_directory)")
                if depth == len(partition_by):
                    raise InvalidInputError(f"{path}: a directory below the last partition "
                                            f"level ({partition_by or 'unpartitioned'})")
                pending.append((path, (*values, _value(entry.name, partition_by[depth],
                                                      path))))
                continue
            if depth != len(partition_by):
                raise InvalidInputError(f"{path}: a file outside the partition directories "
                                        f"{partition_by}")
            found.append(_Found(path, _format(fs, path), values))
    return sorted(found, key=lambda f: f.path)


def _value(name: str, column: str, path: str) -> str | None:
    try:
        ((given, value),) = parse_partition_path(name)
    except (InvalidPartitionValueError, ValueError) as exc:
        raise InvalidInputError(f"{path}: not a partition directory of {column!r} "
                                f"(expected {column}=<value>)") from exc
    if given.lower() != column.lower():
        raise InvalidInputError(f"{path}: a partition directory of {given!r}, where the "
                                f"table is partitioned by {column!r} at this level")
    return value


def _format(fs: pafs.FileSystem, path: str) -> str:
    with fs.open_input_file(path) as f:
        head = f.read(4)
    if head.startswith(_ORC):
        return "orc"
    if head == _PARQUET:
        return "parquet"
    raise InvalidInputError(f"{path}: neither an ORC nor a Parquet file")


def _file_schema(fs: pafs.FileSystem, found: _Found) -> pa.Schema:
    try:
        with fs.open_input_file(found.path) as f:
            if found.format == "orc":
                schema: pa.Schema = po.ORCFile(f).schema
            else:
                schema = pq.read_schema(f)
    except (pa.ArrowException, OSError) as exc:
        raise InvalidInputError(f"{found.path}: unreadable {found.format} file: {exc}") from exc
    return _normal(schema)


def _normal(schema: pa.Schema) -> pa.Schema:
    """Field names and types only (Parquet's metadata off), timestamps in microseconds: pyarrow
    reports an ORC file's as nanoseconds and a Parquet file's as written, and Hive and Spark
    hold microseconds."""
    def plain(kind: pa.DataType) -> pa.DataType:
        return pa.timestamp("us", kind.tz) if pa.types.is_timestamp(kind) else kind

    return pa.schema([pa.field(f.name, plain(f.type)) for f in schema])


def _schema(fs: pafs.FileSystem, found: list[_Found], partition_by: list[str],
            given: pa.Schema | None, name: str) -> pa.Schema:
    """The table's schema: the files' (all alike), with the partition columns after."""
    first = _file_schema(fs, found[0])
    _refuse_partition_columns(first, found[0].path, partition_by)
    for other in found[1:]:
        schema = _file_schema(fs, other)
        if not schema.equals(first):
            raise SchemaMismatchError(f"adopting table {name}: {other.path} has columns "
                                      f"{schema}, where {found[0].path} has {first}")
    if given is None:
        return pa.schema([*first, *(pa.field(p, pa.string()) for p in partition_by)])
    lowered = {p.lower() for p in partition_by}
    user = pa.schema([f for f in given if f.name.lower() not in lowered])
    if not _normal(user).equals(first):
        raise SchemaMismatchError(f"adopting table {name}: the files have columns {first}, "
                                  f"not the given {user}")
    return given


def _refuse_partition_columns(schema: pa.Schema, path: str, partition_by: list[str]) -> None:
    """Hive's layout keeps a partition column's values in the directory names only: a file
    that holds the column too would give the table two columns of one name, and no rule says
    which value a row has."""
    lowered = {p.lower(): p for p in partition_by}
    for field in schema:
        if field.name.lower() in lowered:
            raise SchemaMismatchError(
                f"{path}: the partition column {lowered[field.name.lower()]!r} is also a "
                f"column of the file ({field.name!r}); in Hive's layout a partition column's "
                "values are only in the directory names (drop the column from the files, or "
                "partition by another column)")


def _check_timestamps(fs: pafs.FileSystem, found: list[_Found], name: str) -> None:
    """Timestamps every reader can read back, before anything moves: a Parquet file's are
    rewritten as ORC, so they get the insert path's check; an ORC file's are moved as they
    are, so one pyarrow's reader cannot decode (outside int64 nanoseconds) is refused too,
    since it would make every later read of the table fail."""
    for item in found:
        with fs.open_input_file(item.path) as f:
            reader = pq.ParquetFile(f) if item.format == "parquet" else po.ORCFile(f)
            schema = reader.schema_arrow if item.format == "parquet" else reader.schema
            for field in schema:
                if not holds_timestamps(field.type):  # nested ones too: stored alike
                    continue
                column = _read_column(reader, item, field.name)
                if item.format == "parquet":
                    check_timestamps(column, f"adopting {item.path} as table {name}")


def _read_column(reader: pq.ParquetFile | po.ORCFile, item: _Found, column: str) -> pa.Table:
    try:
        return reader.read(columns=[column])
    except (pa.ArrowException, OSError) as exc:
        raise SchemaMismatchError(
            f"{item.path}: column {column!r} cannot be read back ({exc}); timestamps must "
            "lie within 1677-09-21 .. 2262-04-11, as readers decode them in nanoseconds"
        ) from exc


def _originals(fs: pafs.FileSystem, table: TableHandle, moved: list[tuple[str, str, bool]]
               ) -> list[OriginalFile]:
    """The record of each placed file (partition, name, size): fsck accepts exactly these."""
    out: list[OriginalFile] = []
    for _, target, _ in moved:
        directory, file_name = target.rsplit("/", 1)
        partition = afs.relative(table.location, directory) if directory != table.location \
            else ""
        out.append(OriginalFile(partition, file_name, fs.get_file_info(target).size or 0))
    return out


def _canonical(found: list[_Found], full: pa.Schema, partition_by: list[str]
               ) -> list[_Found]:
    """``found`` with every partition directory's value converted to its column's type and
    spelled as acidstore's own writes spell it (``InvalidPartitionValueError`` naming the
    file for a value that does not convert). Directories that spell one value two ways
    (``p=01`` and ``p=1`` of an integer column, ``p=-0.0`` and ``p=0`` of a float one)
    were kept apart, and an INSERT OVERWRITE of the value replaced only the directory its
    own write names, leaving the other's rows visible; now their files all move into the
    one directory a write of that value uses, as ``p=%61`` and ``p=a`` already did."""
    canonical: dict[tuple[str | None, ...], tuple[str | None, ...]] = {}
    for item in found:  # one conversion per partition directory
        if item.values not in canonical:
            canonical[item.values] = canonical_partition_values(
                full, partition_by, item.values, where=item.path)
    return [replace(item, values=canonical[item.values]) for item in found]


def _move_all(fs: pafs.FileSystem, found: list[_Found], table: TableHandle,
              partition_by: list[str], moved: list[tuple[str, str, bool]]) -> None:
    """Each file into its partition under the next original name (``N_0``): ORC moved,
    Parquet rewritten as ORC."""
    counters: dict[tuple[str | None, ...], int] = {}
    for item in found:
        relative = partition_path(partition_by, list(item.values)) if partition_by else ""
        directory = afs.join(table.location, relative) if relative else table.location
        fs.create_dir(directory, recursive=True)
        number = counters.get(item.values, 0)
        counters[item.values] = number + 1
        target = afs.join(directory, original_file_name(number))
        if item.format == "orc":
            fs.move(item.path, target)
            moved.append((item.path, target, False))
            continue
        with fs.open_input_file(item.path) as source:
            rows = pq.read_table(source)
        with fs.open_output_stream(target) as out:
            po.write_table(rows, out, compression="zstd")
        moved.append((item.path, target, True))


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
