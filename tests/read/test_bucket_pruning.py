"""A DELETE or UPDATE whose predicate pins the bucket columns (``id = 7``, ``id IN (...)``,
ANDed with anything) reads and writes only the buckets those values hash to, and changes
exactly what the same statement changes when nothing is pruned."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest

from acidstore.api.warehouse import Warehouse
from acidstore.engine import writes
from acidstore.engine.handle import handle_of
from acidstore.format.directory import acid_state
from acidstore.io import fs as afs
from acidstore.read.splits import Listed, Split, plan_partition
from acidstore.sql.predicate_terms import equality_literals
from acidstore.write.bucketing import bucket_ids, buckets_of_values

SCHEMA = pa.schema([("id", pa.int32()), ("s", pa.string()), ("v", pa.float64())])


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int32)
    return pa.table({"id": ids, "s": [f"k{i % 37}" for i in range(n)],
                     "v": ids.astype(np.float64) / 2}, schema=SCHEMA)


@pytest.mark.parametrize(("text", "pinned"), [
    ("id = 7", {"id": [7]}),
    ("7 = id", {"id": [7]}),
    ("id = -3 AND v > 1", {"id": [-3]}),
    ("ID IN (1, 2, 3)", {"id": [1, 2, 3]}),
    ("v BETWEEN 1 AND 3 AND id = 4", {"id": [4]}),
    ("id = 3 AND (v = 1 OR v = 2)", {"id": [3]}),
    ("id = 1 AND id IN (1, 2)", {"id": [1]}),
    ("s = 'a''b' AND id = 2", {"s": ["a'b"], "id": [2]}),
    ('"id" = 5', {"id": [5]}),
    ("id = 1 OR id = 2", {}),
    ("(id = 4)", {}),
    ("NOT id = 3", {}),
    ("id = NULL", {}),
    ("id IN (1, NULL)", {}),
    ("id = 1 + 1", {}),
    ("id + 1 = 5", {}),
    ("id = v", {}),
    ("upper(s) = 'A'", {}),
])
def test_equality_literals(text: str, pinned: dict[str, list[object]]) -> None:
    found = {k: [v.as_py() for v in values] for k, values in equality_literals(text).items()}
    assert found == pinned


def test_bucket_of_a_pinned_value_is_the_writers() -> None:
    rows = _rows(500)
    expected = bucket_ids(rows, ["id", "s"], 16)
    for i in range(0, 500, 37):
        text = f"id = {i} AND s = 'k{i % 37}'"
        assert buckets_of_values(equality_literals(text), [SCHEMA.field("id"),
                                                           SCHEMA.field("s")], 16) == \
            {int(expected[i])}
    fields = [SCHEMA.field("id")]
    assert buckets_of_values(equality_literals("id = 99999999999"), fields, 4) == set()
    assert buckets_of_values(equality_literals("id = 2.5"), fields, 4) is None
    assert buckets_of_values(equality_literals("id = '2'"), fields, 4) is None
    assert buckets_of_values(equality_literals("v = 2"), fields, 4) is None
    assert buckets_of_values(equality_literals("v = 2"), [SCHEMA.field("v")], 4) is None


def _state(wh: Warehouse, name: str) -> pa.Table:
    return wh.table(name).to_arrow().sort_by("id")


@pytest.mark.parametrize("bucket_by", [["id"], ["s", "id"]])
def test_pruned_statements_change_what_unpruned_ones_do(wh: Warehouse,
                                                        bucket_by: list[str]) -> None:
    rows = _rows(400)
    for name in ("db.pruned", "db.whole"):
        wh.create_table(name, SCHEMA, bucket_by=bucket_by, buckets=8).insert(rows)
    pruned, whole = wh.table("db.pruned"), wh.table("db.whole")
    statements = [("update", "id = 7 AND s = 'k7'", {"v": "v + 1"}),
                  ("update", "id IN (1, 2, 300) AND s IN ('k1', 'k2', 'k4')", {"v": "v * 2"}),
                  ("delete", "s = 'k9' AND id = 9", None),
                  ("delete", "id = 12 AND s = 'k12' AND v > 100", None),  # matches nothing
                  ("update", "id = 5000 AND s = 'k5'", {"v": "0"})]  # no such row
    for kind, text, values in statements:
        # the same predicate with its conjuncts in parentheses pins nothing: every bucket
        unpruned = f"({text}) AND true"
        assert equality_literals(unpruned) == {}
        if kind == "update":
            assert values is not None
            a, b = pruned.update(text, values), whole.update(unpruned, values)
            assert a.rows_updated == b.rows_updated
        else:
            a, b = pruned.delete(text), whole.delete(unpruned)
            assert a.rows_deleted == b.rows_deleted
        assert _state(wh, "db.pruned").equals(_state(wh, "db.whole"))
    assert _state(wh, "db.pruned").num_rows == 399
    assert pc.sum(_state(wh, "db.pruned").column("v")).as_py() == \
        pytest.approx(sum(range(400)) / 2 + 1 + (0.5 + 1 + 150) - 4.5)


class _PlanOnlyError(Exception):
    """Ends a transaction that only planned (nothing was written)."""


def test_a_one_row_update_plans_one_unit(wh: Warehouse) -> None:
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=10)
    table.insert(_rows(1000))
    plans = {}
    for text in ("id = 42", "id % 1000 = 42", "id IN (1, 2, 3, 4)", "id = 99999999999"):
        with pytest.raises(_PlanOnlyError), wh.transaction() as txn:
            plans[text] = writes.plan_change(handle_of(txn.table("db.t")), txn._core, "update",
                                             text, assignments={"v": "v + 1"})
            raise _PlanOnlyError
    expected = bucket_ids(_rows(1000), ["id"], 10)
    assert [u.planned[0][1].bucket_id for u in plans["id = 42"]] == [int(expected[42])]
    assert len(plans["id % 1000 = 42"]) == 10
    assert sorted(u.planned[0][1].bucket_id for u in plans["id IN (1, 2, 3, 4)"]) == \
        sorted({int(b) for b in expected[1:5]})
    assert plans["id = 99999999999"] == []


def test_serializable_tables_read_every_bucket(wh: Warehouse) -> None:
    """Under Serializable each partition a statement read is a conflict scope; pruning could
    leave one unread (its matching bucket has no file yet), so nothing is pruned."""
    table = wh.create_table("db.s", SCHEMA, bucket_by=["id"], buckets=10,
                            properties={"acidstore.isolationLevel": "Serializable"})
    table.insert(_rows(1000))
    with pytest.raises(_PlanOnlyError), wh.transaction() as txn:
        units = writes.plan_change(handle_of(txn.table("db.s")), txn._core, "delete", "id = 42")
        raise _PlanOnlyError
    assert len(units) == 10


def _plans(wh: Warehouse, name: str, buckets: frozenset[int] | None
           ) -> tuple[list[Split], Listed]:
    """The splits of the table's one partition at a fresh snapshot, and what it listed."""
    table = wh.table(name)
    write_ids = table.snapshot()
    state = acid_state(table.location, write_ids, filesystem=wh.filesystem)
    listed: Listed = {}
    splits = plan_partition(wh.filesystem, table.location, state, write_ids, listed,
                            buckets=buckets)
    return splits, listed


