"""The change feed (issue 15): ``Table.changes(start, end)`` from the event files, checked
against hand-worked cases, compaction, schema evolution, a random model (hypothesis) and
Spark's ``AcidTable.changes``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import acidstore
from acidstore import Table, Warehouse
from acidstore.errors import InvalidInputError, NotEnoughHistoryError
from compaction import Cleaner, compact

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
Change = tuple[int, str, int, Any]  # write id, change type, id, v


def rows(values: dict[int, str]) -> pa.Table:
    ids = sorted(values)
    return pa.table({"id": ids, "v": [values[i] for i in ids],
                     "dt": ["x" if i % 2 else "y" for i in ids]}, schema=SCHEMA)


def feed(t: Table, start: int, end: int) -> Counter[Change]:
    changes = t.changes(start, end)
    return Counter(zip(changes["_write_id"].to_pylist(), changes["_change_type"].to_pylist(),
                       changes["id"].to_pylist(), changes["v"].to_pylist(), strict=True))


def new_table(wh: Warehouse, *, partitioned: bool = True, buckets: int = 2) -> Table:
    return wh.create_table("db.t", SCHEMA, partition_by=["dt"] if partitioned else [],
                           bucket_by=["id"] if buckets else [], buckets=buckets)


def four_writes(wh: Warehouse) -> Table:
    t = new_table(wh)
    t.insert(rows({1: "a", 2: "b", 3: "c"}))              # 1
    t.update("id = 2", {"v": "'B'"})                       # 2
    t.delete("id = 3")                                      # 3
    (t.merge(rows({1: "A", 4: "d"}), "t.id = s.id")       # 4: an update and an insert
     .when_matched_update({"v": "s.v"}).when_not_matched_insert_all().execute())
    return t


FOUR = Counter([(1, "insert", 1, "a"), (1, "insert", 2, "b"), (1, "insert", 3, "c"),
                (2, "update_preimage", 2, "b"), (2, "update_postimage", 2, "B"),
                (3, "delete", 3, "c"),
                (4, "update_preimage", 1, "a"), (4, "update_postimage", 1, "A"),
                (4, "insert", 4, "d")])


def test_the_feed_of_insert_update_delete_and_merge(wh: Warehouse) -> None:
    t = four_writes(wh)
    assert feed(t, 1, 4) == FOUR
    assert feed(t, 2, 3) == Counter({c: n for c, n in FOUR.items() if c[0] in (2, 3)})
    changes = t.changes(1, 4)
    assert changes.schema.names == ["id", "v", "dt", "_change_type", "_write_id",
                                    "_commit_time", "row__id"]
    # ordered by write id, then deletes, preimages, postimages, inserts
    assert changes["_write_id"].to_pylist() == sorted(changes["_write_id"].to_pylist())
    assert changes.slice(3, 2)["_change_type"].to_pylist() == ["update_preimage",
                                                               "update_postimage"]
    # a delete's row__id is the deleted row's, so it joins to that row's insert (ROW__IDs
    # are unique within a partition)
    inserted = [r for r in changes.to_pylist()
                if r["_change_type"] == "insert" and r["_write_id"] == 1]
    [deleted] = [r for r in changes.to_pylist() if r["_change_type"] == "delete"]
    assert deleted["row__id"]["writeid"] == 1 and deleted["_write_id"] == 3
    assert [r["id"] for r in inserted if r["row__id"] == deleted["row__id"]
            and r["dt"] == deleted["dt"]] == [3]
    times = dict(zip(t.history()["write_id"].to_pylist(),
                     t.history()["commit_time"].to_pylist(), strict=True))
    assert all(r["_commit_time"] == times[r["_write_id"]] for r in changes.to_pylist())


def test_a_merge_that_updates_and_deletes_in_one_partition_gives_deletes_and_inserts(
        wh: Warehouse) -> None:
    """The files cannot tell which of its delete events were updates."""
    t = new_table(wh, partitioned=False)
    t.insert(rows({1: "a", 2: "b"}))
    (t.merge(rows({1: "A", 2: "-"}), "t.id = s.id")
     .when_matched_delete("s.v = '-'").when_matched_update({"v": "s.v"}).execute())
    assert feed(t, 2, 2) == Counter([(2, "delete", 1, "a"), (2, "delete", 2, "b"),
                                     (2, "insert", 1, "A")])
    # several statements in one transaction: UPDATE and INSERT
    with wh.transaction() as txn:
        mine = txn.table("db.t")
        mine.update("id = 1", {"v": "'x'"})
        mine.insert(rows({7: "g"}))
    assert feed(t, 3, 3) == Counter([(3, "update_preimage", 1, "A"),
                                     (3, "update_postimage", 1, "x"), (3, "insert", 7, "g")])


def test_rows_a_transaction_inserted_and_then_deleted_or_updated_are_no_changes(
        wh: Warehouse) -> None:
    """Their insert and delete events carry one write id; applying the write's deletes
    before its inserts used to bring such a row back (and an updated one twice)."""
    t = new_table(wh)
    t.insert(rows({1: "a"}))
    with wh.transaction() as txn:
        mine = txn.table("db.t")
        mine.insert(rows({2: "b", 3: "c", 5: "e"}))
        mine.delete("id = 2")
        mine.update("id = 3", {"v": "'C'"})
        mine.update("id = 3", {"v": "'CC'"})
        mine.update("id = 1", {"v": "'A'"})
    assert feed(t, 2, 2) == Counter([(2, "delete", 1, "a"), (2, "insert", 1, "A"),
                                     (2, "insert", 3, "CC"), (2, "insert", 5, "e")])
    assert feed(t, 1, 2) == feed(t, 2, 2) + Counter([(1, "insert", 1, "a")])


def test_ranges_are_checked(wh: Warehouse) -> None:
    t = four_writes(wh)
    for start, end, message in [(0, 1, "int >= 1"), (3, 2, "after end"),
                                (1, 5, "after its latest write id 4")]:
        with pytest.raises(InvalidInputError, match=message):
            t.changes(start, end)
    with pytest.raises(InvalidInputError, match="write id"):
        t.changes(True, 2)
    # an aborted write has no changes; an open one is not decided yet
    with pytest.raises(RuntimeError), wh.transaction() as txn:
        txn.table("db.t").insert(rows({9: "z"}))
        raise RuntimeError("abort")
    other = acidstore.connect(wh.location)
    with other.transaction() as txn:
        txn.table("db.t").insert(rows({10: "y"}))   # write id 6, open for now
        t.insert(rows({11: "w"}))                   # write id 7
        with pytest.raises(InvalidInputError, match=r"\[6\] are not committed yet"):
            t.changes(5, 7)
        assert feed(t, 7, 7) == Counter([(7, "insert", 11, "w")])
    assert feed(t, 5, 7) == Counter([(6, "insert", 10, "y"), (7, "insert", 11, "w")])
    other.close()


def test_minor_compaction_keeps_the_feed_major_compaction_ends_it(wh: Warehouse) -> None:
    t = four_writes(wh)
    compact(t, "minor")
    Cleaner(wh, retention_seconds=0).run()
    assert feed(t, 1, 4) == FOUR
    assert feed(t, 2, 4) == Counter({c: n for c, n in FOUR.items() if c[0] > 1})
    t.insert(rows({5: "e"}))  # 5
    compact(t, "major")
    # before the cleaner: the replaced directories still serve a feed that ends before it
    assert feed(t, 2, 4) == Counter({c: n for c, n in FOUR.items() if c[0] > 1})
    Cleaner(wh, retention_seconds=0).run()
    with pytest.raises(NotEnoughHistoryError, match=r"changes 2\.\.4 of db.t"):
        t.changes(2, 4)
    t.delete("id = 5")  # 6: after the base, the feed works again
    assert feed(t, 6, 6) == Counter([(6, "delete", 5, "e")])


def test_a_feed_across_add_columns_reads_the_new_columns(wh: Warehouse) -> None:
    t = new_table(wh, partitioned=False)
    t.insert(rows({1: "a"}))
    t.add_columns(pa.schema([("n", pa.int32())]))
    t.update("id = 1", {"n": "5"})
    changes = t.changes(1, 2)
    assert [(r["_change_type"], r["n"]) for r in changes.to_pylist()] == [
        ("insert", None), ("update_preimage", None), ("update_postimage", 5)]


# --- the model ---------------------------------------------------------------------------------

Step = tuple[str, int, int]


def model_changes(state: dict[int, str], kind: str, low: int, high: int,
                  write_id: int) -> tuple[list[Change], dict[int, str]]:
    """What ``kind`` over ids ``low..high`` does to ``state``, as change rows."""
    new = dict(state)
    out: list[Change] = []
    if kind == "insert":
        for i in range(low, high + 1):
            if i not in state:
                new[i] = f"i{write_id}"
                out.append((write_id, "insert", i, new[i]))
    else:
        for i in [i for i in sorted(state) if low <= i <= high]:
            if kind == "delete":
                del new[i]
                out.append((write_id, "delete", i, state[i]))
            else:
                new[i] = f"u{write_id}"
                out += [(write_id, "update_preimage", i, state[i]),
                        (write_id, "update_postimage", i, new[i])]
    return out, new


def run_step(t: Table, state: dict[int, str], step: Step) -> int | None:
    kind, low, high = step
    where = f"id BETWEEN {low} AND {high}"
    if kind == "insert":
        missing = {i: "" for i in range(low, high + 1) if i not in state}
        if not missing:
            return None
        write_id = t.snapshot().high_watermark + 1
        return t.insert(rows({i: f"i{write_id}" for i in missing})).write_id
    if kind == "compact":
        compact(t, "minor")
        return None
    if kind == "delete":
        return t.delete(where).write_id
    write_id = t.snapshot().high_watermark + 1
    return t.update(where, {"v": f"'u{write_id}'"}).write_id


STEPS = st.lists(st.tuples(st.sampled_from(["insert", "insert", "update", "delete", "compact"]),
                           st.integers(0, 6), st.integers(0, 3)).map(
    lambda s: (s[0], s[1], s[1] + s[2])), min_size=1, max_size=8)


@given(steps=STEPS, partitioned=st.booleans(), data=st.data())
def test_the_feed_matches_a_model(tmp_path_factory: pytest.TempPathFactory,
                                  steps: list[Step], partitioned: bool,
                                  data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("model")
    with acidstore.connect(Path(root) / "wh") as wh:
        t = new_table(wh, partitioned=partitioned)
        state: dict[int, str] = {}
        expected: list[Change] = []
        for step in steps:
            write_id = run_step(t, state, step)
            if write_id is None:
                continue
            changed, state = model_changes(state, step[0], step[1], step[2], write_id)
            expected += changed
        last = t.snapshot().high_watermark
        if not last:
            return
        start = data.draw(st.integers(1, last))
        end = data.draw(st.integers(start, last))
        wanted = Counter(c for c in expected if start <= c[0] <= end)
        assert feed(t, start, end) == wanted
        # the feed replayed on the table as of start - 1 gives the table as of end
        before = {r["id"]: r["v"] for r in (t.to_arrow(as_of=start - 1).to_pylist()
                                            if start > 1 else [])}
        for _, kind, key, value in sorted(wanted, key=lambda c: (c[0], c[1] != "delete"
                                                                 and c[1] != "update_preimage")):
            if kind in ("delete", "update_preimage"):
                assert before.pop(key) == value
            else:
                before[key] = value
        assert before == {r["id"]: r["v"] for r in t.to_arrow(as_of=end).to_pylist()}


def test_spark_changes_equal_the_embedded_feed(spark: SparkSession, wh: Warehouse) -> None:
    from acidstore.spark import AcidTable

    t = four_writes(wh)
    at = AcidTable.forName(spark, "db.t", warehouse=str(wh.location))
    df = at.changes(2, 4)
    assert df.columns == t.changes(2, 4).schema.names
    got = Counter((r["_write_id"], r["_change_type"], r["id"], r["v"]) for r in df.collect())
    assert got == feed(t, 2, 4)
