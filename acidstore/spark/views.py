"""Spark SQL over acidstore tables: temporary views.

PySpark 4.3 cannot back a catalog table (``CREATE TABLE ... USING``) with a Python data
source (``acidstore.spark.datasource.refuse_catalog_table`` says why), but a temporary view keeps
its options: ``CREATE TEMPORARY VIEW v USING acidstore OPTIONS (...)`` in SQL, or
``register_views`` here, which makes one per table of a warehouse. Spark plans a view's read
once, at its first query, and reuses that plan: a view reads the snapshot of its first query
until it is defined again (``CREATE OR REPLACE``, or ``register_views`` once more).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pyspark.sql import DataFrameReader, SparkSession

from acidstore.api.connect import connect
from acidstore.api.pairing import chosen_metastore
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.spark.datasource import FORMAT
from acidstore.spark.session import register

__all__ = ["register_views", "table_reader", "view_name"]


def view_name(table: str) -> str:
    """The view ``register_views`` makes for ``db.table``: ``db_table`` (a temporary view
    cannot sit in a database)."""
    return table.replace(".", "_")


def register_views(spark: SparkSession, warehouse: str, tables: Sequence[str] | None = None,
                   *, metastore: str | None = None, as_of: int | datetime | None = None,
                   suffix: str = "") -> list[str]:
    """Define (or replace) a temporary view for each of ``tables`` (default: every table of
    ``warehouse``), named ``db_table`` plus ``suffix``; with ``as_of`` (a write id or a
    date-time) each view reads the table at that point (time travel). Returns the names."""
    register(spark)
    metastore = chosen_metastore(metastore)  # the views' readers name it explicitly
    with connect(warehouse, metastore=metastore, create=False) as wh:
        names = list(tables) if tables is not None else wh.tables()
        for name in names:
            # TableNotFoundError now, not at the view's first query
            TableHandle.open(core_of(wh), name)
    made = []
    for name in names:
        view = view_name(name) + suffix
        table_reader(spark.read, warehouse, metastore, as_of).load(name) \
            .createOrReplaceTempView(view)
        made.append(view)
    return made


def table_reader(reader: DataFrameReader, warehouse: str, metastore: str | None,
                 as_of: int | datetime | None = None) -> DataFrameReader:
    """``reader`` set to read a table of ``warehouse`` through the ``acidstore`` source (at
    ``as_of`` if given), keeping the options it already has; ``load(name)`` reads it."""
    reader = reader.format(FORMAT).option("warehouse", str(warehouse))
    if metastore is not None:
        reader = reader.option("metastore", metastore)
    if as_of is not None:
        reader = reader.option("asOf", as_of.isoformat() if isinstance(as_of, datetime)
                               else str(as_of))
    return reader
