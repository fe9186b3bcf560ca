"""Backend-neutral input checks of the metastore: names, partitions, components, new tables.

Every backend runs the same checks before touching its store, so a bad request fails the same
way (``InvalidInputError``, nothing written) whichever database holds the metastore. The
checks guard what later code trusts blindly: a table name becomes part of Hive's write-id list
string (where ``:`` and ``$`` are separators), a partition and a directory become paths under
the table location (they must never step outside it).
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from typing import get_args

import pyarrow as pa

from acidstore.errors import InvalidInputError, InvalidLayoutError, InvalidPartitionValueError
from acidstore.format.layout import is_bucket_file, is_original_file, parse_directory
from acidstore.format.orc.schema import (
    RESERVED_PREFIX,
    ROW_ID_COLUMN,
    SCHEMA_NOTE,
    dropped_name,
)
from acidstore.format.orc.types import check_column_types, check_partition_types
from acidstore.format.partitions import parse_partition_path, partition_path
from acidstore.io.fs import is_text
from acidstore.metastore.names import DEFAULT_DATABASE, split_table_name
from acidstore.metastore.records import (
    CompactionOutput,
    NewTable,
    Operation,
    OriginalFile,
    TableInfo,
    TxnKind,
    WriteComponent,
)

__all__ = [
    "CONFLICTING_OPERATIONS",
    "DEFAULT_DATABASE",
    "OPERATION_LETTERS",
    "check_app_version",
    "column_names",
    "check_component",
    "check_kind",
    "check_original",
    "check_output",
    "check_new_table",
    "is_absolute_location",
    "check_partition",
    "check_seconds",
    "check_ttl",
    "narrowed_schema",
    "renamed_schema",
    "split_table_name",
    "widened_schema",
]

#: field metadata of a file schema: a renamed column's former names, a dropped one's name
FORMER_NAMES_NOTE = SCHEMA_NOTE + b"former_names"
DROPPED_NOTE = SCHEMA_NOTE + b"dropped"
#: Hive's identifier rule (``MetaStoreUtils.validateName``: ``[\w_]+`` with Java's ASCII ``\w``).
_IDENTIFIER = re.compile(r"[a-z0-9_]+")
#: Only these conflict, and only with each other (§12.2: inserts never conflict; newest Hive
#: counts D/D too, and an overwrite rewrites every row, so it behaves like a delete of all).
CONFLICTING_OPERATIONS: frozenset[str] = frozenset({"update", "delete", "overwrite"})
#: Single letters of Hive's conflict message (``... u/d``).
OPERATION_LETTERS: dict[str, str] = {"insert": "i", "update": "u", "delete": "d",
                                     "overwrite": "o"}
_OPERATIONS = frozenset(get_args(Operation))
_KINDS = frozenset(get_args(TxnKind))


def _identifier(text: object, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {text!r}")
    lowered = text.lower()
    if _IDENTIFIER.fullmatch(lowered) is None:
        raise InvalidInputError(
            f"{what} {text!r} must be non-empty and use only letters, digits and '_'")
    return lowered


def column_names(value: object, what: str, table: str) -> list[str]:
    """``partition_by``/``bucket_by`` as a list of column names, read once. None means none,
    as the default ``()`` does (``partition_by=None`` raised TypeError); a single string is
    refused rather than read as its letters, as is anything else that is not a collection of
    non-empty strings (an int raised TypeError, ``[1]`` AttributeError). An iterator is
    read once here: read twice, as the checks and the metastore did, its columns vanished
    and the table was created unpartitioned without a word."""
    if value is None:
        return []
    if isinstance(value, str):
        raise InvalidInputError(f"table {table}: {what} is a list of column names; "
                                f"write {what}=[{value!r}]")
    if isinstance(value, (bytes, bytearray)) or not hasattr(value, "__iter__"):
        raise InvalidInputError(f"table {table}: {what} must be a list of column names or "
                                f"None, got {type(value).__name__} {value!r}")
    columns = list(value)
    bad = [c for c in columns if not isinstance(c, str) or not c]
    if bad:
        raise InvalidInputError(f"table {table}: {what} must name columns by non-empty "
                                f"strings, got {bad[0]!r} in {columns}")
    return columns


def check_kind(kind: str) -> None:
    if kind not in _KINDS:
        raise InvalidInputError(f"transaction kind must be one of {sorted(_KINDS)}, got {kind!r}")


#: an idempotent writer's application id: printable text (PostgreSQL's TEXT holds no NUL, and
#: operators read these ids in ``acidstore describe``)
_APP_ID_MAX = 1024
_LONG_MAX = 2**63 - 1


def check_app_version(app_id: object, version: object) -> tuple[str, int]:
    """An idempotent write's (application id, version), as both backends store them: a
    non-empty printable id, and a version from 0 to 2**63 - 1 (a 64-bit column in both)."""
    if not isinstance(app_id, str) or not app_id.strip() or len(app_id) > _APP_ID_MAX \
            or not app_id.isprintable():
        raise InvalidInputError(
            f"app_id must be a non-empty printable string of at most {_APP_ID_MAX} "
            f"characters, got {app_id!r}")
    if isinstance(version, bool) or not isinstance(version, int) \
            or not 0 <= version <= _LONG_MAX:
        raise InvalidInputError(
            f"version of app_id {app_id!r} must be an integer from 0 to {_LONG_MAX}, "
            f"got {version!r}")
    return app_id, version


def check_seconds(value: object, what: str, *, zero: bool = False) -> float:
    """A duration: a finite number of seconds above 0 (or 0 too, with ``zero``). A lease,
    timeout or retention of NaN, infinity or less could pin files forever or clean what a
    reader still needs."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise InvalidInputError(
            f"{what} must be {'0 or more' if zero else 'positive'} and finite, got {value!r}")
    return float(value)


