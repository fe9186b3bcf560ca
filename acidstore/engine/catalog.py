"""Creating, renaming and dropping tables: the checks a new table passes, and its directory
made together with its catalogue entry (both or neither).

A new table's location is ``<warehouse>/<db>.db/<table>``, recorded relative to the
warehouse root; it must be absent or empty, since a new table there would read strangers'
files as its own rows. A renamed table keeps its location (a rename is one metastore
transaction and moves no file: a move is not atomic on object storage and would pull the
files from under running readers), so that directory may be another table's when its old
name is used again; the new table then goes to the first free ``<db>.db/<table>-<n>``
(n = 2, 3, ...: ``-`` is in no table name, so no table's own directory is ever taken).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.config import ORC_COMPRESS_PROPERTY, TRANSACTIONAL_PROPERTY
from acidstore.engine.core import WarehouseCore
from acidstore.errors import AcidStoreError, InvalidInputError, LocationNotEmptyError
from acidstore.format.orc.file_writer import check_compression
from acidstore.format.orc.schema import RESERVED_PREFIX, ROW_ID_COLUMN
from acidstore.io import fs as afs
from acidstore.metastore import NewTable, TableInfo
from acidstore.metastore.conflicts import isolation_level
from acidstore.metastore.validate import split_table_name
from acidstore.write.bucketing import check_bucketable

__all__ = ["create_table", "drop_table", "rename_table"]


def create_table(core: WarehouseCore, name: str, schema: pa.Schema, *,
             partition_by: Sequence[str], bucket_by: Sequence[str], buckets: int,
             properties: Mapping[str, str] | None) -> TableInfo:
    database, table = split_table_name(name)
    for what, columns in (("partition_by", partition_by), ("bucket_by", bucket_by)):
        lowered = [str(c).lower() for c in columns]
        if len(set(lowered)) != len(lowered):
            raise InvalidInputError(f"table {name}: {what} names a column twice: "
                                    f"{list(columns)}")
    if buckets and not bucket_by:
        raise InvalidInputError(f"table {name}: buckets={buckets} needs bucket_by columns")
    by_lower = {f.name.lower(): f for f in schema}
    if len(by_lower) != len(schema):
        raise InvalidInputError(f"duplicate column names in {schema.names}")
    reserved = [n for n in schema.names
                if n.lower() == ROW_ID_COLUMN or n.lower().startswith(RESERVED_PREFIX)]
    if reserved:
        raise InvalidInputError(
            f"column name(s) {reserved} of table {name} are reserved: {ROW_ID_COLUMN!r} is "
            f"Hive's ROW__ID (reads add it), names starting with {RESERVED_PREFIX!r} are "
            "acidstore's own working columns")
    for column in [*partition_by, *bucket_by]:
        if column.lower() not in by_lower:
            raise InvalidInputError(f"unknown column {column!r} in table {name}")
    parts = [by_lower[c.lower()] for c in partition_by]
    if len(parts) == len(schema):
        raise InvalidInputError(f"table {name} needs at least one non-partition column")
    user = pa.schema([f for f in schema if f.name.lower() not in
                      {p.name.lower() for p in parts}])
    bucket_cols = tuple(by_lower[c.lower()].name for c in bucket_by)
    if bucket_cols and buckets <= 0:
        raise InvalidInputError(f"table {name} is bucketed by {bucket_cols}; give buckets > 0")
    if bucket_cols and buckets > 4095:
        raise InvalidInputError(f"at most 4095 buckets (Hive's BucketCodec), got {buckets}")
    for column in bucket_cols:
        if column.lower() in {p.name.lower() for p in parts}:
            raise InvalidInputError(f"column {column!r} cannot both partition and bucket")
        check_bucketable(by_lower[column.lower()])
    props = {TRANSACTIONAL_PROPERTY: "true",
             **{str(k): str(v) for k, v in (properties or {}).items()}}
    isolation_level(props, name)  # an unknown level is refused, not ignored
    check_compression(props.get(ORC_COMPRESS_PROPERTY), name)
    info = _register(core, NewTable(database, table, user, pa.schema(parts), bucket_cols,
                                    buckets if bucket_cols else 0, props,
                                    f"{database}.db/{table}"))
    location = info.location
    try:
        core.filesystem.create_dir(location, recursive=True)
    except OSError as exc:
        # catalogue entry and directory both, or neither
        with contextlib.suppress(AcidStoreError):
            core.metastore.drop_table(info.full_name)
        raise afs.storage_error(
            exc, location, action=f"create the directory of table {info.full_name}"
        ) from exc
    return info


def _register(core: WarehouseCore, new: NewTable) -> TableInfo:
    """Record ``new`` in the catalogue at the first of its candidate locations that is no
    other table's and holds no files (its own name's, if it exists: the metastore then
    raises ``TableExistsError``)."""
    for relative in _locations(new.database, new.name):
        owner = core.metastore.table_at(relative)
        if owner is not None and owner != new.full_name:
            continue  # another table's directory (one renamed away from this name keeps it)
        _refuse_occupied(core, new.database, new.name, afs.join(core.location, relative))
        try:
            return core.resolved(core.metastore.create_table(replace(new, location=relative)))
        except LocationNotEmptyError:
            continue  # another client's table took this location since we looked
    raise AssertionError("unreachable: the candidate locations never end")


def _locations(database: str, table: str) -> Iterator[str]:
    """A new table's candidate locations, relative to the warehouse root, in order."""
    yield f"{database}.db/{table}"
    for n in itertools.count(2):
        yield f"{database}.db/{table}-{n}"


