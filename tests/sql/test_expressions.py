"""SQL expression checks and evaluation on Arrow."""

from __future__ import annotations

import decimal
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acidstore.errors import InvalidExpressionError
from acidstore.sql.expressions import (
    SqlEvaluator,
    check_expression,
    check_sandboxed,
    referenced_columns,
)

TABLE = pa.table({"id": [1, 2, 3, 4], "Amount": [1.0, -2.0, None, 5.0],
                  "s": ["a", "b", "c", "d"], "select": [1, 0, 1, 0]})


@pytest.fixture
def evaluator() -> SqlEvaluator:
    return SqlEvaluator()


def test_mask_is_sql_where_semantics(evaluator: SqlEvaluator) -> None:
    # NULL comparisons count as false; identifiers are case-insensitive as in SQL
    assert evaluator.mask(TABLE, "amount < 2").to_pylist() == [True, True, False, False]
    assert evaluator.mask(TABLE, "s IN ('a', 'd') OR id = 2").to_pylist() == [
        True, True, False, True]


def test_pyarrow_expression(evaluator: SqlEvaluator) -> None:
    mask = evaluator.mask(TABLE, pc.field("id") > 2)
    assert mask.to_pylist() == [False, False, True, True]


def test_evaluate_set_values(evaluator: SqlEvaluator) -> None:
    out = evaluator.evaluate(TABLE, {"x": "id * 10", "y": "upper(s)"})
    assert out.column("x").to_pylist() == [10, 20, 30, 40]
    assert out.column("y").to_pylist() == ["A", "B", "C", "D"]


@pytest.mark.parametrize("bad", [
    "", "   ", "id >", "nosuch > 1", "1; select 2", "1) AS m FROM t; SELECT (1",
    "(id > 1", "s = 1",
])
def test_bad_expressions_are_typed_errors(evaluator: SqlEvaluator, bad: str) -> None:
    with pytest.raises(InvalidExpressionError):
        evaluator.mask(TABLE, bad)


@pytest.mark.parametrize(("bad", "said"), [
    ("id >", 'syntax error at or near ")"'),
    ("nosuch > 1", 'Referenced column "nosuch" not found'),
    ("CAST(s AS INT) > 1", "Could not convert string"),
])
def test_a_bad_expression_is_one_line_naming_the_users_text(evaluator: SqlEvaluator, bad: str,
                                                             said: str) -> None:
    """DuckDB's message ends with ``LINE 1:`` and the statement acidstore built around the
    user's text (``SELECT 1 FROM __acid_scope0 WHERE ((id >) IS NULL OR TRUE)``) with a caret
    under it: the command line printed that as three more lines after ``acidstore:
    InvalidExpressionError: ...``, showing SQL the user never wrote. The message keeps
    DuckDB's own words (its hints too) on one line."""
    with pytest.raises(InvalidExpressionError) as caught:
        evaluator.mask(TABLE, bad)
    message = str(caught.value)
    assert "\n" not in message and "__acid" not in message and "LINE 1" not in message
    assert repr(bad) in message and said in message


def test_not_a_boolean(evaluator: SqlEvaluator) -> None:
    with pytest.raises(InvalidExpressionError, match="not a boolean"):
        evaluator.mask(TABLE, "id + 1")


def test_no_file_access(evaluator: SqlEvaluator) -> None:
    with pytest.raises(InvalidExpressionError):
        evaluator.mask(TABLE, "id IN (SELECT 1 FROM read_csv('/etc/passwd'))")


def test_semicolon_inside_a_string_is_fine(evaluator: SqlEvaluator) -> None:
    check_expression("s = 'a;b'")
    assert evaluator.mask(TABLE, "s = 'a;b'").to_pylist() == [False] * 4


def test_referenced_columns() -> None:
    names = ["id", "Amount", "s", "select", "other"]
    assert referenced_columns("amount < 0 AND abs(id) > 1", names) == ["id", "Amount"]
    assert referenced_columns('"select" = 1', names) == ["select"]
    assert referenced_columns("s = 'other'", names) == ["s"]
    assert referenced_columns("`ID` = 22 AND `s` > ''", names) == ["id", "s"]  # Spark quoting
    # a name qualified by another table's alias is that table's column, in any spelling
    assert referenced_columns("src.id = t.other AND SRC.`s` > 0", names,
                              other_aliases=["src"]) == ["other"]
    assert referenced_columns('"Src" . amount + t . s', names, other_aliases=["src"]) == ["s"]
    assert referenced_columns("s.id = other.amount", names, own_alias="other",
                              other_aliases=["s"]) == ["Amount"]


@pytest.mark.parametrize("text", [
    "max(id) OVER ()", "row_number() OVER () = 1", "sum(Amount)", "count(*)", "list(s)",
    "id = max(id)", "avg(id) > 0 AND id > 1"])
