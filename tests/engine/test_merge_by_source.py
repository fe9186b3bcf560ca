"""WHEN NOT MATCHED BY SOURCE on the embedded engine: random sequences of MERGEs mixing every
clause kind, with conditions, on partitioned and bucketed tables, against a plain-dict model
(``merge_by_source_support``): the exact rows, the counts in the result and in history, and
the change feed of each MERGE's write id. Beside it: the clause rules (refused with a typed
error naming the clause), units in partitions and buckets no source row reaches, Python
values, and the conflicts of a statement that read the whole table."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from merge_by_source_support import (
    SCHEMA,
    SHAPES,
    Model,
    Shape,
    apply_plan,
    embedded_merge,
    feed_of,
    initial_rows,
    plans,
    row_tuple,
    sorted_rows,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.merge_match import MergeClause, MergeSpec
from acidstore.errors import (
    ConcurrentAppendError,
    InvalidExpressionError,
    InvalidInputError,
    MergeCardinalityError,
)

HISTORY = ["operation", "rows_inserted", "rows_updated", "rows_deleted"]


@given(shape=st.sampled_from(SHAPES), data=st.data())
def test_merges_with_every_clause_kind_match_the_model(shape: Shape, data: st.DataObject
                                                       ) -> None:
    start = data.draw(initial_rows(), "rows")
    model: Model = {r["id"]: r for r in start}
    with tempfile.TemporaryDirectory() as root, acidstore.connect(Path(root)) as wh:
        table = shape.create(wh, "db.t")
        table.insert(pa.Table.from_pylist(start, schema=SCHEMA))
        for _ in range(data.draw(st.integers(1, 3), "merges")):
            plan = data.draw(plans(shape, list(model)), "plan")
            expected = apply_plan(model, plan, shape)
            if expected.cardinality:
                with pytest.raises(MergeCardinalityError):
                    embedded_merge(table, plan)
                assert sorted_rows(table.to_arrow()) == sorted_rows(_rows(model))
                continue
            done = embedded_merge(table, plan)
            counts = (done.rows_inserted, done.rows_updated, done.rows_deleted)
            assert counts == (expected.inserted, expected.updated, expected.deleted)
            assert sorted_rows(table.to_arrow()) == sorted_rows(_rows(expected.model))
            last = table.history().select(HISTORY).to_pylist()[-1]
            assert last == {"operation": "merge", "rows_inserted": expected.inserted,
                            "rows_updated": expected.updated, "rows_deleted": expected.deleted}
            assert done.write_id is not None
            assert feed_of(table.changes(done.write_id, done.write_id)) == expected.feed
            model = expected.model


def _rows(model: Model) -> pa.Table:
    return pa.Table.from_pylist(list(model.values()), schema=SCHEMA)


@pytest.fixture
def table(wh: Warehouse) -> Table:
    """Four partitions of two buckets each, ids 0..15."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(16)), "name": [f"n{i}" for i in range(16)],
                       "amount": list(range(16)), "dt": ["a", "b", "c", "d"] * 4}))
    return t


def test_every_partition_and_bucket_is_read_though_the_source_reaches_one(table: Table) -> None:
    # the one source row hashes to one bucket of one partition; every other bucket's unit
    # gets no source row and must still delete its rows
    source = pa.table({"id": [4], "name": ["x"], "amount": [0], "dt": ["a"]}, schema=SCHEMA)
    done = (table.merge(source, "t.id = s.id").when_matched_update({"name": "s.name"})
            .when_not_matched_by_source_delete().execute())
    assert (done.rows_updated, done.rows_deleted) == (1, 15)
    assert table.to_arrow().to_pylist() == [{"id": 4, "name": "x", "amount": 4, "dt": "a"}]
    assert done.partitions == ("dt=a", "dt=b", "dt=c", "dt=d")


def test_python_values_and_an_empty_source(table: Table) -> None:
    empty = SCHEMA.empty_table()
    done = (table.merge(empty, "t.id = s.id")
            .when_not_matched_by_source_update(new_values={"name": "it's"},
                                               condition="t.dt = 'b'")
            .when_not_matched_by_source_update({"amount": "t.amount * 100"},
                                               condition="t.amount > 13")
            .execute())
    assert (done.rows_updated, done.rows_deleted, done.rows_inserted) == (6, 0, 0)
    rows = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert [rows[i]["name"] for i in (1, 5, 9, 13)] == ["it's"] * 4
    assert rows[13]["amount"] == 13  # the first clause whose condition holds, only
    assert (rows[14]["amount"], rows[15]["name"]) == (1400, "n15")
    changes = table.changes(done.write_id or 0, done.write_id or 0)
    assert sorted(changes.column("_change_type").to_pylist()) == \
        ["update_postimage"] * 6 + ["update_preimage"] * 6


