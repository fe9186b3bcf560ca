"""The columns a DataFrame written into a table must have, and Delta's ``mergeSchema``.

Checked where a Spark write is planned, before any task runs (``df.write``, ``AcidTable``
statements, the streaming sink), so that a DataFrame that does not fit fails as an embedded
insert would, with nothing written.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql.types import StructType

from acidstore.engine.schema_change import add_columns
from acidstore.errors import SchemaMismatchError
from acidstore.spark.options import Target, open_target
from acidstore.spark.schema_mapping import arrow_schema
from acidstore.write.conform import omittable

__all__ = ["add_new_columns", "check_columns"]


def check_columns(table_schema: pa.Schema, schema: StructType, where: str,
                  partition_columns: Sequence[str]) -> None:
    """Refuse a DataFrame whose columns are not the table's (by name, any case), before any
    task runs: the same SchemaMismatchError an embedded insert raises. Nullable columns that
    are not partition columns may be left out (the tasks write NULL, ``conform``)."""
    wanted = {n.lower() for n in table_schema.names}
    given = [f.name for f in schema.fields]
    unknown = [n for n in given if n.lower() not in wanted]
    optional = omittable(table_schema, partition_columns)
    missing = [n for n in table_schema.names
               if n.lower() not in {g.lower() for g in given} and n not in optional]
    if unknown or missing:
        raise SchemaMismatchError(
            f"the DataFrame does not match {where}: unknown column(s) {unknown}, missing "
            f"column(s) {missing} (the table has {table_schema.names}; only nullable columns "
            "that are not partition columns may be left out)"
            + ("; the write option mergeSchema=true adds the unknown columns to the table"
               if unknown else ""))


def add_new_columns(target: Target, schema: StructType) -> list[str]:
    """``mergeSchema``: add the columns of ``schema`` that the table lacks (any case), nullable
    and in the DataFrame's order, through ``engine.schema_change.add_columns`` (so writers
    that planned against the old schema fail with MetadataChangedError). Returns their
    names."""
    wh, table = open_target(target)
    try:
        have = {name.lower() for name in table.schema.names}
        new = [field for field in schema.fields if field.name.lower() not in have]
        if new:
            add_columns(table, pa.schema([f.with_nullable(True) for f in arrow_schema(
                StructType(new))]))
        return [field.name for field in new]
    finally:
        wh.close()


