"""The filter as numpy integer ranges (``read.range_mask``) against the plain path: DuckDB
evaluating the same predicate over the same values, NULLs, every integer type's extremes and
literals outside a type's range included; and whole filtered reads of files with deletes,
the fast path beside the generic one (the same predicate in parentheses, which the range
reader does not take).

The reads through the pushdown path with random predicates (``test_read_pushdown``) take this
path too wherever their predicate is integer ranges.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from acidfiles import (
    bucket_property,
    delete_events,
    events_table,
    write_dir_stripes,
    write_events,
)
from hypothesis import given
from hypothesis import strategies as st

import acidstore
import acidstore.read.split_source as source
from acidstore.format.layout import ACID_VERSION, ACID_VERSION_FILE
from acidstore.format.orc.schema import INSERT
from acidstore.read.range_mask import range_mask
from acidstore.sql.predicate_terms import exact_integer_ranges, integer_ranges

INTEGERS = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()]


def _literal(typ: pa.DataType) -> st.SearchStrategy[int]:
    info = np.iinfo(typ.to_pandas_dtype())
    return st.one_of(st.integers(int(info.min) - 2, int(info.min) + 2),
                     st.integers(int(info.max) - 2, int(info.max) + 2),
                     st.integers(-3, 3), st.integers(-(2 ** 63), 2 ** 63 - 1))


def _term(column: str, typ: pa.DataType) -> st.SearchStrategy[str]:
    n = _literal(typ)
    return st.one_of(
        st.builds(lambda op, v: f"{column} {op} {v}",
                  st.sampled_from(["<", "<=", ">", ">=", "="]), n),
        st.builds(lambda op, v: f"{v} {op} {column}", st.sampled_from(["<", "<=", ">", ">="]),
                  n),
        st.builds(lambda a, b: f"{column} BETWEEN {a} AND {b}", n, n),
        st.builds(lambda vs: f"{column} IN ({', '.join(map(str, vs))})",
                  st.lists(n, min_size=1, max_size=3)),
    )


def _duckdb_mask(table: pa.Table, predicate: str) -> list[bool]:
    with duckdb.connect() as con:
        con.register("t", table)
        out = con.sql(f"SELECT ({predicate}) IS TRUE AS m FROM t").to_arrow_table()
    return [bool(v) for v in out.column("m").to_pylist()]


@given(data=st.data())
def test_range_mask_is_duckdb_s_answer(data: st.DataObject) -> None:
    types = data.draw(st.lists(st.sampled_from(INTEGERS), min_size=1, max_size=2),
                      label="types")
    schema = pa.schema([(f"c{i}", t) for i, t in enumerate(types)])
    n = data.draw(st.integers(0, 20), label="rows")
    columns = []
    for typ in types:
        info = np.iinfo(typ.to_pandas_dtype())
        value = st.one_of(st.none(), st.integers(int(info.min), int(info.max)),
                          st.sampled_from([int(info.min), int(info.max), 0]))
        columns.append(pa.array(data.draw(st.lists(value, min_size=n, max_size=n)), typ))
    table = pa.table(columns, schema=schema)
    terms = st.one_of(*[_term(name, typ) for name, typ in zip(schema.names, types,
                                                              strict=True)])
    predicate = data.draw(st.lists(terms, min_size=1, max_size=3).map(" AND ".join),
                          label="predicate")
    mask = range_mask(predicate, schema)
    assert mask is not None
    got = mask.passing(dict(enumerate(table.columns[i].combine_chunks()
                                      for i in range(len(types)))))
    assert got is not None
    assert got.tolist() == _duckdb_mask(table, predicate)


@pytest.mark.parametrize("predicate", [
    "k < 10 OR id = 3", "(k < 10)", "k < 1.5", "k + 1 < 10", "NOT k < 10", "k <> 3",
    "k < 10 AND k % 2 = 0", "k < 10 AND name = 'x'", "k NOT IN (1, 2)", "k IS NULL",
    "k NOT BETWEEN 1 AND 2", "k < 1e3", "",
])
def test_only_a_predicate_that_is_its_ranges_is_exact(predicate: str) -> None:
    assert exact_integer_ranges(predicate, ["id", "k", "name"]) is None


@pytest.mark.parametrize("predicate", [
    "k < 10", "10 > k AND id BETWEEN 3 AND 9", "k IN (1, -2) AND k >= 0", "k = 3 AND k = 4",
    '"K" >= 7', "k BETWEEN 5 AND 1",
])
def test_exact_ranges_are_the_statistics_ranges(predicate: str) -> None:
    assert exact_integer_ranges(predicate, ["id", "k", "name"]) == integer_ranges(
        predicate, ["id", "k", "name"])


def test_only_integer_columns_of_the_table_take_numpy() -> None:
    schema = pa.schema([("k", pa.int32()), ("v", pa.float64())])
    assert range_mask("k < 10", schema) is not None
    assert range_mask("v < 10", schema) is None
    mask = range_mask("k < 10", schema)
    assert mask is not None
    # a file whose column is of another type (cast by the read) or absent: the generic path
    assert mask.passing({0: pa.array([1, 2], pa.int64())}) is None
    assert mask.passing({}) is None


SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("v1", pa.float64())])


def _row(i: int, k: int | None) -> dict[str, Any]:
    return {"id": i, "k": k, "v1": i / 2}


@given(data=st.data())
def test_filtered_reads_with_deletes_match_the_generic_path(
        tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """Constant-key stripes (one statement), NULLs in ``k``, deletes, several stripes; the
    read with the range path beside the same predicate in parentheses (generic path) and the
    streaming merge reader."""
    root = tmp_path_factory.mktemp("ranges") / "t"
    n = data.draw(st.integers(1, 40), label="rows")
    ks = data.draw(st.lists(st.one_of(st.none(), st.integers(-5, 20)), min_size=n,
                            max_size=n), label="k")
    prop = bucket_property(0)
    events = [(INSERT, 1, prop, i, 1, _row(i, k)) for i, k in enumerate(ks)]
    directory = root / "delta_0000001_0000001_0000"
    directory.mkdir(parents=True)
    (directory / ACID_VERSION_FILE).write_text(ACID_VERSION)
    # uncompressed: pyarrow buffers compressed stripes and would write one stripe
    write_events(directory / "bucket_00000", events_table(events, schema=SCHEMA),
                 rows_per_stripe=data.draw(st.integers(1, 8), label="stripe rows"),
                 compression="uncompressed")
    deleted = data.draw(st.lists(st.integers(0, n - 1), unique=True), label="deleted")
    if deleted:
        write_dir_stripes(root, "delete_delta_0000002_0000002_0000",
                          {0: delete_events([(1, prop, i) for i in deleted], 2,
                                            schema=SCHEMA)})
    predicate = data.draw(st.lists(_term("k", pa.int32()), min_size=1, max_size=2).map(
        " AND ".join), label="predicate")
    columns = data.draw(st.sampled_from([["id", "v1"], None, ["k"]]), label="columns")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(source, "PROBE_MIN_ROWS", 1)  # statistics, constant keys, two reads
        fast = acidstore.read_directory(root, SCHEMA, filter=predicate, columns=columns,
                                        with_row_id=True)
        generic = acidstore.read_directory(root, SCHEMA, filter=f"({predicate})",
                                           columns=columns, with_row_id=True)
        merged = acidstore.read_directory(root, SCHEMA, filter=predicate, columns=columns,
                                          with_row_id=True, reader="merge")
    assert fast.equals(generic)
    assert fast.equals(merged)
    passing = _duckdb_mask(pa.table({"k": pa.array(ks, pa.int32())}), predicate)
    assert fast.num_rows == sum(1 for i, ok in enumerate(passing) if ok and i not in deleted)