def check_ttl(ttl_seconds: float) -> float:
    """A lease needs a positive, finite lifetime."""
    return check_seconds(ttl_seconds, "ttl_seconds")


def check_partition(partition: str, partition_columns: list[str], table: str) -> None:
    """A partition must be the canonical directory of exactly the table's partition columns.

    Canonical (what ``partitions.partition_path`` prints) so that one partition has one
    spelling: conflicts are detected by comparing partition strings.
    """
    if not isinstance(partition, str):
        raise InvalidInputError(f"partition must be a string, got {partition!r}")
    if not partition_columns:
        if partition != "":
            raise InvalidInputError(
                f"table {table} is not partitioned; got partition {partition!r}")
        return
    if partition == "":
        raise InvalidInputError(f"table {table} is partitioned; a partition is required")
    try:
        pairs = parse_partition_path(partition)
        canonical = partition_path([c for c, _ in pairs], [v for _, v in pairs])
    except InvalidPartitionValueError as exc:
        raise InvalidInputError(f"invalid partition {partition!r} of {table}: {exc}") from exc
    columns = [c.lower() for c, _ in pairs]
    if columns != partition_columns:
        raise InvalidInputError(
            f"partition {partition!r} of {table} must name the columns {partition_columns} "
            "in that order")
    if canonical != partition:
        raise InvalidInputError(
            f"partition {partition!r} of {table} is not canonical; expected {canonical!r}")


def check_original(original: object, partition_columns: list[str], table: str) -> None:
    """An original file's record must name a file Hive reads as an original, directly in
    one of the table's partitions: fsck trusts the record to judge what is on disk."""
    if not isinstance(original, OriginalFile):
        raise InvalidInputError(f"originals of {table} must be OriginalFile values, "
                                f"got {original!r}")
    check_partition(original.partition, partition_columns, table)
    if not isinstance(original.name, str) or not is_original_file(original.name):
        raise InvalidInputError(f"{original.name!r} in partition {original.partition!r} of "
                                f"{table} is no original file name (N_0, N_0_copy_K)")
    _check_count(original.bytes, f"the size of original file {original.name!r} of {table}")


def _check_relative_dir(path: object, table: str) -> None:
    if not isinstance(path, str) or path == "":
        raise InvalidInputError(f"directory of {table} must be a non-empty string: {path!r}")
    if path.startswith("/") or "\\" in path or "\x00" in path:
        raise InvalidInputError(f"directory {path!r} must be relative to the location of {table}")
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise InvalidInputError(f"directory {path!r} of {table} has an empty, '.' or '..' step")


