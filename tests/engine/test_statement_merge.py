"""MERGE in the statement core: what a unit decodes, the statement ids it writes, and what it
refuses (the differential tests against the model and Spark are in test_table_model.py and
test_spark_dml.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from acidstore import Table, Warehouse
from acidstore.engine import unit_rows
from acidstore.engine.merge_match import (
    MergeClause,
    MergeSpec,
    kept_columns,
    merge_columns,
)
from acidstore.errors import InvalidInputError, MergeCardinalityError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.int64()),
                    ("dt", pa.string())])
NAMES = ["id", "name", "amount", "dt"]


def spec(condition: str = "t.id = s.id", *clauses: MergeClause) -> MergeSpec:
    clauses = clauses or (MergeClause("delete", None, ()),)
    return MergeSpec.build(SCHEMA.empty_table(), condition, source_alias="s",
                           target_alias="t", matched=[c for c in clauses if c.kind != "insert"],
                           not_matched=[c for c in clauses if c.kind == "insert"])


@pytest.fixture
def table(wh: Warehouse) -> Table:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(8)), "name": [f"n{i}" for i in range(8)],
                       "amount": [10 * i for i in range(8)], "dt": ["a", "b"] * 4}))
    return t


def test_a_unit_decodes_only_the_columns_the_merge_names() -> None:
    assert merge_columns(spec(), NAMES) == ["id"]
    update = MergeClause("update", "t.amount > 3", (("name", "s.name"),))
    assert merge_columns(spec("t.id = s.id", update), NAMES) == ["id", "amount"]
    assert merge_columns(spec("t.`dt` = s.dt"), NAMES) == ["dt"]
    # UPDATE SET * / INSERT * take every value from the source: only the ON column is read
    # (a unit once decoded every target column here because `s.amount` names "amount")
    every = (MergeClause("update", None, None), MergeClause("insert", None, None))
    assert merge_columns(spec("t.id = s.id", *every), NAMES) == ["id"]
    # aliases spelled like columns (the benchmark's table has a string column `s`) are aliases
    assert merge_columns(spec("t.id = s.id"), ["id", "s", "t"]) == ["id"]
    # the source alias decides in any case and quoting; other qualifiers may name columns
    assert merge_columns(spec('"T".amount = "S".id AND S.`name` = t.dt'), NAMES) == [
        "amount", "dt"]
    assert merge_columns(spec("t.id = s.id AND coalesce(name, s.name) = 'x'"), NAMES) == [
        "id", "name"]


def test_full_rows_only_when_an_update_keeps_old_values() -> None:
    every = MergeClause("update", None, None)
    some = MergeClause("update", None, (("name", "s.name"),))
    assert not kept_columns(spec("t.id = s.id", every), ["id", "name", "amount"])
    assert kept_columns(spec("t.id = s.id", some), ["id", "name", "amount"])
    assert not kept_columns(spec("t.id = s.id", MergeClause("delete", None, ())), NAMES)


def test_only_the_columns_an_update_keeps_are_read_back() -> None:
    some = MergeClause("update", None, (("NAME", "s.name"),))
    assert kept_columns(spec("t.id = s.id", some), NAMES) == ["id", "amount", "dt"]
    # two clauses: a column one of them keeps is read back, even if the other sets it
    other = MergeClause("update", "t.amount > 3", (("amount", "s.amount"),))
    assert kept_columns(spec("t.id = s.id", other, some), NAMES) == NAMES
    assert kept_columns(spec("t.id = s.id", MergeClause("update", None, None)), NAMES) == []


def test_a_one_column_merge_keeps_every_other_value(wh: Warehouse,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``SET amount = s.amount`` (and a second clause setting ``name``) decodes ``id`` to
    match, then reads back only what the clauses keep and was not decoded yet; every other
    value of an updated row stays as it was, and unmatched rows are untouched."""
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.int64()),
                        ("ts", pa.timestamp("us")), ("note", pa.string())])
    t = wh.create_table("db.wide", schema, bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(10)), "name": [f"n{i}" for i in range(10)],
                       "amount": [10 * i for i in range(10)],
                       "ts": pa.array(list(range(10)), pa.int64()).cast(pa.timestamp("us")),
                       "note": [None if i % 3 else f"x{i}" for i in range(10)]},
                      schema=schema))
    before = t.to_arrow().sort_by("id").to_pylist()
    read_back: list[list[str] | None] = []
    scan = unit_rows.scan_unit

    def recording(unit, columns, predicate=None):  # type: ignore[no-untyped-def]
        read_back.append(None if columns is None else list(columns))
        return scan(unit, columns, predicate)

    monkeypatch.setattr(unit_rows, "scan_unit", recording)
    source = pa.table({"id": [1, 4, 7, 20], "name": ["a", "b", "c", "d"],
                       "amount": [-1, -4, -7, -20]})
    result = (t.merge(source, "t.id = s.id")
              .when_matched_update({"name": "s.name"}, condition="t.id = 4")
              .when_matched_update({"amount": "s.amount"})
              .when_not_matched_insert({"id": "s.id", "amount": "s.amount"}).execute())
    assert (result.rows_updated, result.rows_inserted) == (3, 1)
    assert read_back and all(c is not None and "id" not in c for c in read_back)
    after = {r["id"]: r for r in t.to_arrow().to_pylist()}
    for row in before:
        want = dict(row)
        if row["id"] == 4:
            want["name"] = "b"
        elif row["id"] in (1, 7):
            want["amount"] = -row["id"]
        assert after[row["id"]] == want
    assert after[20] == {"id": 20, "name": None, "amount": -20, "ts": None, "note": None}


