"""SQL expression checks and evaluation on Arrow."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from acidstore.errors import InvalidExpressionError
from acidstore.expressions import SqlEvaluator, check_expression, referenced_columns

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
