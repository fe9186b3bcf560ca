"""SQL expression strings evaluated on Arrow data (DuckDB), and pyarrow expressions.

Predicates and SET values are SQL strings so that the same text works embedded and on Spark.
They are evaluated by an in-process DuckDB connection with external access disabled (an
expression cannot read or write files) and are checked token by token first: an expression is
one expression, never a way to append another statement.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.config import PREDICATE_TEXTS_KEPT
from acidstore.errors import InvalidExpressionError
from acidstore.sql.compiled import Compiled, NeedsDuckDBError, compile_predicate
from acidstore.sql.tokens import integer_literals_only

__all__ = ["Predicate", "SqlEvaluator", "check_expression", "check_sandboxed",
           "mentions_alias", "quote", "referenced_columns"]

Predicate: TypeAlias = str | pc.Expression
"""What a filter/condition may be: a SQL expression string or a pyarrow expression."""

_TABLE = "__acidstore_batch"


@functools.lru_cache(maxsize=PREDICATE_TEXTS_KEPT)
def _tokens(text: str) -> tuple[tuple[str, str], ...]:
    """(token text, token type name) of a SQL expression, kept per text in a process (one
    statement checks its predicate in each scan it makes)."""
    try:
        spans = duckdb.tokenize(text)
    except Exception as exc:  # duckdb raises its own error types
        raise InvalidExpressionError(f"cannot parse expression {text!r}: {exc}") from exc
    # DuckDB's offsets count UTF-8 bytes, not characters: slicing the str by them shifted
    # every token after a non-ASCII character (a ';' or ')' could hide inside a string)
    data = text.encode()
    out = []
    for i, (start, kind) in enumerate(spans):
        end = spans[i + 1][0] if i + 1 < len(spans) else len(data)
        out.append((data[start:end].decode().strip(), getattr(kind, "name", str(kind))))
    return tuple(out)


def quote(identifier: str) -> str:
    escaped = identifier.replace('"', '""')
    return f'"{escaped}"'


def check_expression(text: str) -> None:
    """Refuse text that is not a single expression (a ';', unbalanced parentheses, empty)."""
    if not text.strip():
        raise InvalidExpressionError("empty expression")
    depth = 0
    for token, kind in _tokens(text):
        if kind in ("string_const", "comment") or token[:1] in ('"', "`"):  # quoted names too
            continue
        for char in token:
            if char == ";":
                raise InvalidExpressionError(f"expression {text!r} contains ';'")
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth < 0:
                    raise InvalidExpressionError(f"unbalanced ')' in expression {text!r}")
    if depth:
        raise InvalidExpressionError(f"unbalanced '(' in expression {text!r}")


def check_sandboxed(text: str, scope: Mapping[str, pa.Schema]) -> None:
    """Refuse SQL text that the embedded engine's sandbox does not accept over tables of
    these columns (``scope``: alias -> schema; "" for unqualified names): an expression
    another engine (Spark) is about to evaluate is first bound by DuckDB with external access
    off, so file reads, subqueries over paths, ``java_method`` or ``reflect`` (which DuckDB
    does not have), aggregates and window functions are refused on every engine alike.
    Nothing is evaluated: the tables are empty."""
    check_expression(text)
    evaluator = SqlEvaluator()
    try:
        evaluator.check_row_wise(scope, [text])
    finally:
        evaluator.close()


def _identifier(token: str) -> str:
    """An identifier token's name: quoted as "x" (SQL) or `x` (Spark SQL's style, which
    DuckDB accepts too), else as written."""
    quote_char = token[0] if token[:1] in ('"', "`") else ""
    return token[1:-1].replace(quote_char * 2, quote_char) if quote_char else token


def _name_paths(text: str) -> list[list[str]]:
    """Each (possibly dotted) name of a SQL expression as its parts, lower-cased: ``s.id``
    -> ["s", "id"]. DuckDB tokenizes unreserved keywords used as column names (name, type,
    value, year, ...) as "keyword"; a keyword that is no column is dropped by the caller."""
    paths: list[list[str]] = []
    dotted = False
    for token, kind in _tokens(text):
        if token == ".":
            dotted = bool(paths)
            continue
        if kind in ("identifier", "keyword"):
            parts = [_identifier(p).lower() for p in token.split(".")] if token[:1] not in (
                '"', "`") else [_identifier(token).lower()]
            if dotted:
                paths[-1].extend(parts)
            else:
                paths.append(parts)
        dotted = False
    return paths


def referenced_columns(text: str, names: Iterable[str], *, own_alias: str | None = None,
                       other_aliases: Iterable[str] = ()) -> list[str]:
    """The column names of ``names`` that the SQL expression mentions (case-insensitively, as
    SQL identifiers are), in ``names`` order. Used to decode only what a predicate needs.
    In a MERGE, a name qualified by the table's own alias (``t.id``) is the column after the
    qualifier, and one qualified by another table's (the source's: ``s.id``) is not ours, even
    where an alias is spelled like a column (a column ``s`` beside ``... = s.id`` was once
    decoded for nothing). Any other part of a dotted name may be a column (a column, or a
    struct field: counting too many costs only decoding)."""
    own = own_alias.lower() if own_alias else None
    others = {a.lower() for a in other_aliases}
    said: set[str] = set()
    for path in _name_paths(text):
        if len(path) > 1 and path[0] in others:
            continue
        said.update(path[1:] if len(path) > 1 and path[0] == own else path)
    return [n for n in names if n.lower() in said]


def mentions_alias(text: str, alias: str) -> bool:
    """Whether the SQL expression names something qualified by ``alias`` (``s.id``,
    ``"s".id``, any case): a MERGE clause that acts where no source row exists must not."""
    return any(len(path) > 1 and path[0] == alias.lower() for path in _name_paths(text))


class SqlEvaluator:
    """Evaluates SQL expressions over Arrow tables on a private, file-less DuckDB connection.

    One evaluator may be used from several threads; each evaluation gets its own cursor.
    """

    def __init__(self) -> None:
        # opened on first use: predicates the Arrow subset compiles never need DuckDB, and a
        # connection costs ~25 ms (per statement unit, per Spark task)
        self._connection: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()
        self._compiled: dict[tuple[str, tuple[str, ...]], Compiled | None] = {}
        self._row_wise: set[tuple[tuple[tuple[str, pa.Schema], ...], str]] = set()

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if self._connection is None:
                connection = duckdb.connect(config={"enable_external_access": False})
                # zoned timestamps compare and cast in UTC, not in the process's local zone
                # (``TZ``): the same statement must mean the same thing on every machine;
                # GLOBAL, so that every cursor of the connection gets it
                connection.execute("SET GLOBAL TimeZone = 'UTC'")
                self._connection = connection
            return self._connection.cursor()

    def evaluate(self, table: pa.Table, expressions: dict[str, str]) -> pa.Table:
        """Evaluate named SQL expressions over ``table``; one output column per expression."""
        for text in expressions.values():
            check_expression(text)
        compiled = self._compiled_values(table, expressions)
        if compiled is not None:
            return compiled
        self.check_row_wise({"": table.schema}, expressions.values())
        shown = "; ".join(expressions.values())
        select = ", ".join(f"({text}) AS {quote(name)}" for name, text in expressions.items())
        cursor = self._cursor()
        try:
            cursor.register(_TABLE, table)
            relation = cursor.sql(f"SELECT {select} FROM {_TABLE}")
            # DuckDB 2 renamed fetch_arrow_table (1.x) to to_arrow_table
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            result: pa.Table = fetch()
        except duckdb.Error as exc:
            raise InvalidExpressionError(f"cannot evaluate {shown!r}: {_said(exc)}") from exc
        finally:
            cursor.close()
        return result

    def _compiled_values(self, table: pa.Table, expressions: dict[str, str]
                         ) -> pa.Table | None:
        """The expressions computed by Arrow when all are in the compiled subset, so that a
        small UPDATE (``v = v + 1``) never opens DuckDB (a connection costs ~30 ms, more than
        the rest of such a statement). Decimal results go to DuckDB, and floating point ones
        except where both compute the same IEEE double operations (``_same_doubles``): with a
        fractional literal DuckDB's literal types (``1.5`` is a DECIMAL) and Arrow's (a
        double) could round differently once cast to the column. Those, and anything Arrow
        refuses, go to DuckDB."""
        columns: dict[str, pa.ChunkedArray] = {}
        for name, text in expressions.items():
            value = self._run_compiled(table, text)
            if value is None or pa.types.is_decimal(value.type) or (
                    pa.types.is_floating(value.type)
                    and not _same_doubles(table, text, value)):
                return None
            if isinstance(value, pa.Scalar):
                value = pa.repeat(value, table.num_rows)
            columns[name] = value if isinstance(value, pa.ChunkedArray) \
                else pa.chunked_array([value], type=value.type)
        return pa.table(columns)

    def _run_compiled(self, table: pa.Table, text: str) -> Any:
        """``text`` computed by Arrow over ``table`` (an Array or Scalar), compiled once per
        column list; None outside the compiled subset, where Arrow refuses, or where Arrow's
        answer could differ from DuckDB's for some row (``_exact_in_arrow``): Arrow takes a
        fractional literal as a double where DuckDB keeps it an exact DECIMAL (``f = 0.1 +
        0.2`` is false in one and true in the other) and compares DECIMAL and FLOAT columns
        in other types, so the same row could match or not depending on which evaluator its
        batch went to (a batch holding a NaN goes to DuckDB), and a DELETE remove a row SQL
        keeps."""
        key = (text, tuple(table.column_names))
        if key not in self._compiled:  # one evaluator's tables of these names have one schema
            self._compiled[key] = compile_predicate(text, table.column_names) \
                if _exact_in_arrow(table.schema, text) else None
        compiled = self._compiled[key]
        if compiled is None:
            return None
        try:
            return compiled(table)
        except (pa.ArrowException, NeedsDuckDBError, TypeError):
            return None

    def _compiled_mask(self, table: pa.Table, predicate: str) -> pa.BooleanArray | None:
        result = self._run_compiled(table, predicate)
        if result is None or not pa.types.is_boolean(result.type):
            return None
        if isinstance(result, pa.Scalar):
            result = pa.repeat(result, table.num_rows)
        filled = pc.fill_null(result, False)
        out: pa.BooleanArray = filled.combine_chunks() if isinstance(
            filled, pa.ChunkedArray) else filled
        return out

    def check_row_wise(self, scope: Mapping[str, pa.Schema], texts: Iterable[str]) -> None:
        """Refuse aggregate and window functions in ``texts`` (over tables of ``scope``:
        alias -> schema, "" for unqualified names). A statement evaluates its expressions on
        one unit of the table at a time (a partition, a bucket, a batch of rows), so
        ``max(v)`` or ``row_number() OVER ()`` would silently see that unit instead of the
        table, and answer differently as the layout changes. Each text is bound (over empty
        tables: nothing is evaluated) inside a WHERE clause, where SQL allows neither, so
        every aggregate DuckDB knows is found, not just a list of names. Once per evaluator,
        text and scope."""
        scoped = tuple(scope.items())
        unchecked = [text for text in texts if (scoped, text) not in self._row_wise]
        if not unchecked:  # the common case: every batch of a scan after its first
            return
        tables = {f"__acid_scope{i}": schema.empty_table()
                  for i, schema in enumerate(scope.values())}
        sources = ", ".join(f"__acid_scope{i}" + (f" AS {quote(alias)}" if alias else "")
                            for i, alias in enumerate(scope))
        for text in unchecked:
            try:
                self.query(tables, f"SELECT 1 FROM {sources} WHERE (({text}) IS NULL OR TRUE) "
                           "LIMIT 0", shown=repr(text))
            except InvalidExpressionError as exc:
                said = str(exc.__cause__).lower()
                if "aggregate" in said or "window" in said:
                    raise InvalidExpressionError(
                        f"{text!r} uses an aggregate or window function: an expression is "
                        "evaluated row by row, on one part of the table at a time, so such a "
                        "function would see only that part; compute the value first and pass "
                        "it as a literal") from exc
                raise
            self._row_wise.add((scoped, text))

    def query(self, tables: dict[str, pa.Table], sql: str, *, shown: str) -> pa.Table:
        """Run a SELECT that acidstore built (user pieces already passed ``check_expression``)
        over named Arrow tables; ``shown`` names the user's text in error messages."""
        cursor = self._cursor()
        try:
            for name, table in tables.items():
                cursor.register(name, table)
            relation = cursor.sql(sql)
            fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
            result: pa.Table = fetch()
        except duckdb.Error as exc:
            raise InvalidExpressionError(f"cannot evaluate {shown}: {_said(exc)}") from exc
        finally:
            cursor.close()
        return result

    def mask(self, table: pa.Table, predicate: Predicate) -> pa.BooleanArray:
        """Rows where ``predicate`` is TRUE (NULL counts as false, as in a SQL WHERE).

        Simple predicates run as compiled Arrow compute; the rest, and anything Arrow refuses
        at run time, go to DuckDB, which is also what reports errors."""
        if isinstance(predicate, pc.Expression):
            return _expression_mask(table, predicate)
        fast = self._compiled_mask(table, predicate)
        if fast is not None:
            return fast
        column = self.evaluate(table, {"m": predicate}).column(0)
        if not pa.types.is_boolean(column.type):
            raise InvalidExpressionError(
                f"predicate {predicate!r} is {column.type}, not a boolean")
        filled: pa.ChunkedArray = pc.fill_null(column, False)
        return filled.combine_chunks()


