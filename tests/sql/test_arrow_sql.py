"""Compiled Arrow predicates give exactly DuckDB's answers (three-valued, NULLs included)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidstore.sql.compiled import NeedsDuckDBError, compile_predicate
from acidstore.sql.expressions import SqlEvaluator

TABLE = pa.table({
    "i": pa.array([1, -5, None, 0, 42, 7, 2**40, None], pa.int64()),
    "j": pa.array([3, 3, 1, None, -2, 7, 0, 9], pa.int32()),
    "f": pa.array([0.5, -1.25, 3.0, None, 0.0, -0.0, 1e9, 2.5], pa.float64()),
    "s": pa.array(["a", "b", None, "", "ab", "B", "a'b", "z"]),
    "b": pa.array([True, False, None, True, False, True, None, False]),
    "g": pa.array([0.1, 1.5, None, -2.0, 3.25, 0.0, 1e30, 7.0], pa.float32()),
    "h": pa.array([1e300, 0.1, None, 1e-300, -1e300, 2.0, 0.3, float("inf")], pa.float64()),
})
EVALUATOR = SqlEvaluator()

numbers = st.sampled_from(["i", "j", "f", "0", "1", "-3", "2.5", "NULL", "(i + j)", "(j * 2)",
                           "(f - 1)", "-j", "(i % 7)", "(-i % 3)", "(i % j)", "(j % -2)",
                           "(f % 2)", "(f + 1)", "(f * 3 - i)", "(h * 10)", "(h + j)",
                           "(g + 1)", "(f + 0.1)", "(" + " * ".join(["f"] * 35) + ")"])  # overflows
strings = st.sampled_from(["s", "'a'", "'b'", "''", "'a''b'", "NULL"])
comparisons = st.sampled_from(["=", "<>", "!=", "<", "<=", ">", ">="])


@st.composite
def predicates(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 7 if depth < 2 else 4))
    if kind == 0:
        return f"{draw(numbers)} {draw(comparisons)} {draw(numbers)}"
    if kind == 1:
        return f"{draw(strings)} {draw(comparisons)} {draw(strings)}"
    if kind == 2:
        negate = draw(st.sampled_from(["", "NOT "]))
        items = ", ".join(draw(st.lists(st.sampled_from(["1", "7", "-5", "NULL", "42"]),
                                        min_size=1, max_size=4)))
        return f"{draw(st.sampled_from(['i', 'j']))} {negate}IN ({items})"
    if kind == 3:
        return f"{draw(numbers)} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN " \
               f"{draw(numbers)} AND {draw(numbers)}"
    if kind == 4:
        return f"{draw(st.sampled_from(['i', 's', 'f', 'b']))} IS " \
               f"{draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == 5:
        return f"NOT ({draw(predicates(depth + 1))})"
    op = draw(st.sampled_from(["AND", "OR"]))
    return f"({draw(predicates(depth + 1))}) {op} ({draw(predicates(depth + 1))})"


def duckdb_values(text: str) -> list[object] | None:
    try:
        values: list[object] = EVALUATOR.evaluate(TABLE, {"m": text}).column("m").to_pylist()
    except Exception:  # DuckDB refusing is a legitimate outcome to compare
        return None
    return values


def same(a: list[object], b: list[object]) -> bool:
    return all(x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x)
                          and math.isnan(y)) for x, y in zip(a, b, strict=True))


def check_same_as_duckdb(text: str) -> None:
    compiled = compile_predicate(text, TABLE.column_names)
    assert compiled is not None, f"the subset should cover {text!r}"
    try:
        result = compiled(TABLE)
    except (pa.ArrowException, NeedsDuckDBError):
        return  # the evaluator falls back to DuckDB for these
    ours = [result.as_py()] * TABLE.num_rows if isinstance(result, pa.Scalar) \
        else result.to_pylist()
    theirs = duckdb_values(text)
    assert theirs is not None, f"DuckDB refused {text!r} but Arrow answered {ours}"
    assert same(ours, theirs), f"{text!r}: arrow {ours} != duckdb {theirs}"


# cheap (about 3 ms an example), so more examples than the profile default
@settings(max_examples=400)
@given(predicates())
def test_compiled_equals_duckdb(text: str) -> None:
    check_same_as_duckdb(text)


@pytest.mark.parametrize("op", ["=", "<>", "!=", "<", "<=", ">", ">="])
@pytest.mark.parametrize(("left", "right"), [("i", "j"), ("j", "7"), ("f", "0"), ("s", "'ab'"),
                                              ("i", "i"), ("-j", "i + 1")])
def test_each_comparison(op: str, left: str, right: str) -> None:
    check_same_as_duckdb(f"{left} {op} {right}")


@pytest.mark.parametrize("text", ["i % 7 = 2", "-i % 3 = -2", "i % j % 2 = 1", "j % -2 = -1",
                                  "i % (j + 1) = 0"])
def test_modulo_has_the_sign_of_the_dividend(text: str) -> None:
    check_same_as_duckdb(text)


@pytest.mark.parametrize("text", ["upper(s) = 'A'", "i / 2 > 1", "s LIKE 'a%'",
                                  "CASE WHEN b THEN 1 END = 1", "CAST(i AS VARCHAR) = '1'",
                                  "i = ", "nosuch = 1"])
def test_outside_the_subset_is_left_to_duckdb(text: str) -> None:
    assert compile_predicate(text, TABLE.column_names) is None


def test_nan_comparisons_fall_back() -> None:
    table = pa.table({"f": [float("nan"), 1.0]})
    compiled = compile_predicate("f > 0", table.column_names)
    assert compiled is not None
    with pytest.raises(NeedsDuckDBError):
        compiled(table)
    # through the evaluator the answer is DuckDB's: NaN is greater than every number
    assert SqlEvaluator().mask(table, "f > 0").to_pylist() == [True, True]


@settings(max_examples=200)
@given(st.one_of(numbers, strings, predicates()))
def test_set_values_computed_by_arrow_equal_duckdb(text: str) -> None:
    """``SqlEvaluator.evaluate`` (UPDATE's SET values) takes Arrow for the compiled subset:
    where it does, the values must be DuckDB's."""
    arrow = EVALUATOR._compiled_values(TABLE, {"m": text})
    if arrow is None:
        return  # DuckDB computes it
    theirs = duckdb_values(text)
    assert theirs is not None, f"DuckDB refused {text!r} but Arrow answered"
    assert same(arrow.column("m").to_pylist(), theirs), text


@pytest.mark.parametrize(("text", "arrow"), [("i + 1", True), ("s", True), ("'x'", True),
                                              ("j * 2 - i", True), ("f + 1", True),
                                              ("f * 2 - j", True), ("f + 0.5", False),
                                              ("f + 1e0", False), ("g + 1", False),
                                              ("h * 10", False), ("h + 1", False),
                                              ("i + 1.5", False), ("upper(s)", False),
                                              ("i / 2", False)])
def test_which_set_values_skip_duckdb(text: str, arrow: bool) -> None:
    assert (EVALUATOR._compiled_values(TABLE, {"m": text}) is not None) == arrow
    assert EVALUATOR.evaluate(TABLE, {"m": text}).num_rows == TABLE.num_rows


@pytest.mark.parametrize("kind", [pa.int8(), pa.int16(), pa.int32(), pa.int64()])
@pytest.mark.parametrize("divisor", [1, 2, 7, -3, 100, 2**40])
def test_remainder_by_a_constant_equals_the_checked_kernels(kind: pa.DataType,
                                                            divisor: int) -> None:
    """The numpy fast path of ``column % constant`` against Arrow's divide/multiply/subtract
    (which DuckDB's answers are held to above), nulls and chunks included."""
    info = np.iinfo(kind.to_pandas_dtype())
    values = [info.min, info.min + 1, -7, -1, 0, None, 1, 5, 99, info.max]
    column = pa.chunked_array([pa.array(values[:4], kind), pa.array(values[4:], kind)])
    table = pa.table({"x": column})
    compiled = compile_predicate(f"x % {divisor}", ["x"])
    assert compiled is not None
    fast = compiled(table)
    b = pa.scalar(divisor, pa.int64())
    slow = pc.subtract_checked(column, pc.multiply_checked(pc.divide_checked(column, b), b))
    assert fast.type == slow.type == pa.int64()
    assert fast.to_pylist() == slow.to_pylist()


def _values(compiled: object) -> object:
    assert callable(compiled)
    try:
        result = compiled(TABLE)
    except (pa.ArrowException, NeedsDuckDBError) as exc:
        return type(exc)
    return [result.as_py()] * TABLE.num_rows if isinstance(result, pa.Scalar) \
        else result.to_pylist()


@settings(max_examples=100)
@given(predicates())
def test_a_kept_text_answers_as_one_taken_apart_afresh(text: str) -> None:
    """A process keeps each text's tokens and compiled form (``config.PREDICATE_TEXTS_KEPT``): asked
    again, or by another module, it must answer what parsing it anew answers."""
    from acidstore.sql import compiled, expressions, predicate_terms, tokens

    for _ in range(2):  # the second call is answered from what the first kept
        assert tokens.tokens_of(text) == tokens.scan_tokens(text)
        assert expressions._tokens(text) == expressions._tokens.__wrapped__(text)
        for exact in (False, True):
            assert predicate_terms._ranges(text, TABLE.column_names, exact=exact) == \
                predicate_terms._scan_ranges(text, TABLE.column_names, exact=exact)
        kept = compile_predicate(text, TABLE.column_names)
        fresh = compiled._compiled.__wrapped__(text, tuple(TABLE.column_names))
        assert (kept is None) == (fresh is None)
        if kept is not None:
            ours, theirs = _values(kept), _values(fresh)
            assert ours == theirs if isinstance(ours, type) else \
                same(ours, theirs), text  # type: ignore[arg-type]


def test_kept_tokens_are_a_new_list_for_every_caller() -> None:
    from acidstore.sql import predicate_terms, tokens

    first = tokens.tokens_of("i = 1 AND j IN (1, 2)")
    first.clear()  # a parser consumes its list; the kept tokens must not change
    assert tokens.tokens_of("i = 1 AND j IN (1, 2)") == tokens.scan_tokens(
        "i = 1 AND j IN (1, 2)")
    assert compile_predicate("i = 1", ["I", "j"]) is not compile_predicate("i = 1", ["i", "j"])
    ranges = predicate_terms.integer_ranges("i < 3 AND j IN (1, 2)", ["i", "j"])
    ranges["i"].append((7, 7))  # a caller's copy: the kept ranges must not change
    assert predicate_terms.integer_ranges("i < 3 AND j IN (1, 2)", ["i", "j"]) == {
        "i": [(None, 2)], "j": [(1, 1), (2, 2)]}