def _refuse_occupied(core: WarehouseCore, database: str, table: str, location: str) -> None:
    """A new table's directory must be absent or empty (the name's owner, if it exists,
    is reported as TableExistsError by the metastore instead)."""
    name = f"{database}.{table}"
    kind = core.filesystem.get_file_info(location).type
    if kind == pafs.FileType.NotFound:
        return
    if kind != pafs.FileType.Directory:
        raise InvalidInputError(f"cannot create table {name}: {location} is a file")
    entries = afs.list_dir(core.filesystem, location)
    if not entries or name in core.metastore.list_tables(database):
        return
    shown = ", ".join(e.name + ("/" if e.is_dir else "") for e in entries[:5])
    more = f" and {len(entries) - 5} more" if len(entries) > 5 else ""
    raise LocationNotEmptyError(
        f"cannot create table {name}: its location {location} already holds files "
        f"({shown}{more}), e.g. from a lost metastore, an unfinished drop or a copied "
        "directory. A new table there would read them as its own rows; move them away "
        "or remove them first (Warehouse.adopt_table turns plain ORC/Parquet files into "
        "a table)", path=location)


def rename_table(core: WarehouseCore, old: str, new: str) -> TableInfo:
    """Give table ``old`` the name ``new``: one metastore transaction, no file moved (the
    table keeps its location, and with its id its history, leases and compaction queue).
    Refused with ``TableBusyError`` while a transaction writes the table."""
    database, table = split_table_name(old)
    new_database, new_table = split_table_name(new)
    return core.resolved(core.metastore.rename_table(f"{database}.{table}",
                                                     f"{new_database}.{new_table}"))


def drop_table(core: WarehouseCore, name: str) -> None:
    """Remove a table from the catalogue, then its files (at its stored location: a renamed
    table's is not where its name would put it)."""
    database, table = split_table_name(name)
    info = core.resolved(core.metastore.drop_table(f"{database}.{table}"))
    try:
        if core.filesystem.get_file_info(info.location).type == pafs.FileType.Directory:
            core.filesystem.delete_dir(info.location)
    except OSError as exc:
        # the catalogue entry is gone: a retry would not find the table, so say what is
        # left (a new table of the name is refused until the directory is removed)
        raise afs.storage_error(
            exc, info.location, retry_safe=False,
            action=f"remove the files of table {info.full_name}, which is dropped from "
            "the catalogue; remove its directory by hand") from exc