def _check_count(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{what} must be a non-negative int, got {value!r}")


def check_component(component: WriteComponent, partition_columns: list[str]) -> str:
    """Validate a component against its table; returns the canonical ``db.name``."""
    if not isinstance(component, WriteComponent):
        raise InvalidInputError(f"expected a WriteComponent, got {component!r}")
    database, name = split_table_name(component.table)
    table = f"{database}.{name}"
    if component.operation not in _OPERATIONS:
        raise InvalidInputError(
            f"operation must be one of {sorted(_OPERATIONS)}, got {component.operation!r}")
    _check_count(component.write_id, "write id")
    if component.write_id < 1:
        raise InvalidInputError(f"write id must be >= 1, got {component.write_id}")
    check_partition(component.partition, partition_columns, table)
    for directory in component.directories:
        _check_relative_dir(directory, table)
    for what in ("rows_inserted", "rows_deleted", "files", "bytes"):
        _check_count(getattr(component, what), what)
    return table


def check_output(output: CompactionOutput, partition_columns: list[str], txn_id: int) -> None:
    """Validate a compaction output: a directory in its partition whose name carries the
    committing transaction's ``_v<txn_id>`` (a record of anything else would make readers
    trust a directory no compaction of this commit wrote)."""
    database, name = split_table_name(output.table)
    table = f"{database}.{name}"
    check_partition(output.partition, partition_columns, table)
    _check_relative_dir(output.directory, table)
    parent, _, leaf = output.directory.rpartition("/")
    if parent != output.partition:
        raise InvalidInputError(f"compaction output {output.directory!r} of {table} is not a "
                                f"directory of its partition {output.partition!r}")
    try:
        visibility = parse_directory(leaf).visibility_txn_id
    except InvalidLayoutError as exc:
        raise InvalidInputError(f"compaction output of {table}: {exc}") from None
    if visibility != txn_id:
        raise InvalidInputError(f"compaction output {output.directory!r} of {table} does not "
                                f"carry the suffix _v{txn_id:07d} of the committing txnid:{txn_id}")
    for what in ("files", "rows", "bytes"):
        _check_count(getattr(output, what), what)
    if output.file_rows:
        for file, rows in output.file_rows:
            if not isinstance(file, str) or not is_bucket_file(file):
                raise InvalidInputError(f"compaction output {output.directory!r} of {table} "
                                        f"names {file!r}, which is no bucket file name")
            _check_count(rows, f"rows of {file}")
        if len(dict(output.file_rows)) != output.files:
            raise InvalidInputError(f"compaction output {output.directory!r} of {table} has "
                                    f"{output.files} file(s) but {len(output.file_rows)} "
                                    "file row counts")


def is_absolute_location(location: str) -> bool:
    """A path or URI that names its place by itself; anything else is relative to the
    warehouse root."""
    return "://" in location or posixpath.isabs(location) or os.path.isabs(location)


def check_new_table(info: NewTable) -> None:
    """Reject tables the rest of the library could not store or read back unambiguously."""
    if not isinstance(info, NewTable):
        raise InvalidInputError(f"expected a NewTable, got {info!r}")
    if not isinstance(info.database, str) or not isinstance(info.name, str):
        raise InvalidInputError(f"a table's database and name are strings, got "
                                f"{info.database!r} and {info.name!r}")
    table = ".".join(split_table_name(f"{info.database}.{info.name}"))
    if not isinstance(info.schema, pa.Schema) or not isinstance(info.partition_schema, pa.Schema):
        raise InvalidInputError(f"schema and partition_schema of {table} must be pyarrow schemas")
    columns = [_identifier(f, f"column of {table}") for f in info.schema.names]
    partition_columns = [_identifier(f, f"partition column of {table}")
                         for f in info.partition_schema.names]
    everything = columns + partition_columns
    duplicates = sorted({c for c in everything if everything.count(c) > 1})
    if duplicates:
        raise InvalidInputError(f"{table} names columns twice (case-insensitive): {duplicates}")
    check_column_types(info.schema, f"table {table}")
    check_partition_types(info.partition_schema, f"table {table}")
    if isinstance(info.buckets, bool) or not isinstance(info.buckets, int) or info.buckets < 0:
        raise InvalidInputError(f"buckets of {table} must be a non-negative int: {info.buckets!r}")
    if info.bucket_by and info.buckets < 1:
        raise InvalidInputError(f"{table} is bucketed by {list(info.bucket_by)} but has no buckets")
    if not info.bucket_by and info.buckets > 1:
        raise InvalidInputError(f"{table} has {info.buckets} buckets but no bucket_by columns")
    for column in info.bucket_by:
        if not isinstance(column, str) or column.lower() not in columns:
            raise InvalidInputError(f"bucket column {column!r} is not a column of {table}")
    for key, value in info.properties.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError(f"properties of {table} must map str to str: {key!r}")
        if not is_text(key) or not is_text(value):
            raise InvalidInputError(f"property {key!r} of {table} is no valid text (it holds "
                                    "a lone surrogate)")
    if not isinstance(info.location, str) or not info.location:
        raise InvalidInputError(f"location of {table} must be a non-empty string: "
                                f"{info.location!r}")
    if not is_absolute_location(info.location):
        # relative to the warehouse root (what ``Warehouse.create_table`` stores, so that a
        # copied or moved warehouse finds its tables where it now is): it must stay inside it
        _check_relative_dir(info.location, table)


def widened_schema(info: TableInfo, columns: pa.Schema) -> pa.Schema:
    """``info``'s user schema with ``columns`` appended (``add_columns``). They must be new
    (no name of the table's, partition columns included, in any case) and nullable: files
    written before hold no value for them, so their rows read them as NULL, which a NOT NULL
    column could not hold. Appended at the end, because ORC files map the row's fields by
    position (Hive's schema evolution reads a shorter row struct as trailing NULLs)."""
    table = info.full_name
    if not isinstance(columns, pa.Schema) or not len(columns):
        raise InvalidInputError(f"add_columns of {table} needs a non-empty pyarrow Schema of "
                                f"the new columns, got {columns!r}")
    taken = {n.lower() for n in [*info.schema.names, *info.partition_schema.names]}
    for field in columns:
        name = _identifier(field.name, f"column of {table}")
        if name in taken:
            raise InvalidInputError(f"column {field.name!r} is already a column of {table} "
                                    "(names are case-insensitive)")
        taken.add(name)
        if not field.nullable:
            raise InvalidInputError(
                f"new column {field.name!r} of {table} must be nullable: the rows written "
                "before it existed read it as NULL")
    check_column_types(columns, f"table {table}")
    return pa.schema([*info.row_schema, *columns])


def _user_column(info: TableInfo, name: object, what: str) -> int:
    """The position in ``info.row_schema`` of the live user column ``name`` (any case); a
    partition column or an unknown name is refused, saying which."""
    table = info.full_name
    lowered = _identifier(name, f"column of {table} to {what}")
    if lowered in {n.lower() for n in info.partition_schema.names}:
        raise InvalidInputError(
            f"cannot {what} {name!r} of {table}: it is a partition column, whose name and "
            "values are in every partition directory's path")
    for position, field in enumerate(info.row_schema):
        if field.name.lower() == lowered and field.name in info.schema.names:
            return position
    raise InvalidInputError(f"cannot {what} {name!r}: {table} has no such column (its "
                            f"columns: {info.schema.names})")


def renamed_schema(info: TableInfo, old: str, new: str) -> tuple[pa.Schema, tuple[str, ...]]:
    """``info``'s file schema and bucketing columns with column ``old`` named ``new``
    (``rename_column``): the column keeps its position, type and values, since files map
    row fields by position and so need no rewrite."""
    table = info.full_name
    position = _user_column(info, old, "rename")
    lowered = _identifier(new, f"new name of column {old!r} of {table}")
    if lowered == ROW_ID_COLUMN or lowered.startswith(RESERVED_PREFIX):
        raise InvalidInputError(
            f"cannot rename {old!r} of {table} to {new!r}: {ROW_ID_COLUMN!r} and names "
            f"starting with {RESERVED_PREFIX!r} are reserved")
    current = info.row_schema.field(position)
    taken = {n.lower() for n in [*info.schema.names, *info.partition_schema.names]
             if n != current.name}
    if lowered in taken:
        raise InvalidInputError(f"cannot rename {old!r} of {table} to {new!r}: {table} "
                                "already has a column of that name (names are "
                                "case-insensitive)")
    # noted, so that readers mapping by name (Spark's own ORC reader) know files may hold
    # another name here (``TableInfo.file_schema`` is then set)
    former = (current.metadata or {}).get(FORMER_NAMES_NOTE, b"").decode()
    names = ",".join(n for n in [*former.split(","), current.name] if n)
    schema = info.row_schema.set(position, current.with_name(new).with_metadata(
        {**(current.metadata or {}), FORMER_NAMES_NOTE: names.encode()}))
    bucket_by = tuple(new if b == current.name else b for b in info.bucket_by)
    return schema, bucket_by


def narrowed_schema(info: TableInfo, names: object) -> pa.Schema:
    """``info``'s file schema with ``names`` dropped (``drop_columns``): each keeps its
    position under a placeholder name (``dropped_name``), nullable so that writers fill it
    with NULL, and never reads again; a column added later under the same name is a new one,
    appended. Bucketing and partition columns cannot be dropped, nor every user column."""
    table = info.full_name
    if isinstance(names, str) or not isinstance(names, list | tuple) or not names:
        raise InvalidInputError(f"drop_columns of {table} needs a non-empty list of column "
                                f"names, got {names!r}")
    positions = [_user_column(info, name, "drop") for name in names]
    if len(set(positions)) != len(positions):
        raise InvalidInputError(f"drop_columns of {table} names a column twice: {names}")
    bucketing = {b.lower() for b in info.bucket_by}
    for position in positions:
        name = info.row_schema.field(position).name
        if name.lower() in bucketing:
            raise InvalidInputError(
                f"cannot drop {name!r} of {table}: the table is bucketed by it, and its "
                "rows are placed in bucket files by its values")
    if len(positions) == len(info.schema):
        raise InvalidInputError(f"cannot drop every column of {table} but its partition "
                                "columns; a table needs at least one other column")
    schema = info.row_schema
    for position in positions:
        field = schema.field(position)
        schema = schema.set(position, pa.field(
            dropped_name(position), field.type, nullable=True,
            metadata={DROPPED_NOTE: field.name.encode()}))
    return schema
