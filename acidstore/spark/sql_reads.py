"""Reads of warehouse tables by name: in ``spark.sql`` text, ``spark.table``, ``read.table``.

PySpark 4.3 cannot put a warehouse table in Spark's catalog (``acidstore.spark.views`` says
why), so ``SELECT ... FROM hr.emp`` would be TABLE_OR_VIEW_NOT_FOUND and ``... VERSION AS OF 3``
UNSUPPORTED_FEATURE.TIME_TRAVEL. Spark's parser, run in the driver before Spark sees the text,
finds every table reference (``UnresolvedRelation``, with or without a ``RelationTimeTravel``
around it) in the statement, its subqueries and CTEs, with the span of text it came from.
Each reference to a ``db.table`` of the session's warehouse is replaced in the text by a
temporary view of a ``format("acidstore")`` read of that table (at the snapshot the time
travel clause names), under the table's name as its alias when the text gave none (so
``emp.id`` still resolves); Spark then analyzes the rewritten text as usual, so its SQL
semantics hold throughout. The views live while Spark analyzes the statement (a query's plan
holds the read, not the view's name) and are dropped afterwards, except under a statement
that keeps its text to analyze again later (``CREATE VIEW``, ``CACHE TABLE``), whose views
stay for the session.

``spark.table("hr.emp")`` and ``spark.read.table("hr.emp")`` (with the reader's options, as
``versionAsOf``) are such a read too (``hook_tables``). Spark's parser reads the text as code
points, so its positions index the Python string.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from acidstore.api.connect import connect
from acidstore.config import SPARK_WAREHOUSE_CONF
from acidstore.errors import InvalidInputError, WarehouseNotFoundError
from acidstore.spark.conf import session_metastore, session_warehouse
from acidstore.spark.views import table_reader

__all__ = ["TableRead", "hook_tables", "read_of", "routed_reads", "seq", "table_reads",
           "warehouse_table"]

#: statements that keep their text and analyze it again later: their views must outlive them
_KEEPS_TEXT = frozenset({"CreateViewCommand", "CreateView", "CacheTableAsSelect",
                         "AlterViewAs"})
_VIEW_PREFIX = "__acidstore_read_"
_MARK = "__acidstore_table_hook__"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class TableRead:
    """One reference to a warehouse table in a statement's text."""

    start: int
    #: one past the reference's last character (its time travel clause included)
    stop: int
    name: str
    as_of: int | datetime | None
    #: the text gives the reference an alias; without one, the table's name becomes it
    aliased: bool


def seq(scala_seq: Any) -> list[Any]:
    """A Scala Seq as a list."""
    return [scala_seq.apply(i) for i in range(scala_seq.length())]


def _kind(node: Any) -> str:
    return str(node.getClass().getSimpleName())


def _span(node: Any) -> tuple[int, int] | None:
    origin = node.origin()
    start, stop = origin.startIndex(), origin.stopIndex()
    return (int(start.get()), int(stop.get()) + 1) if start.isDefined() and stop.isDefined() \
        else None


def _references(plan: Any) -> Iterator[tuple[Any, Any | None, bool]]:
    """Every table reference under ``plan`` (children, subqueries and CTE definitions):
    (the ``UnresolvedRelation``, the ``RelationTimeTravel`` around it or None, aliased)."""
    pending: list[tuple[Any, bool]] = [(plan, False)]
    while pending:
        node, aliased = pending.pop()
        kind = _kind(node)
        if kind == "UnresolvedRelation":
            yield node, None, aliased
            continue
        if kind == "RelationTimeTravel":
            relation = node.relation()
            if _kind(relation) == "UnresolvedRelation":
                yield relation, node, aliased
            continue
        below = kind == "SubqueryAlias"
        pending.extend((child, below) for child in seq(node.children()))
        pending.extend((inner, False) for inner in seq(node.innerChildren()))


def warehouse_table(spark: SparkSession, parts: Sequence[str],
                    tables: set[str] | None = None) -> str | None:
    """``db.table`` if ``parts`` names a table of the session's warehouse, else None."""
    if len(parts) != 2 or session_warehouse(spark) is None:
        return None
    name = ".".join(parts).lower()
    return name if name in (tables if tables is not None else _tables(spark)) else None


def _tables(spark: SparkSession) -> set[str]:
    try:
        with connect(str(session_warehouse(spark)), metastore=session_metastore(spark),
                     create=False) as wh:
            return set(wh.tables())
    except WarehouseNotFoundError as missing:
        raise WarehouseNotFoundError(f"the session setting {SPARK_WAREHOUSE_CONF} names no "
                                     f"warehouse: {missing}", path=missing.path) from missing