def test_aggregates_and_windows_are_refused(evaluator: SqlEvaluator, text: str) -> None:
    # a statement evaluates its texts one unit (partition, bucket, batch) at a time: over
    # TABLE these would give answers for these four rows only, not for a whole table
    with pytest.raises(InvalidExpressionError, match="aggregate or window function"):
        evaluator.evaluate(TABLE, {"x": text})
    with pytest.raises(InvalidExpressionError, match="aggregate or window function"):
        check_sandboxed(text, {"": TABLE.schema})


def test_row_wise_functions_still_evaluate(evaluator: SqlEvaluator) -> None:
    out = evaluator.evaluate(TABLE, {"x": "abs(Amount) + length(s)", "y": "greatest(id, 2)"})
    assert out.column("x").to_pylist() == [2.0, 3.0, None, 6.0]
    assert out.column("y").to_pylist() == [2, 2, 3, 4]
    assert evaluator.mask(TABLE, "lower(s) IN ('a', 'c')").to_pylist() == [
        True, False, True, False]


def test_zoned_timestamps_compare_in_utc_whatever_the_local_zone() -> None:
    """The same predicate on naive timestamps must select the same rows on every machine:
    DuckDB otherwise casts TIMESTAMP to TIMESTAMPTZ in the process's local zone (``TZ``)."""
    code = (
        "import datetime, pyarrow as pa\n"
        "from acidstore.sql.expressions import SqlEvaluator\n"
        "t = pa.table({'ts': pa.array([datetime.datetime(2024, 1, 1, 12),"
        " datetime.datetime(2024, 1, 1)], pa.timestamp('us'))})\n"
        "e = SqlEvaluator()\n"
        "print(e.mask(t, \"ts < TIMESTAMPTZ '2024-01-01 06:00:00+00'\").to_pylist(),"
        " e.evaluate(t, {'z': 'ts::TIMESTAMPTZ'}).column(0).cast(pa.int64()).to_pylist())\n")
    outputs = {zone: subprocess.run([sys.executable, "-c", code], env={**os.environ, "TZ": zone},
                                    capture_output=True, text=True, check=True).stdout
               for zone in ("UTC", "Asia/Tokyo", "America/Los_Angeles")}
    assert set(outputs.values()) == {"[False, True] [1704110400000000, 1704067200000000]\n"}


NUMBERS = pa.table({
    "f": pa.array([0.3, 0.30000000000000004, 0.1, 5.0], pa.float64()),
    "r": pa.array([0.1, 0.3, 1.0, 16777216.0], pa.float32()),
    "d": pa.array([decimal.Decimal("12345678901234567.891"), decimal.Decimal("0.300"),
                   decimal.Decimal("5.000"), decimal.Decimal("0.100")], pa.decimal128(38, 3)),
    "i": pa.array([3, 1, 16777217, 0], pa.int64()),
})


@pytest.mark.parametrize("predicate", [
    "f = 0.1 + 0.2", "f > 0.1 + 0.2", "f = 0.3", "i * 0.1 = 0.3", "r = 0.1", "r = 16777217",
    "d = 12345678901234567.890", "d > 12345678901234567.8905", "d = 0.1 + 0.2", "d = 5",
    "f * 10 = 3", "i = 3"])
def test_a_filter_selects_what_duckdb_selects(evaluator: SqlEvaluator, predicate: str) -> None:
    """The compiled Arrow path may only answer where its answer is DuckDB's: a fractional
    literal is an exact DECIMAL in DuckDB and a double in Arrow, so ``f = 0.1 + 0.2``, a
    DECIMAL or a FLOAT column must go to DuckDB (a DELETE removed a row SQL keeps)."""
    import duckdb

    expected = [bool(v) for (v,) in duckdb.connect().execute(
        f"SELECT coalesce(({predicate}), false) FROM NUMBERS").fetchall()]
    assert evaluator.mask(NUMBERS, predicate).to_pylist() == expected
    # the same rows in a batch with a NaN (which sends a batch to DuckDB) answer alike
    with_nan = pa.concat_tables([NUMBERS, NUMBERS.slice(0, 1).set_column(
        0, "f", pa.array([float("nan")], pa.float64()))])
    assert evaluator.mask(with_nan, predicate).to_pylist()[:4] == expected


@pytest.mark.parametrize(("text", "ok"), [
    ("s IN ('é', 'a')", True), ("s = '日本' OR (id > 2)", True),
    ("s = 'a' AND \"é(\" > 1", True),  # a parenthesis inside a quoted name is a name
    ("s = 'éééééééé');SELECT 1", False), ("s = 'ü' OR id = 1; SELECT 2", False)])
def test_the_one_expression_check_counts_characters_not_bytes(text: str, ok: bool) -> None:
    """DuckDB's token offsets are UTF-8 bytes: taken as characters they shifted every token
    after a non-ASCII one, refusing good filters and passing a ';'."""
    if ok:
        check_expression(text)
    else:
        with pytest.raises(InvalidExpressionError):
            check_expression(text)
