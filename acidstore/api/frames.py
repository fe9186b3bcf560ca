"""Tables to and from the data frames users already hold (layer L4): pandas, Polars, DuckDB.

Users coming from deltalake or pyiceberg reach for ``create_table(name, df)`` and
``t.to_pandas()``; these are thin adapters over Arrow, the one format the readers and writers
speak. pandas, Polars and DuckDB stay optional at import time: nothing here imports them
until a caller asks for their kind of result.
"""

from __future__ import annotations

import importlib
from typing import Any

import pyarrow as pa

from acidstore.errors import InvalidInputError, SchemaMismatchError
from acidstore.write.conform import from_pandas

__all__ = ["schema_of", "to_duckdb", "to_polars"]


def schema_of(schema_or_data: Any, where: str) -> pa.Schema:
    """The schema a new table takes from ``schema_or_data``: a ``pa.Schema`` as given, or the
    schema of a pyarrow Table / RecordBatch / RecordBatchReader or a pandas DataFrame (its
    index left out, as inserts leave it out). Only the schema is used: the data is not
    inserted. A column whose type the data cannot tell (all-None pandas column: Arrow type
    ``null``) is refused, since ORC has no null type and the table could never be written."""
    if isinstance(schema_or_data, pa.Schema):
        return schema_or_data
    if isinstance(schema_or_data, pa.Table | pa.RecordBatch | pa.RecordBatchReader):
        schema = schema_or_data.schema
    elif type(schema_or_data).__module__.startswith("pandas"):  # pandas is optional
        schema = from_pandas(pa.Schema.from_pandas, schema_or_data, where)
    elif hasattr(schema_or_data, "__arrow_c_schema__"):
        schema = pa.schema(schema_or_data)
    else:
        raise InvalidInputError(
            f"{where}: schema must be a pyarrow.Schema (or a pyarrow Table or pandas "
            f"DataFrame to take it from), not {type(schema_or_data).__name__}")
    untyped = [f.name for f in schema if pa.types.is_null(f.type)]
    if untyped:
        raise SchemaMismatchError(
            f"{where}: cannot tell the type of column(s) {untyped} from the data (every value "
            "is null); give a pyarrow Schema instead")
    return schema.remove_metadata()


def to_polars(table: pa.Table) -> Any:
    """A ``polars.DataFrame`` of ``table`` (Polars is optional: ``pip install polars``)."""
    try:
        polars = importlib.import_module("polars")
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "to_polars() needs the polars package (pip install polars); to_arrow() and "
            "to_batches() give Arrow data Polars reads without a copy") from None
    return polars.from_arrow(table)


def to_duckdb(table: pa.Table, connection: Any = None) -> Any:
    """A DuckDB relation over ``table`` on ``connection`` (a new in-memory one by default).

    The rows are read first: a relation may be run many times, and each run of a streaming
    reader would need a snapshot of its own (and a lease held for as long as the relation
    lives)."""
    duckdb = importlib.import_module("duckdb")
    con = connection if connection is not None else duckdb.connect()
    return con.from_arrow(table)