def _timestamp(spark: SparkSession, expression: Any, name: str) -> datetime:
    """The instant a ``TIMESTAMP AS OF`` expression names, evaluated by Spark (its session
    time zone, its casts)."""
    text = f"SELECT unix_micros(CAST({expression.sql()} AS TIMESTAMP))"
    row = DataFrame(spark._jsparkSession.sql(text), spark).first()
    if row is None or row[0] is None:
        raise InvalidInputError(f"TIMESTAMP AS OF {expression.sql()} on {name}: not a "
                                "date-time")
    return _EPOCH + timedelta(microseconds=int(row[0]))


def _as_of(spark: SparkSession, travel: Any | None, name: str) -> int | datetime | None:
    if travel is None:
        return None
    version = travel.version()
    if version.isDefined():
        text = str(version.get())
        if not text.strip().lstrip("-").isdigit():
            raise InvalidInputError(f"VERSION AS OF {text!r} on {name}: a version of an "
                                    "acidstore table is a write id (an integer)")
        return int(text)
    return _timestamp(spark, travel.timestamp().get(), name)


def table_reads(spark: SparkSession, roots: Sequence[Any]) -> list[TableRead]:
    """The references to warehouse tables under ``roots`` (parts of a parsed plan)."""
    found = [(relation, travel, aliased) for root in roots
             for relation, travel, aliased in _references(root)
             if len(seq(relation.multipartIdentifier())) == 2]
    if not found or session_warehouse(spark) is None:
        return []
    tables = _tables(spark)
    reads = []
    for relation, travel, aliased in found:
        parts = [str(p) for p in seq(relation.multipartIdentifier())]
        name = warehouse_table(spark, parts, tables)
        spans = [s for s in (_span(relation), None if travel is None else _span(travel))
                 if s is not None]
        if name is None or not spans:
            continue
        start = min(s[0] for s in spans)
        stop = max(s[1] for s in spans)
        reads.append(TableRead(start, stop, name, _as_of(spark, travel, name), aliased))
    return reads


def read_of(spark: SparkSession, name: str, as_of: int | datetime | None = None) -> DataFrame:
    """A ``format("acidstore")`` read of warehouse table ``name``."""
    return table_reader(spark.read, str(session_warehouse(spark)), session_metastore(spark),
                        as_of).load(name)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@contextmanager
def routed_reads(spark: SparkSession, text: str, plan: Any, roots: Sequence[Any]
                 ) -> Iterator[str]:
    """``text`` (parsed as ``plan``) with every read of a warehouse table under ``roots``
    replaced by a temporary view of it, for as long as the block runs (Spark analyzes the
    statement inside it)."""
    reads = table_reads(spark, roots)
    views: list[str] = []
    try:
        for read in sorted(reads, key=lambda r: r.start, reverse=True):
            view = _VIEW_PREFIX + uuid.uuid4().hex[:12]
            read_of(spark, read.name, read.as_of).createOrReplaceTempView(view)
            views.append(view)
            alias = "" if read.aliased else " AS " + _quoted(read.name.split(".")[-1])
            text = text[:read.start] + _quoted(view) + alias + text[read.stop:]
        yield text
    finally:
        if _kind(plan) not in _KEEPS_TEXT:
            for view in views:
                spark.catalog.dropTempView(view)


def _named_table(spark: SparkSession, table_name: str) -> str | None:
    """The warehouse table ``table_name`` (Spark's identifier syntax) names, or None."""
    if session_warehouse(spark) is None:
        return None
    try:
        parts = spark._jsparkSession.sessionState().sqlParser().parseMultipartIdentifier(
            table_name)
    except Exception:  # not an identifier: Spark's table() says so
        return None
    return warehouse_table(spark, [str(p) for p in seq(parts)])


def hook_tables() -> None:
    """Wrap ``SparkSession.table`` and ``DataFrameReader.table`` once: a warehouse table's
    name reads it through the ``acidstore`` source; any other name is Spark's."""
    session_table = SparkSession.table
    reader_table = DataFrameReader.table
    if getattr(session_table, _MARK, False):
        return

    @functools.wraps(session_table)
    def table(self: SparkSession, tableName: str) -> DataFrame:  # noqa: N803
        name = _named_table(self, tableName)
        return session_table(self, tableName) if name is None else read_of(self, name)

    @functools.wraps(reader_table)
    def read_table(self: DataFrameReader, tableName: str) -> DataFrame:  # noqa: N803
        spark = self._spark
        name = _named_table(spark, tableName)
        if name is None:
            return reader_table(self, tableName)
        return table_reader(self, str(session_warehouse(spark)),
                            session_metastore(spark)).load(name)

    for wrapped in (table, read_table):
        setattr(wrapped, _MARK, True)
    SparkSession.table = table  # type: ignore[method-assign]
    DataFrameReader.table = read_table  # type: ignore[method-assign]