def test_planning_only_pinned_buckets_plans_what_pruning_keeps(wh: Warehouse) -> None:
    """``plan_partition(buckets=...)`` builds only those buckets' splits: each the same split,
    with the same delete files, as planning every bucket and keeping those; every directory
    is still counted for the recorded-writes check."""
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=8)
    table.insert(_rows(400))
    for i in range(0, 60, 3):
        table.update(f"id = {i}", {"v": "v + 1"})
        table.delete(f"id = {i + 1}")
    table.delete("id % 50 = 7")  # delete events in several buckets of one file set
    whole, whole_listed = _plans(wh, "db.t", None)
    assert any(s.deletes for s in whole)
    for wanted in (frozenset({0}), frozenset({3, 5}), frozenset(range(8)), frozenset({99})):
        splits, listed = _plans(wh, "db.t", wanted)
        assert splits == [s for s in whole if s.bucket_id in wanted]
        assert listed == whole_listed


def test_planning_pinned_buckets_plans_every_original_file(wh: Warehouse) -> None:
    """An original file need not follow the bucket hash: with one in the partition, every
    bucket of its partition is planned."""
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=8)
    table.insert(_rows(100))
    table.delete("id = 3")
    po.write_table(_rows(10), afs.join(table.location, "000005_0"))
    whole, _ = _plans(wh, "db.t", None)
    assert any(s.synthetic is not None for s in whole)
    assert _plans(wh, "db.t", frozenset({1}))[0] == whole
