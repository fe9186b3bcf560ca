"""A MERGE whose ON condition equates the bucketing column hands each unit only the source
rows that hash to its bucket (``merge_routing.route_by_bucket``), and changes exactly what
the same MERGE changes when every unit joins the whole source; with pre-ACID originals in
play (which need not sit in their hash's bucket) nothing is routed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from acidfiles import record_placed_originals, write_original

from acidstore.api.warehouse import Warehouse
from acidstore.engine import writes
from acidstore.engine.handle import handle_of
from acidstore.engine.merge_match import SOURCE_INDEX, MergeClause, MergeSpec
from acidstore.engine.merge_routing import equality_key, route_by_bucket
from acidstore.errors import MergeCardinalityError
from acidstore.write.bucketing import bucket_ids

SCHEMA = pa.schema([("id", pa.int32()), ("k", pa.string()), ("v", pa.float64())])
BUCKETS = 4


def _spec(source: pa.Table, condition: str) -> MergeSpec:
    return MergeSpec.build(source, condition, source_alias="s", target_alias="t",
                           matched=[MergeClause("update", None, None)],
                           not_matched=[MergeClause("insert", None, None)])


@pytest.mark.parametrize(("condition", "expected"), [
    ("t.id = s.id", ("id", "id")), ("s.ID = t.id", ("id", "id")),
    ("t.dt = s.dt AND t.id = s.id", ("dt", "dt")), ("t.id > 3 AND s.id = t.id", ("id", "id")),
    ("t.id = s.id OR t.name = s.name", None), ("(t.id = s.id)", None), ("t.id = s.k", None),
    ("t.id = t.amount", None), ("t.id % 3 = s.id", None), ("t.name = 'x' AND t.id = s.id", None),
    ("t.amount BETWEEN s.amount AND t.id = s.id", None),
])
def test_the_equality_key_of_an_on_condition(condition: str,
                                             expected: tuple[str, str] | None) -> None:
    """Only an equality that every matching pair must satisfy may route the source or filter
    the target's keys (a term under OR, an operand of BETWEEN or a quoted one is not judged)."""
    spec = MergeSpec(pa.table({"id": [1]}), condition, "s", "t", (), ())
    assert equality_key(spec, ["id", "name", "amount", "dt"],
                        ["id", "name", "amount", "dt"]) == expected


def test_routed_source_rows_are_those_of_their_bucket() -> None:
    # int64 source keys for an int32 column: beyond its range or NULL, a key matches nothing
    ids = [1, 2, 3, 4, 5, 6, 7, 8, None, 1 << 40, -(1 << 40), -7]
    source = pa.table({"id": pa.array(ids, pa.int64()), "k": [f"k{i}" for i in range(12)],
                       "v": np.arange(12, dtype=np.float64)})
    routed = route_by_bucket(_spec(source, "s.id = t.id"), SCHEMA, ["ID"], BUCKETS)
    assert routed is not None and sorted(routed) == list(range(BUCKETS))
    seen = []
    for bucket, spec in routed.items():
        keys = spec.source.select(["id"]).cast(pa.schema([("id", pa.int32())]))
        assert set(bucket_ids(keys, ["id"], BUCKETS).tolist()) <= {bucket}
        seen += spec.source.column(SOURCE_INDEX).to_pylist()  # numbers kept
    assert sorted(seen) == [0, 1, 2, 3, 4, 5, 6, 7, 11]
    by_string = route_by_bucket(_spec(source, "t.k = s.k"), SCHEMA, ["k"], BUCKETS)
    assert by_string is not None
    assert sum(s.source.num_rows for s in by_string.values()) == 12
    # not on the bucketing column, of another kind, or under OR: every unit joins it all
    assert route_by_bucket(_spec(source, "t.id = s.id"), SCHEMA, ["k"], BUCKETS) is None
    assert route_by_bucket(_spec(source, "t.k = s.id"), SCHEMA, ["k"], BUCKETS) is None
    assert route_by_bucket(_spec(source, "t.id = s.id OR t.k = s.k"), SCHEMA, ["id"],
                           BUCKETS) is None
    assert route_by_bucket(_spec(source, "t.id = s.id"), SCHEMA, ["id", "k"], BUCKETS) is None


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "k": [f"k{i % 5}" for i in ids],
                     "v": np.asarray(ids, dtype=np.float64)}, schema=SCHEMA)


