"""Schema evolution (layer L4): ``Table.add_columns``, ``rename_column`` and ``drop_columns``.

None of them rewrites a file, and each reads the same on every engine, because ORC files map
a row's fields by position and the table keeps one file schema (``TableInfo.row_schema``)
that only grows:
- a new column is appended: a file written before has a shorter ``row`` struct, and every
  reader here (vectorized, merge, Spark's Java and native readers, the compactors, which read
  through the same scan) fills the missing trailing fields with NULL, as Hive's ORC schema
  evolution does;
- a renamed column keeps its position, so old files hold its values under the old name,
  which no reader looks at (Iceberg's rename by field id, with the position as the id);
- a dropped column keeps its position under a placeholder name that no read returns and
  writers fill with NULL (compaction writes NULL there too, so the values leave the files
  as they are compacted); added again later under the same name, it is a new column at a new
  position, and rows written before read NULL for it, never the dropped values.

Each change is one metastore transaction that bumps the table's ``metadata_version``. Every
write carries the version its statement planned against (``WriteComponent.metadata_version``),
so a writer that took the table's schema before a concurrent change committed fails at commit
with ``MetadataChangedError`` (nothing lands, retry after reading the table again) instead of
publishing files planned for a schema that is no longer the table's.

A read as of a write id (or time) before a change uses the current schema: added columns read
as NULL there, renamed ones under their new names, dropped ones not at all. (Delta reads the
schema of the version instead; one schema per table keeps a DataFrame's schema independent of
``as_of``.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from acidstore.engine.handle import TableHandle
from acidstore.errors import InvalidInputError
from acidstore.format.orc.schema import RESERVED_PREFIX, ROW_ID_COLUMN
from acidstore.write.conform import schema_of

__all__ = ["add_columns", "drop_columns", "rename_column"]


def _columns(table: str, columns: Any) -> pa.Schema:
    """A schema of the new columns from a ``pa.Schema``, a list of ``pa.Field`` or data."""
    if isinstance(columns, pa.Field):
        columns = [columns]
    if isinstance(columns, list | tuple) and all(isinstance(f, pa.Field) for f in columns):
        return pa.schema(columns)
    return schema_of(columns, f"add_columns of {table}")


def add_columns(table: TableHandle, columns: Any) -> None:
    """Append ``columns`` (nullable; a ``pa.Schema``, ``pa.Field`` list, or data whose schema
    to take) to ``table``, whose handle then holds the new catalog entry."""
    table.outside_transaction("add_columns")
    name = table.name
    schema = _columns(name, columns)
    reserved = [n for n in schema.names
                if n.lower() == ROW_ID_COLUMN or n.lower().startswith(RESERVED_PREFIX)]
    if reserved:
        raise InvalidInputError(f"column name(s) {reserved} of table {name} are reserved")
    table.metastore.add_columns(name, schema)
    table.info = table.core.table_info(name)


def rename_column(table: TableHandle, old: str, new: str) -> None:
    """Rename column ``old`` of ``table`` to ``new``; the handle then holds the new entry."""
    table.outside_transaction("rename_column")
    table.metastore.rename_column(table.name, old, new)
    table.info = table.core.table_info(table.name)


def drop_columns(table: TableHandle, names: Sequence[str]) -> None:
    """Drop columns ``names`` of ``table``; the handle then holds the new entry."""
    table.outside_transaction("drop_columns")
    if isinstance(names, str):
        raise InvalidInputError(f"drop_columns of {table.name} takes a list of names, not "
                                f"the string {names!r} (did you mean [{names!r}]?)")
    table.metastore.drop_columns(table.name, names)
    table.info = table.core.table_info(table.name)
