"""The MERGE join in Arrow (``ON t.a = s.b``, a WHEN MATCHED clause without a condition,
values that are source columns) gives exactly what the DuckDB join gives: the same matched
target rows, clauses, SET values, matched source rows and cardinality errors; and INSERT *
rows taken in Arrow equal DuckDB's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidstore.engine.merge_keys import key_hits
from acidstore.engine.merge_match import (
    MergeClause,
    MergeMatch,
    MergeSpec,
    _duckdb_match,
    _key_match,
    not_matched_rows,
)
from acidstore.errors import MergeCardinalityError
from acidstore.sql.expressions import SqlEvaluator

USER = ["id", "v", "name"]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("name", pa.string())])
EVALUATOR = SqlEvaluator()


def _spec(source: pa.Table, condition: str, matched: list[MergeClause],
          not_matched: list[MergeClause]) -> MergeSpec:
    return MergeSpec.build(source, condition, source_alias="s", target_alias="t",
                           matched=matched, not_matched=not_matched)


def _outcome(found: MergeMatch) -> tuple[object, ...]:
    """What the caller uses: the SET values of the clause every matched row takes (the first:
    it has no condition; DuckDB also computes later clauses' values, which no row takes)."""
    first = [c for c in found.values.column_names if c.startswith("__u0_")]
    return (found.positions.tolist(), found.clauses.tolist(),
            found.values.select(first).to_pylist(), len(found.values),
            sorted(set(found.matched_source.tolist())))  # used as a set (not_matched_rows)


def _both(spec: MergeSpec, target: pa.Table) -> tuple[object, object]:
    def arrow() -> MergeMatch | None:
        return _key_match(spec, target, USER, "w")

    def duck() -> MergeMatch | None:
        return _duckdb_match(spec, target, USER, "w", EVALUATOR)

    results: list[object] = []
    for fn in (arrow, duck):
        try:
            found = fn()
            assert found is not None, "the Arrow join declined a MERGE it should take"
            results.append(_outcome(found))
        except MergeCardinalityError:
            results.append("cardinality")
    return results[0], results[1]


keys = st.one_of(st.none(), st.integers(-5, 12))


@settings(max_examples=150, deadline=None)
@given(target_keys=st.lists(keys, max_size=30), source_keys=st.lists(keys, max_size=20),
       kind=st.sampled_from(["update_all", "update_some", "delete", "none"]),
       key_type=st.sampled_from([pa.int64(), pa.int32(), pa.string()]),
       flipped=st.booleans())
def test_arrow_join_equals_duckdb(target_keys: list[int | None], source_keys: list[int | None],
                                  kind: str, key_type: pa.DataType, flipped: bool) -> None:
    def column(values: list[int | None]) -> pa.Array:
        if pa.types.is_string(key_type):
            return pa.array([None if v is None else f"k{v}" for v in values], pa.string())
        return pa.array(values, key_type)

    n, m = len(target_keys), len(source_keys)
    target = pa.table({"id": column(target_keys), "v": np.arange(n, dtype=np.float64),
                       "name": [f"t{i}" for i in range(n)]})
    source = pa.table({"ID": column(source_keys), "v": np.arange(m, dtype=np.float64) + 0.5,
                       "name": [f"s{i}" for i in range(m)]})
    matched = {"update_all": [MergeClause("update", None, None)],
               "update_some": [MergeClause("update", None, (("v", "s.v"), ("name", 's."NAME"')))],
               "delete": [MergeClause("delete", None, None),
                          MergeClause("update", None, None)],
               "none": []}[kind]
    condition = 's."ID" = t.id' if flipped else "t.id = s.ID"
    spec = _spec(source, condition, matched, [MergeClause("insert", None, None)])
    arrow, duck = _both(spec, target)
    assert arrow == duck


@pytest.mark.parametrize("condition", ["t.id = s.id AND t.v > 0", "t.id < s.id",
                                       "t.id = s.id + 1", "t.v = s.v", "t.id = s.name"])
def test_other_conditions_go_to_duckdb(condition: str) -> None:
    source = pa.table({"id": [1, 2], "v": [0.5, 1.5], "name": ["a", "b"]})
    spec = _spec(source, condition, [MergeClause("update", None, None)], [])
    target = pa.table({"id": [1, 2], "v": [1.0, 2.0], "name": ["x", "y"]})
    assert _key_match(spec, target, USER, "w") is None


@pytest.mark.parametrize("clause", [MergeClause("update", "s.v > 1", None),
                                    MergeClause("update", None, (("v", "s.v + 1"),)),
                                    MergeClause("update", None, (("v", "t.v"),))])
def test_other_clauses_go_to_duckdb(clause: MergeClause) -> None:
    source = pa.table({"id": [1, 2], "v": [0.5, 1.5], "name": ["a", "b"]})
    spec = _spec(source, "t.id = s.id", [clause], [])
    target = pa.table({"id": [1, 2], "v": [1.0, 2.0], "name": ["x", "y"]})
    assert _key_match(spec, target, USER, "w") is None


def test_insert_star_in_arrow_equals_duckdb() -> None:
    source = pa.table({"ID": [1, 2, 3, None], "v": [0.5, None, 2.5, 3.5],
                       "name": ["a", "b", None, "d"]})
    matched = np.array([1], np.int64)
    star = _spec(source, "t.id = s.ID", [], [MergeClause("insert", None, None)])
    fast = not_matched_rows(star, matched, SCHEMA, EVALUATOR)
    # the same clause spelled with an expression DuckDB must evaluate
    slow_spec = _spec(source, "t.id = s.ID", [], [MergeClause(
        "insert", None, (("id", "s.ID + 0"), ("v", "s.v"), ("name", "s.name || ''")))])
    slow = not_matched_rows(slow_spec, matched, SCHEMA, EVALUATOR)
    assert fast.column_names == slow.column_names == SCHEMA.names
    assert fast.cast(SCHEMA).to_pylist() == slow.cast(SCHEMA).to_pylist()


@settings(max_examples=150, deadline=None)
@given(target_keys=st.lists(st.integers(-5, 12), max_size=40),
       source_keys=st.lists(st.integers(-5, 12), max_size=20))
def test_integer_keys_by_binary_search_equal_arrows_lookup(target_keys: list[int],
                                                           source_keys: list[int]) -> None:
    """Integer keys without NULLs are looked up in the sorted source keys: the same target
    rows, the same first source row of each (duplicate source keys included) and the same
    matched source rows as Arrow's hash lookup, which keys with NULLs still take."""
    target = pa.array(target_keys, pa.int64())
    source = pa.array(source_keys, pa.int64())
    searched = key_hits(target, source)
    # a NULL appended to the target sends both to Arrow's lookup; it matches nothing
    hashed = key_hits(pa.array([*target_keys, None], pa.int64()), source)
    assert [a.tolist() for a in searched] == [a.tolist() for a in hashed]
    first = {k: source_keys.index(k) for k in source_keys}
    assert searched[0].tolist() == [i for i, k in enumerate(target_keys) if k in first]
    assert searched[1].tolist() == [first[k] for k in target_keys if k in first]
