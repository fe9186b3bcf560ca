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

from acidstore.errors import import_optional

__all__ = ["to_duckdb", "to_polars"]


def to_polars(table: pa.Table) -> Any:
    """A ``polars.DataFrame`` of ``table`` (Polars is optional: ``pip install polars``)."""
    polars = import_optional("polars", "polars", "Table.to_polars()")
    return polars.from_arrow(table)


def to_duckdb(table: pa.Table, connection: Any = None) -> Any:
    """A DuckDB relation over ``table`` on ``connection`` (a new in-memory one by default).

    The rows are read first: a relation may be run many times, and each run of a streaming
    reader would need a snapshot of its own (and a lease held for as long as the relation
    lives)."""
    duckdb = importlib.import_module("duckdb")
    con = connection if connection is not None else duckdb.connect()
    return con.from_arrow(table)
