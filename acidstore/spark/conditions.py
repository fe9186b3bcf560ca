"""Conditions and values of Spark's DML: SQL strings or Columns, and what each names.

A SQL string runs through the statement core as it does embedded; a Column that says the
same in SQL (``columns.column_sql``) does too; any other Column is evaluated by Spark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)

from acidstore.errors import InvalidInputError
from acidstore.spark.columns import column_sql
from acidstore.spark.typed_errors import spark_errors
from acidstore.sql.expressions import check_sandboxed

__all__ = ["Condition", "condition_column", "referenced_columns", "sql_text"]

Condition = str | Column


def sql_text(condition: Condition | None) -> str | None:
    """A condition or value as the SQL text the statement core runs: a string as given, a
    Column when it translates (``acidstore.spark.columns``); None otherwise."""
    if isinstance(condition, str):
        return condition
    if isinstance(condition, Column):
        return column_sql(condition)
    return None


def condition_column(condition: Condition, where: str, scope: Mapping[str, pa.Schema]
                     ) -> Column:
    """A Spark Column for a SQL string or a Column (anything else is an InvalidInputError).
    A string must first pass the embedded engine's sandbox over ``scope`` (alias -> the
    columns it names): the same text is refused on both engines (no file reads,
    ``java_method``, ``reflect`` ...)."""
    if isinstance(condition, Column):
        return condition
    if isinstance(condition, str):
        check_sandboxed(condition, scope)
        with spark_errors(where):
            return F.expr(condition)
    raise InvalidInputError(f"{where}: a condition is a SQL string or a Column, "
                            f"not {type(condition).__name__}")


_IDENTIFIER = re.compile(r"`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*)")


def referenced_columns(condition: Condition | None, names: Sequence[str]) -> list[str] | None:
    """The columns of ``names`` a SQL condition can refer to (every identifier in it that
    names one, case-insensitively), so a statement decodes only those; None (all columns)
    for a Column object or a ``*``, whose references a string cannot tell."""
    if not isinstance(condition, str) or "*" in condition:
        return None
    said = {(quoted or plain).lower() for quoted, plain in _IDENTIFIER.findall(condition)}
    return [n for n in names if n.lower() in said]
