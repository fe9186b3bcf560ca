"""PySpark Column objects as the SQL text the statement core evaluates.

A DELETE, UPDATE or MERGE given SQL strings runs on the statement core (each Spark task decodes
only the columns the statement names and evaluates it with Arrow/DuckDB). A Column is an
unresolved Spark expression tree; when every node of it has one meaning in both dialects
(column references, plain literals, comparisons, arithmetic, AND/OR/NOT, IS [NOT] NULL, IN,
CASE, LIKE without escapes, ``F.expr`` text and a few functions) it is printed as that SQL and
runs on the core too, which also puts it through the same sandbox as a string. Anything else
(Python UDFs, casts, date/time literals, functions whose NULL or rounding rules differ) gives
None, and the caller keeps Spark's DataFrame path, which evaluates it as Spark does.

Where the same text means something else to DuckDB, the text says Spark's meaning or the node
is refused: a float literal is a DOUBLE to Spark and a DECIMAL to DuckDB (``0.1`` equals a
FLOAT 0.1 there, and ``decimal_col + 0.2 = 0.3`` is exact), so it is printed as a cast to
DOUBLE; ``/`` is Spark's DIVIDE_BY_ZERO error (NULL without ANSI) and a DECIMAL for decimals,
DuckDB's infinity and a DOUBLE; ``lower``/``upper`` map Unicode case as Java does
(``'ß'`` -> ``'SS'``), DuckDB does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column

__all__ = ["column_sql"]

_BINARY = {"=": "=", "<=>": "IS NOT DISTINCT FROM", "<": "<", "<=": "<=", ">": ">",
           ">=": ">=", "+": "+", "-": "-", "*": "*", "%": "%", "and": "AND", "or": "OR"}
_POSTFIX = {"isnull": "IS NULL", "isnotnull": "IS NOT NULL"}
#: same result, NULL handling included, in Spark and DuckDB
_FUNCTIONS = frozenset({"abs", "coalesce"})
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _UntranslatableError(Exception):
    """A node with no single meaning in both dialects."""


def column_sql(column: Column) -> str | None:
    """The SQL text of ``column``, or None when it cannot be said the same way in both."""
    try:
        java: Any = column._jc  # the JVM Column behind it (classic PySpark)
        node = java.node()
    except Exception:  # not a classic JVM Column (e.g. Spark Connect): keep Spark's path
        return None
    try:
        return _sql(node)
    except _UntranslatableError:
        return None


def _children(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.length())]


def _identifier(part: str) -> str:
    return part if _PLAIN.fullmatch(part) else '"' + part.replace('"', '""') + '"'


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return f"CAST({value!r} AS DOUBLE)"  # DuckDB reads a bare 0.1 as a DECIMAL
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise _UntranslatableError(f"literal {value!r}")


def _function(node: Any) -> str:
    if node.isDistinct() or node.isUserDefinedFunction():
        raise _UntranslatableError("aggregate or user-defined function")
    name = str(node.functionName())
    args = [_sql(a) for a in _children(node.arguments())]
    lowered = name.lower()
    if lowered in _BINARY and len(args) == 2:
        return f"({args[0]} {_BINARY[lowered]} {args[1]})"
    if lowered in ("!", "not") and len(args) == 1:
        return f"(NOT {args[0]})"
    if lowered in _POSTFIX and len(args) == 1:
        return f"({args[0]} {_POSTFIX[lowered]})"
    if lowered == "in" and len(args) >= 2:
        return f"({args[0]} IN ({', '.join(args[1:])}))"
    if lowered == "like" and len(args) == 2 and "\\" not in args[1]:
        return f"({args[0]} LIKE {args[1]})"  # Spark's LIKE escapes with '\', DuckDB's not
    if lowered in _FUNCTIONS:
        return f"{lowered}({', '.join(args)})"
    raise _UntranslatableError(f"function {name}")


def _case(node: Any) -> str:
    branches = [f"WHEN {_sql(b._1())} THEN {_sql(b._2())}" for b in _children(node.branches())]
    otherwise = node.otherwise()
    tail = f" ELSE {_sql(otherwise.get())}" if otherwise.isDefined() else ""
    return f"(CASE {' '.join(branches)}{tail} END)"


_NODES: dict[str, Callable[[Any], str]] = {
    "UnresolvedAttribute": lambda n: ".".join(
        _identifier(str(p)) for p in _children(n.nameParts())),
    "Literal": lambda n: _literal(n.value()),
    "UnresolvedFunction": _function,
    "CaseWhenOtherwise": _case,
    "SqlExpression": lambda n: f"({n.expression()})",
}


def _sql(node: Any) -> str:
    kind = str(node.getClass().getSimpleName())
    if kind == "UnresolvedAttribute" and node.isMetadataColumn():
        raise _UntranslatableError("metadata column")
    translate = _NODES.get(kind)
    if translate is None:
        raise _UntranslatableError(kind)
    return translate(node)
