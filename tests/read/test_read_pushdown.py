"""The filter pushed into decoding (stripe statistics, the probe's two reads, rows filtered
before delete events apply) against the plain path: the same read without a filter, filtered
afterwards by DuckDB, and the streaming merge reader, which pushes nothing down.

``PROBE_MIN_ROWS`` is lowered to 1 so that the tiny multi-stripe files hypothesis writes take
every fast path (statistics are otherwise read only for files of thousands of rows).
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

import acidfiles
import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from acidfiles import (
    SCHEMA,
    bucket_property,
    delete_events,
    events_table,
    write_dir_stripes,
    write_events,
)
from hypothesis import given
from hypothesis import strategies as st
from test_read_model import History, histories, read_both, write_history

import acidstore
import acidstore.read.split_source as source
from acidstore.format.layout import ACID_VERSION, ACID_VERSION_FILE, delta_name
from acidstore.format.orc.schema import INSERT
from acidstore.format.orc.stats import IntegerStats
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read.bounds import StripeBounds, stripe_bounds
from acidstore.sql.predicate_terms import integer_ranges


def _plain(table: pa.Table, predicate: str) -> list[dict[str, Any]]:
    """``table``'s rows that pass ``predicate``, by DuckDB, in a stable order."""
    with duckdb.connect() as con:
        con.register("t", table)
        rows: list[dict[str, Any]] = con.sql(f"SELECT * FROM t WHERE {predicate}").to_arrow_table(
        ).to_pylist()
    return sorted(rows, key=repr)


def _comparison(column: str, low: int, high: int) -> st.SearchStrategy[str]:
    n = st.integers(low, high)
    return st.one_of(
        st.builds(lambda op, v: f"{column} {op} {v}", st.sampled_from(["<", "<=", ">", ">=", "="]),
                  n),
        st.builds(lambda op, v: f"{v} {op} {column}", st.sampled_from(["<", "<=", ">", ">="]),
                  n),
        st.builds(lambda a, b: f"{column} BETWEEN {a} AND {b}", n, n),
        st.builds(lambda vs: f"{column} IN ({', '.join(map(str, vs))})",
                  st.lists(n, min_size=1, max_size=3)),
        st.builds(lambda op, v: f"NOT {column} {op} {v}", st.sampled_from(["<", "="]), n),
    )


