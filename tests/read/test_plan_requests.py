"""Reads of a warehouse table plan from the metastore's record (``read.record_plan``): what a
read costs the storage grows with what it reads, not with the table.

Every call the library makes on the filesystem is counted by a ``pyarrow.fs.PyFileSystem``
handler passing each on to the local disk (``counting_support``): directory listings (the
selector form of ``get_file_info``), ``stat`` calls (its path form) and opened files. Reads
listed every directory of every partition they touched before (a full read of 1,000
partitions x 3 writes + a DELETE made 4,430 listings); now a read lists nothing and opens
only the files it reads.

The metastore is counted too (``RecordQueries``: its record calls, and SQLite's statements
through its trace callback). A read planned two record queries a partition before (a full
read of 1,000 partitions: 2,000 of them, each a round trip on PostgreSQL); now a read of
many partitions asks the record twice per ``PLAN_BATCH`` of them, and a one-partition read
its two indexed queries. Counts, never time.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from counting_support import CountingHandler
from metastore_support import sqlite_steps

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.metastore import Metastore
from acidstore.metastore.sql_schema import SCHEMA_VERSION
from acidstore.read import plan_memory, record_plan
from compaction import compact

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int64())])


@dataclass
class Counted:
    wh: Warehouse
    handler: CountingHandler

    def table(self, partitions: int, name: str = "db.t") -> Table:
        """``partitions`` partitions, each written by two INSERTs (two rows each) and one
        DELETE (of the second's): per partition two deltas and a delete delta."""
        t = self.wh.create_table(name, SCHEMA, partition_by=["p"])
        for first in (0, 1):
            t.insert(pa.table({"id": [first + 2 * p for p in range(partitions)] * 2,
                               "p": list(range(partitions)) * 2}, schema=SCHEMA))
        t.delete("id % 2 = 1")
        return t

    def read(self, action: object) -> tuple[Counter[str], list[str]]:
        """The calls (listings as ``list``, opens as ``read``, ``stat``) ``action`` made,
        and the files it opened."""
        self.handler.reset()
        assert callable(action)
        action()
        return self.handler.calls + self.handler.stats, list(self.handler.opened)


#: the metastore calls a read plans from the record with
RECORD_CALLS = ("compaction_outputs", "committed_components",
                "compaction_outputs_by_partition", "committed_components_by_partition")


class RecordQueries:
    """Counts the record calls a metastore serves (wrapping them on the object) and, on
    SQLite, every SQL statement it runs (``set_trace_callback``)."""

    def __init__(self, metastore: Metastore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: Counter[str] = Counter()
        self.statements: list[str] = []
        self._metastore = metastore
        for name in RECORD_CALLS:
            monkeypatch.setattr(metastore, name, self._counting(name, getattr(metastore, name)))

    def _counting(self, name: str, call: Callable[..., object]) -> Callable[..., object]:
        def counted(*args: object, **kwargs: object) -> object:
            self.calls[name] += 1
            return call(*args, **kwargs)
        return counted

    def of(self, action: Callable[[], object]) -> tuple[Counter[str], int]:
        """The record calls ``action`` made, and the SQL statements it ran."""
        self.calls.clear()
        self.statements.clear()
        plan_memory.clear()  # from scratch: a kept plan asks only for the commits since
        conn = self._metastore._connection()  # type: ignore[attr-defined]
        conn.set_trace_callback(self.statements.append)
        try:
            action()
        finally:
            conn.set_trace_callback(None)
        return Counter(self.calls), len(self.statements)


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[Counted]:
    handler = CountingHandler(pafs.LocalFileSystem(), atomic_rename=True)
    (tmp_path / "wh").mkdir()
    with acidstore.connect(str(tmp_path / "wh"), filesystem=pafs.PyFileSystem(handler),
                           metastore=f"sqlite:///{tmp_path}/metastore.db") as wh:
        yield Counted(wh, handler)


def test_a_full_read_lists_nothing_however_many_partitions(counted: Counted) -> None:
    calls = {}
    for partitions in (5, 40):
        t = counted.table(partitions, f"db.t{partitions}")
        assert t.to_arrow().num_rows == 2 * partitions
        calls[partitions], opened = counted.read(t.to_arrow)
        # two insert deltas and a delete delta per partition, each of one bucket file; the
        # delete file is consulted by both deltas' splits, and two threads reading them at
        # once may each open it
        assert len(set(opened)) == 3 * partitions <= len(opened) <= 4 * partitions
    assert calls[5]["list"] == calls[40]["list"] == 0, calls
    assert calls[5]["stat"] == calls[40]["stat"] == 0, calls


def test_a_one_partition_read_opens_only_its_files(counted: Counted) -> None:
    calls = {}
    for partitions in (5, 40):
        t = counted.table(partitions, f"db.t{partitions}")
        calls[partitions], opened = counted.read(lambda t=t: t.to_arrow(filter="p = 3"))
        assert opened and all("/p=3/" in path for path in opened), opened
        assert len(set(opened)) == 3 <= len(opened) <= 4
    assert calls[5]["list"] == calls[40]["list"] == 0, calls
    assert calls[5]["stat"] == calls[40]["stat"] == 0, calls


def test_one_row_dml_lists_nothing(counted: Counted) -> None:
    """A DELETE plans its units from the record too: its cost does not grow with the
    directories of the partition (a listing each before)."""
    t = counted.table(5)
    for _ in range(6):  # more deltas in every partition
        t.insert(pa.table({"id": [100], "p": [1]}, schema=SCHEMA))
    calls, _ = counted.read(lambda: t.delete("id = 100"))
    assert calls["list"] == 0, calls
    assert t.to_arrow(filter="p = 1").column("id").to_pylist() == [2, 2]


def test_a_directory_copied_in_is_not_listed_nor_read(counted: Counted, tmp_path: Path
                                                      ) -> None:
    """What the record does not name is never read: a partition directory nobody recorded
    is not found, and fsck (which lists) reports it."""
    t = counted.table(3)
    stray = Path(t.location) / "p=9"
    (stray / "delta_0000001_0000001_0000").mkdir(parents=True)
    calls, opened = counted.read(t.to_arrow)
    assert calls["list"] == 0 and not [p for p in opened if "/p=9/" in p]
    assert sorted(t.to_arrow().column("p").to_pylist()) == [0, 0, 1, 1, 2, 2]
    found = counted.wh.fsck(t.name).to_pylist()
    assert [f["path"] for f in found] == [str(stray / "delta_0000001_0000001_0000")], found


def test_a_table_created_before_the_record_was_complete_still_lists(counted: Counted
                                                                    ) -> None:
    """A table from before metastore schema 12 may hold what no record names (adopted
    originals, pre-schema-11 writes): its reads list, as before."""
    t = counted.table(3)
    handle = handle_of(t)
    handle.info = type(handle.info)(**{**vars(handle.info), "originals_recorded": False})
    assert handle.record_plan() is None
    calls, _ = counted.read(t.to_arrow)
    assert calls["list"] > 0
    assert t.to_arrow().num_rows == 6


def test_the_record_query_reads_the_partition_index(counted: Counted, tmp_path: Path
                                                    ) -> None:
    """The components a read asks for are found by (table, partition, write id): SQLite's
    plan for the very statement the read ran uses that index, not the table's history."""
    t = counted.table(4)
    conn = counted.wh.metastore._connection()  # type: ignore[attr-defined]
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    plan_memory.clear()  # a plan from scratch: a kept one asks only for the commits since
    try:
        t.to_arrow(filter="p = 2")
    finally:
        conn.set_trace_callback(None)
    (query,) = [s for s in statements if "FROM components c" in s]
    assert "c.part = 'p=2'" in query
    with sqlite3.connect(tmp_path / "metastore.db") as plain:
        plan = " ".join(str(row[-1]) for row in plain.execute(f"EXPLAIN QUERY PLAN {query}"))
    plain.close()
    assert "components_by_write" in plan, plan


@pytest.mark.parametrize("store", ["sqlite", "postgresql"], indirect=True)
def test_both_backends_index_components_by_partition_and_write_id(store_wh: Warehouse,
                                                                  store: str | None) -> None:
    """The index the record query needs exists on both metastores (created by the schema
    of version 16, and by the migration of an older store)."""
    assert SCHEMA_VERSION >= 16
    t = store_wh.create_table("db.t", SCHEMA, partition_by=["p"])
    t.insert(pa.table({"id": [1], "p": [1]}, schema=SCHEMA))
    meta = store_wh.metastore
    if store is None:
        with sqlite3.connect(Path(store_wh.location) / "_acidstore_metastore.db") as lite:
            columns = [r[2] for r in lite.execute("PRAGMA index_info(components_by_write)")]
        lite.close()
    else:
        import psycopg

        with psycopg.connect(store) as conn:
            row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = "
                               "'components_by_write'").fetchone()
        assert row is not None
        columns = row[0].split("(", 1)[1].rstrip(")").replace(" ", "").split(",")
    assert columns == ["table_id", "part", "write_id"]
    assert meta.committed_components(t.name, partition="p=1", min_write_id=1)[0].write_id == 1


def test_the_cli_reads_a_warehouse_table_from_the_record(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """``acidstore read`` of a warehouse table plans as ``Table.to_arrow`` does: a delta
    copied in under a committed write id (which a listing would take for that write's rows,
    or refuse) is not read, and the rows are the API's."""
    from cli_support import make_warehouse, run_json

    warehouse = make_warehouse(tmp_path / "shop")
    partition = warehouse / "shop.db" / "orders" / "dt=2026-11-22"
    (source,) = [d for d in partition.iterdir() if d.name.startswith("delta_0000003")]
    shutil.copytree(source, partition / (source.name[:-4] + "0007"))  # delta_3_3_0007
    with acidstore.connect(warehouse) as wh:
        expected = sorted(wh.table("shop.orders").to_arrow().column("id").to_pylist())
    for extra in ([], ["--partition", "dt=2026-11-22"], ["--filter", "dt = '2026-11-22'"]):
        doc = run_json(["read", "shop.orders", "--warehouse", str(warehouse), *extra], capsys)
        ids = sorted(row["id"] for row in doc["rows"])
        assert ids == (expected if not extra else [i for i in expected if i != 7]), doc


def test_a_full_read_asks_the_record_the_same_queries_however_many_partitions(
        counted: Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two record queries for all the partitions (not two each, a round trip each on
    PostgreSQL), and as many SQL statements for 1,000 partitions as for 3."""
    queries = RecordQueries(counted.wh.metastore, monkeypatch)
    calls, statements = {}, {}
    for partitions in (3, 1000):
        t = counted.table(partitions, f"db.t{partitions}")
        assert t.to_arrow().num_rows == 2 * partitions  # the first read leases anew
        calls[partitions], statements[partitions] = queries.of(t.to_arrow)
    assert calls[3] == calls[1000] == Counter(
        compaction_outputs_by_partition=1, committed_components_by_partition=1), calls
    assert statements[3] == statements[1000], statements


def test_a_one_partition_read_makes_its_two_indexed_queries(
        counted: Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    queries = RecordQueries(counted.wh.metastore, monkeypatch)
    t = counted.table(40)
    calls, _ = queries.of(lambda: t.to_arrow(filter="p = 3"))
    assert calls == Counter(compaction_outputs=1, committed_components=1), calls


def test_the_change_feed_asks_the_record_once_for_all_partitions(
        counted: Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    queries = RecordQueries(counted.wh.metastore, monkeypatch)
    t = counted.table(30)
    calls, _ = queries.of(lambda: t.changes(1, 3))
    assert calls["compaction_outputs_by_partition"] == 1, calls
    assert calls["committed_components_by_partition"] == 1, calls
    assert calls["compaction_outputs"] == 0, calls  # none a partition
    assert sorted(t.changes(1, 3).column("_change_type").to_pylist()) == \
        ["delete"] * 60 + ["insert"] * 120  # two rows a partition each, as ``table`` writes


def compacted_table(wh: Warehouse) -> Table:
    """Five partitions with histories of their own: p=1 compacted (major) below later
    writes, p=2 minor-compacted, p=3 overwritten, the others as written."""
    t = wh.create_table("db.c", SCHEMA, partition_by=["p"])
    for first in range(3):
        t.insert(pa.table({"id": [10 * first + p for p in range(5)], "p": list(range(5))},
                          schema=SCHEMA))
    t.delete("id = 11")
    compact(t, "major", partition="p=1")
    compact(t, "minor", partition="p=2")
    t.insert(pa.table({"id": [31, 32], "p": [1, 2]}, schema=SCHEMA))
    t.insert_overwrite(pa.table({"id": [33], "p": [3]}, schema=SCHEMA))
    return t


def test_planning_many_partitions_is_planning_each(counted: Counted) -> None:
    """``plan_many`` gives each partition the plan ``plan`` gives it (compacted ones from
    their base up), whatever the batches."""
    t = compacted_table(counted.wh)
    handle = handle_of(t)
    txns, write_ids = handle.read_snapshot()
    plan = handle.record_plan()
    assert plan is not None
    paths = [p.path for p in handle.read_partitions(plan)]
    each = {path: plan.plan(path, write_ids, txns) for path in paths}
    assert all(each.values()) and len(each) == 5
    assert plan.plan_many(paths, write_ids, txns) == each
    assert plan.plan_many(reversed(paths), write_ids, txns) == each
    assert plan.plan_many([], write_ids, txns) == {}


def test_reads_in_batches_return_the_same_rows(counted: Counted,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    t = compacted_table(counted.wh)
    expected = sorted(t.to_arrow().column("id").to_pylist())
    assert expected == [0, 1, 2, 4, 10, 12, 14, 20, 21, 22, 24, 31, 32, 33]
    queries = RecordQueries(counted.wh.metastore, monkeypatch)
    monkeypatch.setattr(record_plan, "PLAN_BATCH", 2)
    calls, _ = queries.of(t.to_arrow)
    assert sorted(t.to_arrow().column("id").to_pylist()) == expected
    # batches of two, two and one: the last asks the one-partition queries
    assert calls == Counter(compaction_outputs_by_partition=2,
                            committed_components_by_partition=2,
                            compaction_outputs=1, committed_components=1), calls


def test_a_full_read_does_not_load_a_compacted_partitions_history(
        counted: Counted) -> None:
    """Each partition's writes are asked from its own base up: a full read of a table
    whose compacted partition has a long history below its base costs SQLite no more
    steps than before that history (a floor common to all would read it all)."""
    conn = counted.wh.metastore._connection()  # type: ignore[attr-defined]
    t = counted.table(4)
    cost = []
    for history in (0, 300):
        for _ in range(history):
            t.insert(pa.table({"id": [7], "p": [1]}, schema=SCHEMA))
        t.delete("id = 7")
        compact(t, "major", partition="p=1")
        assert t.to_arrow().num_rows == 8
        cost.append(sqlite_steps(conn, t.to_arrow))
    assert cost[1] <= cost[0] * 1.2, cost
