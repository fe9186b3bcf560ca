"""Spark's parsed SQL expressions as the SQL text the statement core evaluates.

``spark.sql("UPDATE db.t SET ...")`` is parsed by Spark (``acidstore.spark.sql_dml``), and its
conditions and values then run through ``AcidTable``, whose SQL strings are DuckDB's dialect.
Spark prints an unresolved expression (``Expression.sql()``) as SQL it reads back, in which
two spellings differ from DuckDB's: a string literal escapes a quote with a backslash
(``'it\\'s'``, DuckDB: ``'it''s'``), and a numeric literal carries its type as a suffix
(``10L``, ``1.5BD``, ``1000.0D``). Those tokens are rewritten here and the rest kept, so the
text means what it meant to Spark as far as the two dialects agree (the ``AcidTable`` rule:
what DuckDB cannot bind is an ``InvalidExpressionError``). A parameter marker (``?``,
``:name``) has no value to print, and a subquery prints as a placeholder (``exists()``):
both are refused by name rather than reach DuckDB as unknown functions.
"""

from __future__ import annotations

import re
from typing import Any

from acidstore.errors import UnsupportedOperationError

__all__ = ["expression_text"]

#: a Spark string literal, a backquoted name, or a number with Spark's type suffix
_TOKEN = re.compile(
    r"(?P<string>'(?:[^'\\]|\\.)*')"
    r"|(?P<quoted>`(?:[^`]|``)*`)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)(?P<suffix>BD|L|S|Y|D|F)?(?![A-Za-z0-9_])",
    re.DOTALL)
#: the escapes Spark's ``escapeSingleQuotedString`` writes (any other ``\x`` is ``x``)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_CASTS = {"D": "DOUBLE", "F": "FLOAT"}
_MARKERS = ("parameter markers (? or :name)", "put the values in the text, or use AcidTable")
_SUBQUERIES = ("subqueries in conditions and values",
               "join the rows as a MERGE source instead (MERGE INTO t USING (SELECT ...) s)")
#: expression classes with no text to print -> what the refusal calls them, and what to do
_REFUSED = {"PosParameter": _MARKERS, "NamedParameter": _MARKERS,
            "ScalarSubquery": _SUBQUERIES, "ListQuery": _SUBQUERIES, "Exists": _SUBQUERIES,
            "LateralSubquery": _SUBQUERIES}


def _string(spark_literal: str) -> str:
    body = spark_literal[1:-1]
    value = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body,
                   flags=re.DOTALL)
    return "'" + value.replace("'", "''") + "'"


def _token(match: re.Match[str]) -> str:
    if match.group("string") is not None:
        return _string(match.group("string"))
    if match.group("number") is not None:
        suffix = match.group("suffix")
        if suffix in _CASTS:  # a DOUBLE to Spark, a DECIMAL if printed bare to DuckDB
            return f"CAST({match.group('number')} AS {_CASTS[suffix]})"
        return match.group("number")
    return match.group(0)


def _check_printable(expression: Any, where: str) -> None:
    """Refuse a node of ``_REFUSED`` anywhere in ``expression`` (a JVM Catalyst expression)."""
    pending = [expression]
    while pending:
        node = pending.pop()
        refused = _REFUSED.get(str(node.getClass().getSimpleName()))
        if refused is not None:
            raise UnsupportedOperationError(
                f"{where}: {refused[0]} are not supported in SQL DML on acidstore tables; "
                f"{refused[1]}")
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.length()))


def expression_text(expression: Any, where: str) -> str:
    """The statement core's SQL text of a parsed (unresolved) Spark expression."""
    _check_printable(expression, where)
    return _TOKEN.sub(_token, str(expression.sql()))
