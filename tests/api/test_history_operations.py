"""``history()`` says what the user did: one row per version named by its statements, with the
rows they inserted, updated and deleted as the user counts them, and the table's compactions
among the writes. Runs on both metastores: the rows must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acidstore import Table, Warehouse
from acidstore.cli.main import main

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
Row = tuple[Any, ...]


@pytest.fixture
def wh(store_wh: Warehouse) -> Warehouse:
    """A warehouse on each metastore (tests/api/conftest.py)."""
    return store_wh


def rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": [dt] * len(ids)},
                    schema=SCHEMA)


def history(t: Table) -> list[Row]:
    """(write id, operation, inserted, updated, deleted, partitions) of each row."""
    return [(h["write_id"], h["operation"], h["rows_inserted"], h["rows_updated"],
             h["rows_deleted"], tuple(h["partitions"])) for h in t.history().to_pylist()]


def test_each_statement_is_named_with_the_rows_the_user_changed(wh: Warehouse) -> None:
    """An UPDATE of 2 rows counts 2 updated (not 2 deleted and 2 inserted, as its events
    are); a MERGE counts its inserted, updated and deleted rows apart; a statement that
    changed nothing still names its version; a transaction lists its distinct statements
    in the order they ran. Each row matches what the statement returned."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
    results = [t.insert(pa.concat_tables([rows([1, 2, 3], "a"), rows([4, 5], "b")])),
               t.update("id IN (1, 4)", {"v": "'u'"}),
               t.delete("id = 5")]
    source = pa.table({"id": [2, 3, 6, 7], "v": ["m", "gone", "n", "o"],
                       "dt": ["a", "a", "b", "b"]}, schema=SCHEMA)
    results.append(t.merge(source, "t.id = s.id")
                   .when_matched_delete(condition="s.v = 'gone'")
                   .when_matched_update({"v": "s.v"})
                   .when_not_matched_insert_all().execute())
    results += [t.insert_overwrite(rows([8], "b")), t.delete("id = 99"),
                t.insert(SCHEMA.empty_table())]
    with wh.transaction() as txn:
        txn.table("db.t").insert(rows([9, 10], "c"))
        txn.table("db.t").delete("id = 9")
        txn.table("db.t").insert(rows([11], "c"))
    assert history(t) == [
        (1, "insert", 5, 0, 0, ("dt=a", "dt=b")),
        (2, "update", 0, 2, 0, ("dt=a", "dt=b")),
        (3, "delete", 0, 0, 1, ("dt=b",)),
        (4, "merge", 2, 1, 1, ("dt=a", "dt=b")),
        (5, "insert_overwrite", 1, 0, 0, ("dt=b",)),
        (6, "delete", 0, 0, 0, ()),
        (7, "insert", 0, 0, 0, ()),
        (8, "insert,delete", 3, 0, 1, ("dt=c",))]
    assert [(r.rows_inserted, r.rows_updated, r.rows_deleted) for r in results] == [
        h[2:5] for h in history(t)[:7]]
    assert sorted(t.to_arrow(columns=["id"]).column("id").to_pylist()) == [1, 2, 8, 10, 11]


def test_streaming_commits_are_streaming_inserts(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    with wh.streaming_connection("db.t", batch_size=3, partition={"dt": "a"}) as conn:
        conn.begin()
        conn.write(rows([1, 2], "a"))
        conn.commit()
        conn.begin()
        conn.commit()  # no rows: the version the batch opened is still named
    assert history(t) == [(1, "streaming_insert", 2, 0, 0, ("dt=a",)),
                          (2, "streaming_insert", 0, 0, 0, ())]


def test_compactions_are_listed_among_the_writes(wh: Warehouse, store: str | None,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A compaction has no write id (null): it changes no row. Time travel by a moment and
    the change feed, which resolve versions through the commit record, are not confused by
    it; neither is the command line."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(rows([1, 2], "a"))
    t.insert(rows([3], "b"))
    t.update("id = 1", {"v": "'x'"})
    major = t.optimize("major", partition={"dt": "a"})
    t.delete("id = 3")
    t.insert(rows([4], "b"))
    minor = t.optimize("minor", partition={"dt": "b"})
    got = t.history().to_pylist()
    assert [(h["write_id"], h["txn_id"], h["operation"], h["rows_inserted"],
             h["rows_updated"], h["rows_deleted"], tuple(h["partitions"])) for h in got] == [
        (1, got[0]["txn_id"], "insert", 2, 0, 0, ("dt=a",)),
        (2, got[1]["txn_id"], "insert", 1, 0, 0, ("dt=b",)),
        (3, got[2]["txn_id"], "update", 0, 1, 0, ("dt=a",)),
        (None, major.txn_id, "compaction_major", 0, 0, 0, ("dt=a",)),
        (4, got[4]["txn_id"], "delete", 0, 0, 1, ("dt=b",)),
        (5, got[5]["txn_id"], "insert", 1, 0, 0, ("dt=b",)),
        (None, minor.txn_id, "compaction_minor", 0, 0, 0, ("dt=b",))]
    assert got[3]["files"] == 1 and got[3]["bytes"] > 0 and got[6]["files"] >= 1
    times = [h["commit_time"] for h in got]
    assert times == sorted(times)
    assert t.history().schema.field("write_id").type == pa.int64()

    def ids(**read: Any) -> list[int]:
        return sorted(t.to_arrow(columns=["id"], **read).column("id").to_pylist())

    assert ids(as_of=got[2]["commit_time"]) == ids(as_of=3) == [1, 2, 3]
    assert ids(as_of=got[3]["commit_time"]) == [1, 2, 3]  # the compaction's moment
    assert ids(as_of=got[4]["commit_time"]) == ids(as_of=4) == [1, 2]
    feed = t.changes(4, 5)
    assert sorted((r["id"], r["_change_type"], r["_write_id"]) for r in feed.to_pylist()) == [
        (3, "delete", 4), (4, "insert", 5)]
    capsys.readouterr()
    assert main(["history", "db.t", "--warehouse", str(Path(t.location).parents[1]), "--json",
                 *(["--metastore", store] if store else [])]) == 0, capsys.readouterr().err
    shown = json.loads(capsys.readouterr().out)
    assert [(r["write_id"], r["operation"]) for r in shown] == [
        (h["write_id"], h["operation"]) for h in got]