def _conjunction(terms: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(terms, min_size=1, max_size=3).map(" AND ".join)


@given(history=histories(), data=st.data())
def test_pushed_filters_match_the_plain_path(tmp_path_factory: pytest.TempPathFactory,
                                             history: History, data: st.DataObject) -> None:
    """Random histories (aborted and open write ids inside a streaming delta, deletes,
    updates, originals, stripes of 1-3 rows) and random integer predicates on ``id``."""
    tmp = tmp_path_factory.mktemp("pushdown")
    try:
        root = tmp / "t"
        with pytest.MonkeyPatch.context() as patch:
            # uncompressed: pyarrow buffers compressed stripes and would write one stripe
            patch.setattr(acidfiles, "write_events",
                          functools.partial(acidfiles.write_events, compression="uncompressed"))
            write_history(history, root)
        latest = ValidWriteIdList("default.t", history.max_write_id,
                                  tuple(sorted(history.open)), tuple(sorted(history.aborted)))
        other = st.sampled_from(["amount > 0", "name IS NULL", "id % 2 = 0"])
        predicate = data.draw(_conjunction(st.one_of(_comparison("id", -2, 40), other)),
                              label="predicate")
        columns = data.draw(st.sampled_from([None, ["name"], ["id", "amount"]]),
                            label="columns")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(source, "PROBE_MIN_ROWS", 1)
            # both readers agree batch for batch (the merge reader pushes nothing down)
            got = read_both(root, write_ids=latest, filter=predicate, with_row_id=True,
                            columns=columns)
        everything = acidstore.read_directory(root, SCHEMA, write_ids=latest, with_row_id=True)
        expected = _plain(everything, predicate)
        keep = [*(columns or SCHEMA.names), "row__id"]
        assert sorted(got.to_pylist(), key=repr) == sorted(
            ({k: r[k] for k in keep} for r in expected), key=repr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


TYPES = pa.schema([("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
                   ("i64", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
#: the table as read: one more integer column, added after the files were written
TABLE = pa.schema([*TYPES, ("added", pa.int32())])


def _values(typ: pa.DataType) -> st.SearchStrategy[Any]:
    if pa.types.is_integer(typ):
        bits = typ.bit_width
        edge = st.sampled_from([-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 0, -1, 1])
        return st.one_of(st.none(), edge, st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1),
                         st.integers(-5, 5))
    if pa.types.is_floating(typ):
        return st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))
    return st.one_of(st.none(), st.text("ab", max_size=2))


rows_of_every_type = st.lists(st.fixed_dictionaries({f.name: _values(f.type) for f in TYPES}),
                              min_size=1, max_size=12)


@given(rows=rows_of_every_type, data=st.data())
def test_statistics_of_every_integer_type_and_nulls(tmp_path_factory: pytest.TempPathFactory,
                                                    rows: list[dict[str, Any]],
                                                    data: st.DataObject) -> None:
    """int8..int64 with their extremes, all-NULL stripes, literals outside a type's range,
    a column the files do not have (NULL in every row), deleted rows."""
    tmp = tmp_path_factory.mktemp("types")
    try:
        root = tmp / "t"
        prop = bucket_property(0)
        events = [(INSERT, 1, prop, i, 1, row) for i, row in enumerate(rows)]
        directory = root / delta_name(1, 1)
        directory.mkdir(parents=True)
        (directory / ACID_VERSION_FILE).write_text(ACID_VERSION)
        write_events(directory / "bucket_00000", events_table(events, schema=TYPES),
                     rows_per_stripe=data.draw(st.integers(1, 4), label="stripe rows"),
                     compression="uncompressed")
        deleted = data.draw(st.lists(st.integers(0, len(rows) - 1), unique=True),
                            label="deleted")
        if deleted:
            write_dir_stripes(root, delta_name(2, 2, delete=True), {0: delete_events(
                [(1, prop, i) for i in deleted], 2, schema=TYPES)}, rows_per_stripe=2)
        column = data.draw(st.sampled_from(["i8", "i16", "i32", "i64", "added"]),
                           label="column")
        predicate = data.draw(_conjunction(st.one_of(
            _comparison(column, -(2 ** 63), 2 ** 63 - 1), _comparison(column, -300, 300),
            st.sampled_from(["f > 0", "s = 'a'", "i8 IS NULL"]))), label="predicate")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(source, "PROBE_MIN_ROWS", 1)
            got = acidstore.read_directory(root, TABLE, filter=predicate,
                                           columns=["i64", "s"])
            merged = acidstore.read_directory(root, TABLE, filter=predicate,
                                              columns=["i64", "s"], reader="merge")
        everything = acidstore.read_directory(root, TABLE)
        expected = [{"i64": r["i64"], "s": r["s"]} for r in _plain(everything, predicate)]
        assert sorted(got.to_pylist(), key=repr) == sorted(expected, key=repr)
        assert got.to_pylist() == merged.to_pylist()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize(("predicate", "ranges"), [
    ("k < 10", {"k": [(None, 9)]}),
    ("10 > k AND id BETWEEN 3 AND 9", {"k": [(None, 9)], "id": [(3, 9)]}),
    ("k IN (1, -2) AND k >= 0", {"k": [(1, 1)]}),
    ("k = 3 AND k = 4", {"k": []}),
    ('"K" >= 7 AND name = \'x\'', {"k": [(7, None)]}),
    ("k < 10 OR id = 3", {}),
    ("(k < 10)", {}),
    ("k < 1.5", {}),
    ("k + 1 < 10", {}),
    ("NOT k < 10", {}),
    ("k <> 3", {}),
    ("k < 10 AND k % 2 = 0", {"k": [(None, 9)]}),
])
def test_integer_ranges_read_only_what_bounds_every_row(predicate: str,
                                                        ranges: dict[str, Any]) -> None:
    assert integer_ranges(predicate, ["id", "k", "name"]) == ranges


def test_bounds_skip_only_with_proof() -> None:
    schema = pa.schema([("k", pa.int32()), ("v", pa.float64())])
    assert stripe_bounds("v < 3", schema) is None  # floats: NaN makes min/max no proof
    bounds = stripe_bounds("k < 10", schema)
    assert bounds == StripeBounds(((0, ((None, 9),)),))
    assert bounds.excludes({0: IntegerStats(5, 10, 20)})
    assert not bounds.excludes({0: IntegerStats(5, 9, 20)})
    assert bounds.excludes({0: IntegerStats(0, None, None)})  # only NULLs
    assert not bounds.excludes({0: IntegerStats(None, 10, 20)})  # count unknown
    assert not bounds.excludes({0: IntegerStats(5, None, None)})  # no range recorded
    assert not bounds.excludes({})


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "zstd", "lz4"])
def test_stripe_statistics_are_the_stripes_own(tmp_path: Path, compression: str) -> None:
    """The metadata section is decoded for each codec pyarrow writes (LZ4 only when its
    chunks are stored uncompressed), and says each stripe's count, minimum and maximum."""
    from acidfiles import write_events

    from acidstore.format.orc.file_reader import OrcFile

    values = [None, -5, 7, None, None, None, 2**40, -(2**40), 3, None]
    rows = [{"i8": None, "i16": 1, "i32": 2, "i64": v, "f": 0.5, "s": "x"} for v in values]
    events = events_table([(INSERT, 1, bucket_property(0), i, 1, r) for i, r in
                           enumerate(rows)], schema=TYPES)
    path = tmp_path / "bucket_00000"
    write_events(path, events, rows_per_stripe=3, compression=compression)
    orc = OrcFile(pafs.LocalFileSystem(), str(path))
    stats = orc.stripe_statistics([3, 0])
    if compression == "lz4" and stats is None:
        return  # a compressed LZ4 chunk is not decoded (a small one is stored as it is)
    assert stats is not None and len(stats) == orc.nstripes
    if compression == "uncompressed":
        assert orc.nstripes == 4  # (compressed, pyarrow writes these few rows as one stripe)
    for index, stripe in enumerate(stats):
        row = orc.canonical(orc.read_stripe(index, ["row.i64"])).column("row")
        chunk = [v for v in row.field(0).to_pylist() if v is not None]
        assert stripe[3] == (IntegerStats(len(chunk), min(chunk), max(chunk)) if chunk
                             else IntegerStats(0, None, None))
        assert stripe[0] == IntegerStats(0, None, None)  # i8: NULL everywhere


def test_unreadable_statistics_give_none() -> None:
    from acidstore.format.orc.stats import stripe_column_statistics

    assert stripe_column_statistics(b"\x01\x02", "ZSTD", 1) is None
    assert stripe_column_statistics(b"", "UNCOMPRESSED", 1) is None


@pytest.mark.parametrize("min_rows", [1, source.PROBE_MIN_ROWS])
def test_a_filter_failing_only_on_deleted_rows_does_not_fail_the_read(
        tmp_path: Path, min_rows: int) -> None:
    """Pushed down, the filter sees rows before delete events apply; a row it cannot
    evaluate (``CAST('abc' AS INTEGER)``) that is deleted must not fail the read, as it did
    not when the filter ran after the deletes. Both the one-read and the two-read paths."""
    with acidstore.connect(tmp_path / "wh") as wh:
        table = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
        table.insert(pa.table({"id": [1, 2, 3, 4], "s": ["1", "2", "abc", "3"]}))
        table.delete("s = 'abc'")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(source, "PROBE_MIN_ROWS", min_rows)
            got = table.to_arrow(columns=["id"], filter="CAST(s AS INTEGER) > 1")
        assert sorted(got["id"].to_pylist()) == [2, 4]
        table.insert(pa.table({"id": [5], "s": ["x"]}))
        with pytest.raises(acidstore.errors.InvalidExpressionError):
            table.to_arrow(filter="CAST(s AS INTEGER) > 1")  # a visible row still fails it