def test_a_merge_whose_kept_columns_were_decoded_reads_nothing_back(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    """``SET v = s.v`` on a table of (id, v): the only kept column is the ON key, which the
    match decoded, so no second scan runs."""
    t = wh.create_table("db.kv", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                        bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(6)), "v": list(range(6))}))

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a second scan ran")

    monkeypatch.setattr(unit_rows, "scan_unit", refused)
    t.merge(pa.table({"id": [2, 9], "v": [20, 90]}), "t.id = s.id") \
        .when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute()
    assert t.to_arrow().sort_by("id").to_pydict() == {"id": [0, 1, 2, 3, 4, 5, 9],
                                                      "v": [0, 1, 20, 3, 4, 5, 90]}


@pytest.mark.parametrize(("aliases", "clauses", "message"), [
    (("s", "S"), [MergeClause("delete", None, ())], "must differ"),
    (("s x", "t"), [MergeClause("delete", None, ())], "plain identifier"),
    (("s", "t"), [], "at least one WHEN clause"),
])
def test_a_bad_merge_is_refused_before_anything_runs(aliases: tuple[str, str],
                                                     clauses: list[MergeClause],
                                                     message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        MergeSpec.build(SCHEMA.empty_table(), "t.id = s.id", source_alias=aliases[0],
                        target_alias=aliases[1], matched=clauses, not_matched=[])


def test_merge_writes_hive4_statement_ids_per_event_kind(table: Table) -> None:
    source = pa.table({"id": [1, 2, 20], "name": ["x", "y", "z"], "amount": [1, 2, 3],
                       "dt": ["b", "a", "a"]})
    result = (table.merge(source, "t.id = s.id").when_matched_delete("s.id = 2")
              .when_matched_update({"name": "s.name"}).when_not_matched_insert_all().execute())
    assert result.metrics == {"num_source_rows": 3, "num_target_rows_updated": 1,
                              "num_target_rows_deleted": 1, "num_target_rows_inserted": 1}
    dirs = {str(Path(d).relative_to(table.location)) for d, _, files in os.walk(table.location)
            if files}
    # delete events statement 0, the updated rows 1, the inserted rows 2
    assert {"dt=a/delete_delta_0000002_0000002_0000", "dt=b/delete_delta_0000002_0000002_0000",
            "dt=b/delta_0000002_0000002_0001", "dt=a/delta_0000002_0000002_0002"} <= dirs
    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert rows[1]["name"] == "x" and rows[1]["amount"] == 10  # unset columns kept
    assert 2 not in rows and rows[20]["name"] == "z"
    assert table.history().column("operation").to_pylist()[-1] == "merge"


def test_a_target_row_matched_twice_writes_nothing(table: Table) -> None:
    before = table.to_arrow()
    source = pa.table({"id": [3, 3], "name": ["p", "q"], "amount": [0, 0], "dt": ["b", "b"]})
    with pytest.raises(MergeCardinalityError, match="more than one source row"):
        table.merge(source, "t.id = s.id").when_matched_delete().execute()
    assert table.to_arrow().equals(before)
    # matching twice is only an error for WHEN MATCHED: an insert-only MERGE inserts nothing
    done = table.merge(source, "t.id = s.id").when_not_matched_insert_all().execute()
    assert done.rows_inserted == 0


def test_merge_into_a_partition_the_transaction_overwrote_is_refused(wh: Warehouse,
                                                                     table: Table) -> None:
    source = pa.table({"id": [100], "name": ["x"], "amount": [1], "dt": ["a"]})
    with pytest.raises(InvalidInputError, match="already overwrote"), wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert_overwrite(source)
        bound.merge(source.set_column(0, "id", pa.array([101])), "t.id = s.id") \
            .when_not_matched_insert_all().execute()
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(8))