def _said(exc: duckdb.Error) -> str:
    """DuckDB's message on one line, without its ``LINE 1:`` excerpt: that shows the
    statement acidstore built around the user's text (``SELECT 1 FROM __acid_scope0 WHERE
    ((...) IS NULL OR TRUE)``), which the user never wrote, and the command line prints an
    error as one line. Its hints (``Candidate bindings: "id"``) stay."""
    text = str(exc).split("\n\nLINE ", 1)[0]
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _expression_mask(table: pa.Table, expression: pc.Expression) -> pa.BooleanArray:
    """Evaluate a pyarrow expression to one boolean per row, NULL as false."""
    import pyarrow.dataset as ds

    try:
        column = ds.dataset(table).to_table(columns={"m": expression}).column(0)
    except (pa.ArrowException, TypeError) as exc:
        raise InvalidExpressionError(f"cannot evaluate {expression}: {exc}") from exc
    if not pa.types.is_boolean(column.type):
        raise InvalidExpressionError(f"predicate {expression} is {column.type}, not a boolean")
    filled: pa.ChunkedArray = pc.fill_null(column, False)
    out: pa.BooleanArray = filled.combine_chunks()
    return out


def _exact_in_arrow(schema: pa.Schema, text: str) -> bool:
    """Whether compiled Arrow compute evaluates ``text`` as DuckDB does (see
    ``SqlEvaluator._run_compiled``): integer literals only, and no DECIMAL or
    half/single-precision float column among those it names."""
    if not integer_literals_only(text):
        return False
    for name in referenced_columns(text, schema.names):
        kind = schema.field(name).type
        if pa.types.is_decimal(kind) or pa.types.is_float16(kind) or pa.types.is_float32(kind):
            return False
    return True


def _same_doubles(table: pa.Table, text: str, value: Any) -> bool:
    """Whether Arrow's floating-point ``value`` of ``text`` is DuckDB's to the bit: a double
    computed from double and integer columns and integer literals (``v1 + 1``, ``v * 2 - c``)
    is the same sequence of IEEE double operations in both (the integers convert exactly
    below 2**53, which ``integer_literals_only`` requires of literals). A FLOAT column, a
    fractional literal, or a result that is not finite (DuckDB raises on a double overflow
    where Arrow gives infinity) leaves it to DuckDB."""
    if not pa.types.is_float64(value.type) or not integer_literals_only(text):
        return False
    for name in referenced_columns(text, table.column_names):
        kind = table.schema.field(name).type
        if not (pa.types.is_float64(kind) or pa.types.is_integer(kind)):
            return False
    finite = pc.is_finite(value)
    if isinstance(finite, pa.Scalar):
        return finite.as_py() is not False
    return bool(pc.all(finite).as_py() is not False)
