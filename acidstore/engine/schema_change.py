"""Schema evolution (layer L4): ``Table.add_columns``.

Only appending nullable columns is supported, because it is the one change that needs no
rewrite and reads the same on every engine: ORC files map a row's fields by position, so a
file written before the change simply has a shorter ``row`` struct, and every reader here
(vectorized, merge, Spark, the compactors, which read through the same scan) fills the
missing trailing fields with NULL, as Hive's ORC schema evolution does.

The change is one metastore transaction that bumps the table's ``metadata_version``. Every
write carries the version its statement planned against (``WriteComponent.metadata_version``),
so a writer that took the table's schema before a concurrent ``add_columns`` committed fails
at commit with ``MetadataChangedError`` (nothing lands, retry after reading the table again)
instead of publishing files planned for a schema that is no longer the table's.

A read as of a write id (or time) before the change uses the current schema: the new columns
read as NULL there, which is what those rows held. (Delta reads the schema of the version
instead; one schema per table keeps a DataFrame's schema independent of ``as_of``.)
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from acidstore.engine.handle import TableHandle
from acidstore.errors import InvalidInputError
from acidstore.format.orc.schema import RESERVED_PREFIX, ROW_ID_COLUMN
from acidstore.write.conform import schema_of

__all__ = ["add_columns"]


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
    table.check_exists()
    name = table.name
    if table.txn is not None:
        raise InvalidInputError(
            f"add_columns of {name} is a metastore transaction of its own; call it on "
            "wh.table(name), not on a table of wh.transaction()")
    schema = _columns(name, columns)
    reserved = [n for n in schema.names
                if n.lower() == ROW_ID_COLUMN or n.lower().startswith(RESERVED_PREFIX)]
    if reserved:
        raise InvalidInputError(f"column name(s) {reserved} of table {name} are reserved")
    table.metastore.add_columns(name, schema)
    table.info = table.core.table_info(name)
