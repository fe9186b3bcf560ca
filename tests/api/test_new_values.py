"""``update(new_values=...)`` and MERGE's ``new_values``: Python values, no SQL quoting.

Each value must arrive exactly (text that looks like SQL or holds quotes and NULs, doubles,
decimals, timestamps to the nanosecond, zoned instants, bytes, lists and structs), a value that
does not fit its column is refused naming the column with nothing written, and a column
cannot be given both as SQL and as a value. Runs on both metastores.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from acidstore import Table, Warehouse
from acidstore.errors import InvalidInputError

SCHEMA = pa.schema([
    ("id", pa.int64()), ("name", pa.string()), ("f", pa.float32()), ("x", pa.float64()),
    ("d", pa.decimal128(10, 2)), ("ts", pa.timestamp("us")), ("tz", pa.timestamp("us", "UTC")),
    ("ns", pa.timestamp("ns")), ("b", pa.binary()), ("l", pa.list_(pa.int64())),
    ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])), ("day", pa.date32()),
    ("ok", pa.bool_()), ("dt", pa.string()),
])
PLUS5 = dt.timezone(dt.timedelta(hours=5))
VALUES: dict[str, Any] = {
    "name": "bob'by -- x\x00 OR 1=1; name", "f": 1.1, "x": float("-inf"),
    "d": decimal.Decimal("-3.14"), "ts": dt.datetime(2262, 1, 1, 0, 0, 0, 1),
    "tz": dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=PLUS5),
    "ns": pa.scalar(1704164645123456789, pa.timestamp("ns")), "b": b"\x00'\xff",
    "l": [1, None, 3], "s": {"x": -1, "y": "it's"}, "day": dt.date(2020, 2, 29), "ok": False,
}


@pytest.fixture
def table(store_wh: Warehouse) -> Table:
    """On each metastore (tests/api/conftest.py)."""
    t = store_wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(pa.Table.from_pylist([{"id": 1, "dt": "a"}, {"id": 2, "dt": "a"}], schema=SCHEMA))
    return t


def _row(t: Table, key: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = t.to_arrow(filter=f"id = {key}").to_pylist()
    assert len(rows) == 1
    return rows[0]


def _expected(column: str) -> Any:
    """What reading ``VALUES[column]`` back gives (the column's Arrow type decides)."""
    return pa.scalar(VALUES[column], SCHEMA.field(column).type).as_py()


def test_update_sets_python_values_exactly(table: Table) -> None:
    result = table.update("id = 2", new_values=VALUES)
    assert result.rows_updated == 1
    got = _row(table, 2)
    for column in VALUES:
        assert got[column] == _expected(column), column
    assert _row(table, 1)["name"] is None  # the other row kept


def test_sql_and_values_mix_and_a_null_is_a_value(table: Table) -> None:
    table.update("id = 1", {"x": "id * 2.5"},
                 new_values={"name": "bobby", "l": None})
    got = _row(table, 1)
    assert (got["x"], got["name"], got["l"]) == (2.5, "bobby", None)
    # a bare word as SQL is a column; as a value it is text
    with pytest.raises(InvalidInputError, match="bobby"):
        table.update("id = 1", {"name": "bobby"})
    table.update("id = 1", new_values={"name": None})
    assert _row(table, 1)["name"] is None


@pytest.mark.parametrize(("values", "message"), [
    ({"f": "x"}, "column 'f'"),
    ({"d": decimal.Decimal("1e20")}, "column 'd'"),
    ({"l": ["a"]}, "column 'l'"),
    ({"nope": 1}, "unknown column"),
    ({"dt": "b"}, "partition"),
])
def test_values_that_do_not_fit_are_refused_with_nothing_written(
        table: Table, values: dict[str, Any], message: str) -> None:
    before = table.to_arrow().sort_by("id")
    with pytest.raises(InvalidInputError, match=message):
        table.update("id = 1", new_values=values)
    assert table.to_arrow().sort_by("id").equals(before)
    assert [h["operation"] for h in table.history().to_pylist()] == ["insert"]


def test_a_column_given_twice_is_refused(table: Table) -> None:
    with pytest.raises(InvalidInputError, match="both as a SQL expression and as a new value"):
        table.update("id = 1", {"name": "'x'"}, new_values={"NAME": "y"})
    with pytest.raises(InvalidInputError, match="at least one column"):
        table.update("id = 1")


def test_merge_takes_new_values_in_update_and_insert(table: Table) -> None:
    source = pa.table({"id": [2, 3], "dt": ["a", "b"]})
    result = (table.merge(source, "t.id = s.id")
              .when_matched_update(new_values={"name": VALUES["name"], "s": VALUES["s"]})
              .when_not_matched_insert({"id": "s.id", "dt": "s.dt"},
                                       new_values={"tz": VALUES["tz"], "b": VALUES["b"]})
              .execute())
    assert (result.metrics["num_target_rows_updated"],
            result.metrics["num_target_rows_inserted"]) == (1, 1)
    updated, inserted = _row(table, 2), _row(table, 3)
    assert (updated["name"], updated["s"]) == (_expected("name"), _expected("s"))
    assert (inserted["tz"], inserted["b"], inserted["dt"]) == (
        _expected("tz"), _expected("b"), "b")
    with pytest.raises(InvalidInputError, match="at least one column"):
        table.merge(source, "t.id = s.id").when_not_matched_insert()
    with pytest.raises(InvalidInputError, match="column 'ok'"):
        table.merge(source, "t.id = s.id").when_matched_update(new_values={"ok": "maybe"})
