"""SQL texts the table API refuses (bad syntax, unknown columns in expressions, aggregate and
window functions where a row-wise value is asked, values that do not cast): an
``InvalidExpressionError`` naming the text, and the table unchanged (``Unchanged``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from table_errors_support import FIRST, Unchanged, opened_table, rows_table

from acidstore import Table
from acidstore.errors import InvalidExpressionError, InvalidInputError, SchemaMismatchError


@pytest.fixture
def table(tmp_path: Path) -> Iterator[Table]:
    yield from opened_table(tmp_path)


# --- bad SQL --------------------------------------------------------------------------------------

BAD_PREDICATES = ["id = = 1", "id = 1 )", "(id = 1", "", "   ", "id = 1; DROP TABLE t",
                  "nope = 1", "salary +", "read_csv('/etc/passwd') IS NOT NULL",
                  "name"]  # a string, not a boolean


@pytest.mark.parametrize("predicate", BAD_PREDICATES)
def test_bad_delete_predicate_is_an_invalid_expression(table: Table, predicate: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError):
        table.delete(predicate)
    before.check()


@pytest.mark.parametrize("predicate", BAD_PREDICATES)
def test_bad_update_predicate_is_an_invalid_expression(table: Table, predicate: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError):
        table.update(predicate, {"salary": "1"})
    before.check()


@pytest.mark.parametrize("value", ["salary +", "nope + 1", "1; DELETE FROM t", "(1", ""])
def test_bad_set_expression_is_an_invalid_expression(table: Table, value: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError):
        table.update("id = 1", {"salary": value})
    before.check()


# a statement evaluates its SQL one unit (partition, bucket) at a time: an aggregate or a
# window would answer per unit (FIRST spans two partitions: two "first" rows, two maxima)
ROW_WISE = "aggregate or window function"


@pytest.mark.parametrize("predicate", ["row_number() OVER () = 1", "salary = max(salary)",
                                       "id = min(id) OVER (PARTITION BY dt)"])
def test_aggregate_or_window_in_a_predicate_is_refused(table: Table, predicate: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError, match=ROW_WISE):
        table.delete(predicate)
    with pytest.raises(InvalidExpressionError, match=ROW_WISE):
        table.update(predicate, {"salary": "1"})
    with pytest.raises(InvalidExpressionError, match=ROW_WISE):
        table.to_arrow(filter=predicate)
    before.check()


@pytest.mark.parametrize("value", ["max(salary) OVER ()", "sum(salary)", "count(*)"])
def test_aggregate_or_window_in_a_set_value_is_refused(table: Table, value: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError, match=ROW_WISE):
        table.update("id > 0", {"salary": value})
    before.check()


@pytest.mark.parametrize("clause", ["on", "set", "condition", "insert"])
def test_aggregate_or_window_in_a_merge_is_refused(table: Table, clause: str) -> None:
    before = Unchanged(table)
    source = rows_table([{**FIRST[0], "salary": 7}, {**FIRST[1], "id": 9}])
    condition = "t.id = max(s.id)" if clause == "on" else "t.id = s.id"
    merge = table.merge(source, condition)
    with pytest.raises(InvalidExpressionError, match=ROW_WISE):
        if clause in ("on", "set"):
            merge.when_matched_update({"salary": "sum(s.salary)" if clause == "set"
                                       else "s.salary"}).execute()
        elif clause == "condition":
            merge.when_matched_delete(condition="row_number() OVER () = 1").execute()
        else:
            merge.when_not_matched_insert({"id": "s.id", "salary": "max(s.salary) OVER ()",
                                           "dt": "s.dt"}).execute()
    before.check()


def test_set_value_that_does_not_cast_names_column_and_value(table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(SchemaMismatchError,
                       match="value \"'lots'\" for column 'salary' is string"):
        table.update("id = 1", {"salary": "'lots'"})
    before.check()


def test_bad_read_filter_is_an_invalid_expression(table: Table) -> None:
    with pytest.raises(InvalidExpressionError):
        table.to_arrow(filter="id = = 1")
    with pytest.raises(InvalidExpressionError):
        table.to_arrow(filter="nope > 0")


@pytest.mark.parametrize("condition", ["t.id = = s.id", "t.id = s.id)", "t.id = s.id; SELECT 1"])
def test_bad_merge_condition_is_an_invalid_expression(table: Table, condition: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError):
        (table.merge(rows_table(FIRST), condition)
         .when_matched_update({"name": "s.name"}).execute())
    before.check()


def test_merge_condition_on_unknown_column_is_an_invalid_expression(table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidExpressionError, match="nope"):
        (table.merge(rows_table(FIRST), "t.id = s.nope")
         .when_matched_update({"name": "s.name"}).execute())
    before.check()


@pytest.mark.parametrize("clause", ["set", "condition", "insert"])
def test_bad_merge_clause_sql_is_an_invalid_expression(table: Table, clause: str) -> None:
    before = Unchanged(table)
    merge = table.merge(rows_table(FIRST), "t.id = s.id")
    with pytest.raises(InvalidExpressionError):
        if clause == "set":
            merge.when_matched_update({"name": "s.name ||"}).execute()
        elif clause == "condition":
            merge.when_matched_delete(condition="s.salary > > 1").execute()
        else:
            merge.when_not_matched_insert({"id": "s.id", "name": "s.bogus"}).execute()
    before.check()


def test_merge_without_clauses_or_with_bad_aliases(table: Table) -> None:
    with pytest.raises(InvalidInputError, match="at least one WHEN clause"):
        table.merge(rows_table(FIRST), "t.id = s.id").execute()
    with pytest.raises(InvalidInputError, match="aliases must differ"):
        table.merge(rows_table(FIRST), "a.id = a.id", source_alias="a", target_alias="a")
    with pytest.raises(InvalidInputError, match="not a plain identifier"):
        table.merge(rows_table(FIRST), "t.id = s.id", source_alias="s; x")