def _merge(wh: Warehouse, name: str, source: pa.Table, condition: str) -> tuple[int, int]:
    result = (wh.table(name).merge(source, condition).when_matched_update_all()
              .when_not_matched_insert_all().execute())
    return result.rows_updated, result.rows_inserted


def test_a_routed_merge_changes_what_an_unrouted_one_does(wh: Warehouse) -> None:
    for name in ("db.routed", "db.whole"):
        wh.create_table(name, SCHEMA, bucket_by=["id"], buckets=BUCKETS).insert(
            _rows(list(range(0, 400, 2))))
    rng = np.random.default_rng(3)
    ids = rng.choice(np.arange(-50, 500), 150, replace=False)
    source = pa.table({"id": pa.array([*ids.tolist(), None], pa.int64()),
                       "k": [f"s{i}" for i in range(151)], "v": rng.random(151)})
    with wh.transaction() as txn:
        units = writes.plan_change(handle_of(txn.table("db.routed")), txn._core, "merge",
                                   None, merge=_spec(source, "t.id = s.id"))
        assert sum(u.merge.source.num_rows for u in units if u.merge) == 150
        txn.abort()
    # parentheses: no equality term is judged, every unit gets the whole source
    got = _merge(wh, "db.routed", source, "t.id = s.id")
    assert got == _merge(wh, "db.whole", source, "(t.id = s.id)")
    assert got[0] == int(pc.sum(pc.is_in(pa.array(ids), pa.array(range(0, 400, 2)))).as_py())
    routed, whole = (wh.table(n).to_arrow().sort_by("id") for n in ("db.routed", "db.whole"))
    assert routed.equals(whole)


def test_originals_outside_their_hash_bucket_are_still_matched(wh: Warehouse) -> None:
    """A pre-ACID file need not hold only its bucket's rows: with one in play the MERGE
    must not route (routed, the row below would meet no source row and be inserted twice)."""
    t = wh.create_table("db.old", SCHEMA, bucket_by=["id"], buckets=BUCKETS)
    stray = 1
    home = int(bucket_ids(_rows([stray]), ["id"], BUCKETS)[0])
    wrong = (home + 1) % BUCKETS
    write_original(Path(t.location) / f"{wrong:06d}_0", _rows([stray]).to_pylist(),
                   schema=SCHEMA)
    record_placed_originals(t)
    assert t.to_arrow().column("id").to_pylist() == [stray]
    source = pa.table({"id": pa.array([stray, 1000], pa.int64()), "k": ["new", "new"],
                       "v": [0.5, 0.5]})
    assert _merge(wh, "db.old", source, "t.id = s.id") == (1, 1)
    after = t.to_arrow().sort_by("id")
    assert after.column("id").to_pylist() == [stray, 1000]
    assert after.column("k").to_pylist() == ["new", "new"]


def test_a_row_matched_twice_in_a_routed_merge_is_refused(wh: Warehouse) -> None:
    t = wh.create_table("db.twice", SCHEMA, bucket_by=["id"], buckets=BUCKETS)
    t.insert(_rows(list(range(20))))
    before = t.to_arrow()
    source = pa.table({"id": pa.array([3, 30, 3], pa.int64()), "k": ["a", "b", "c"],
                       "v": [1.0, 2.0, 3.0]})
    with pytest.raises(MergeCardinalityError, match="more than one source row"):
        _merge(wh, "db.twice", source, "t.id = s.id")
    assert t.to_arrow().equals(before)
