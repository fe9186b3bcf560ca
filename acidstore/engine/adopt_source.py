"""The source of an adoption: its files found and checked before anything moves.

A directory that cannot be adopted must be refused with a typed error naming the path while
every file is still where it was: the walk checks the layout (files only at the partition
depth, ``col=value`` directories of the expected column, no ACID directories), each file's
format and schema, timestamps every reader can decode, and that the source shares no file
with the warehouse (adoption moves the files away, so adopting a table's own directory would
empty that table).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as po
import pyarrow.parquet as pq

from acidstore.engine.core import WarehouseCore
from acidstore.errors import (
    InvalidInputError,
    InvalidPartitionValueError,
    SchemaMismatchError,
    TableNotFoundError,
)
from acidstore.format.layout import is_acid_directory_name, is_hidden
from acidstore.format.partitions import parse_partition_path
from acidstore.io import fs as afs
from acidstore.metastore import SqliteMetastore
from acidstore.write.conform import canonical_partition_values
from acidstore.write.timestamps import check_timestamps, holds_timestamps

__all__ = ["SourceFile", "canonical", "check_readable_timestamps", "find_files",
           "refuse_overlap", "table_schema"]

_ORC, _PARQUET = b"ORC", b"PAR1"


@dataclass(frozen=True)
class SourceFile:
    """One data file to adopt: where it is, its format, and its partition's values."""

    path: str
    format: str  # "orc" or "parquet"
    values: tuple[str | None, ...]


def refuse_overlap(wh: WarehouseCore, root: str, name: str) -> None:
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


def find_files(fs: pafs.FileSystem, root: str, partition_by: list[str]) -> list[SourceFile]:
    """Every data file below ``root``, checked for its place: files only at the partition
    depth, directories only ``col=value`` of the expected column, hidden names skipped."""
    found: list[SourceFile] = []
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
            found.append(SourceFile(path, _format(fs, path), values))
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


def _file_schema(fs: pafs.FileSystem, found: SourceFile) -> pa.Schema:
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


def table_schema(fs: pafs.FileSystem, found: list[SourceFile], partition_by: list[str],
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


def check_readable_timestamps(fs: pafs.FileSystem, found: list[SourceFile], name: str) -> None:
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


def _read_column(reader: pq.ParquetFile | po.ORCFile, item: SourceFile, column: str) -> pa.Table:
    try:
        return reader.read(columns=[column])
    except (pa.ArrowException, OSError) as exc:
        raise SchemaMismatchError(
            f"{item.path}: column {column!r} cannot be read back ({exc}); timestamps must "
            "lie within 1677-09-21 .. 2262-04-11, as readers decode them in nanoseconds"
        ) from exc


def canonical(found: list[SourceFile], full: pa.Schema, partition_by: list[str]
               ) -> list[SourceFile]:
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