@pytest.mark.parametrize(("build", "message"), [
    (lambda b: b.when_not_matched_by_source_delete(condition="s.amount > 1"),
     r"WHEN NOT MATCHED BY SOURCE clause 1 \(DELETE\): 's.amount > 1' refers to the source"),
    (lambda b: b.when_not_matched_by_source_update({"name": "S.name"}),
     r"clause 1 \(UPDATE\): 'S.name' refers to the source"),
    (lambda b: b.when_not_matched_by_source_delete(condition="t.id = 1")
     .when_not_matched_by_source_update({"name": "upper(coalesce(t.name, s.name))"}),
     "clause 2 .*refers to the source"),
    (lambda b: b.when_not_matched_by_source_delete()
     .when_not_matched_by_source_delete(condition="t.id = 1"),
     r"clause 1 \(DELETE\) has no condition but is not the last"),
    (lambda b: b.when_matched_update_all().when_matched_delete(condition="s.id = 1"),
     r"WHEN MATCHED clause 1 \(UPDATE\) has no condition but is not the last"),
    (lambda b: b.when_matched_delete(condition="s.id = 1").when_matched_delete()
     .when_not_matched_insert_all().when_not_matched_insert_all(condition="s.id = 2"),
     r"WHEN NOT MATCHED clause 1 \(INSERT\) has no condition but is not the last"),
    (lambda b: b.when_not_matched_by_source_update({"dt": "'x'"}), "partition and bucketing"),
    (lambda b: b.when_not_matched_by_source_update(new_values={"id": 1}),
     "partition and bucketing"),
    (lambda b: b.when_not_matched_by_source_update({}), "needs at least one column"),
])
def test_clause_rules_are_refused_naming_the_clause(table: Table, build: object,
                                                    message: str) -> None:
    before = sorted_rows(table.to_arrow())
    source = pa.table({"id": [1], "name": ["x"], "amount": [1], "dt": ["b"]}, schema=SCHEMA)
    with pytest.raises(InvalidInputError, match=message):
        build(table.merge(source, "t.id = s.id")).execute()  # type: ignore[operator]
    assert sorted_rows(table.to_arrow()) == before
    assert table.history().num_rows == 1


def test_the_spec_refuses_what_the_builders_refuse() -> None:
    with pytest.raises(InvalidInputError, match="only UPDATE SET of given columns or DELETE"):
        MergeSpec.build(SCHEMA.empty_table(), "t.id = s.id", source_alias="src",
                        target_alias="t", matched=[], not_matched=[],
                        not_matched_by_source=[MergeClause("insert", None, None)])
    with pytest.raises(InvalidInputError, match="refers to the source"):
        MergeSpec.build(SCHEMA.empty_table(), "t.id = src.id", source_alias="src",
                        target_alias="t", matched=[], not_matched=[],
                        not_matched_by_source=[MergeClause("delete", '"SRC".id > 1', ())])


def test_a_source_column_named_bare_is_not_in_scope(table: Table) -> None:
    source = pa.table({"id": [1], "extra": [5]})
    with pytest.raises(InvalidExpressionError, match=r"clause 1 .* names only the target"):
        table.merge(source, "t.id = s.id").when_not_matched_by_source_delete(
            condition="extra > 1").execute()


def test_a_target_row_matched_twice_still_fails(table: Table) -> None:
    source = pa.table({"id": [3, 3], "name": ["p", "q"], "amount": [0, 0], "dt": ["d", "d"]},
                      schema=SCHEMA)
    with pytest.raises(MergeCardinalityError):
        table.merge(source, "t.id = s.id").when_matched_delete() \
            .when_not_matched_by_source_delete().execute()
    assert table.to_arrow().num_rows == 16


def test_under_serializable_any_concurrent_write_conflicts(tmp_path: Path) -> None:
    # the source touches dt=a only; a row inserted into dt=d after the MERGE's snapshot is one
    # its WHEN NOT MATCHED BY SOURCE would have deleted
    with acidstore.connect(tmp_path / "wh") as wh:
        t = wh.create_table("db.s", SCHEMA, partition_by=["dt"],
                            properties={"acidstore.isolationLevel": "Serializable"})
        t.insert(pa.table({"id": [1, 2], "name": ["a", "d"], "amount": [1, 2],
                           "dt": ["a", "d"]}, schema=SCHEMA))
        source = pa.table({"id": [1], "name": ["x"], "amount": [0], "dt": ["a"]}, schema=SCHEMA)
        merging = wh.transaction()
        merging.table("db.s").merge(source, "t.id = s.id", source_alias="s", target_alias="t") \
            .when_not_matched_by_source_delete(condition="t.name = 'zz'").execute()
        t.insert(pa.table({"id": [3], "name": ["zz"], "amount": [3], "dt": ["d"]},
                          schema=SCHEMA))
        with pytest.raises(ConcurrentAppendError):
            merging.commit()
        assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_history_counts_on_each_metastore(store_wh: Warehouse) -> None:
    t = store_wh.create_table("db.h", SCHEMA, partition_by=["dt"])
    t.insert(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "amount": [1, 2, 3],
                       "dt": ["a", "b", "c"]}, schema=SCHEMA))
    source = pa.table({"id": [1, 9], "name": ["x", "y"], "amount": [0, 0], "dt": ["a", "a"]},
                      schema=SCHEMA)
    (t.merge(source, "t.id = s.id").when_matched_delete().when_not_matched_insert_all()
     .when_not_matched_by_source_update({"amount": "t.amount + 10"}, condition="t.id = 2")
     .when_not_matched_by_source_delete().execute())
    assert t.history().select(HISTORY).to_pylist()[-1] == {
        "operation": "merge", "rows_inserted": 1, "rows_updated": 1, "rows_deleted": 2}
    assert {row_tuple(r) for r in t.to_arrow().to_pylist()} == {
        (2, "b", 12, "b"), (9, "y", 0, "a")}
