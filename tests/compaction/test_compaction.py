"""``compact(table, "minor" | "major")`` on real files with the SQLite metastore (spec §10.3).

- Output names: ``delta_min_max_vT`` + ``delete_delta_min_max_vT`` (minor), ``base_N_vT``
  (major), T the compaction's transaction; every output dir has ``_orc_acid_version``, a base
  also ``_metadata_acid``.
- Reads are the same before and after (``to_arrow`` and both directory readers), ROW__IDs
  included. Minor copies events (deletes kept, aborted write ids dropped); major applies deletes.
- Output is invisible until the commit; a compaction never covers an open write id, never
  makes a writer fail, and writers' deletes of rows it rewrote still find them.
- Refusals, the partition argument, and pre-ACID originals.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.orc as po
import pytest
from acidfiles import insert_events, record_placed_originals, write_dir, write_original
from compaction_support import (
    TABLE,
    aborted_write,
    children,
    make_rows,
    new_table,
    read_exact,
    state_of,
    txn_states,
    values,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import ConcurrentCompactionError, InvalidInputError, MissingDataError
from acidstore.format.directory import acid_state
from acidstore.format.layout import ACID_VERSION, ACID_VERSION_FILE, METADATA_FILE
from acidstore.read.scan import Scan
from compaction import compact

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = acidstore.connect(tmp_path / "wh")
    yield warehouse
    warehouse.close()


@pytest.fixture
def t(wh: Warehouse) -> Table:
    """Partition dt=a: three inserts (write ids 1-3), a delete (4) and an update (5)."""
    table = new_table(wh)
    for k in range(3):
        table.insert(make_rows(range(10 * k, 10 * k + 4)))
    table.delete("id = 1 OR id = 22")
    table.update("id = 10", {"amount": "-1"})
    return table


def events(path: str) -> pa.Table:
    return po.ORCFile(path).read()


def event_files(directory: str) -> list[str]:
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if n.startswith("bucket_"))


def event_count(directory: str) -> int:
    return sum(events(p).num_rows for p in event_files(directory))


def assert_acid_dir(directory: str, *, base: bool = False) -> None:
    with open(os.path.join(directory, ACID_VERSION_FILE)) as f:
        assert f.read() == ACID_VERSION
    assert os.path.exists(os.path.join(directory, METADATA_FILE)) == base
    if base:
        with open(os.path.join(directory, METADATA_FILE)) as f:
            assert "compacted" in f.read()


# --- outputs ---------------------------------------------------------------------------------


def test_minor_copies_events_and_keeps_row_ids(t: Table, wh: Warehouse) -> None:
    part = os.path.join(t.location, "dt=a")
    before = read_exact(t)
    inputs = children(part)
    # write 5 is an UPDATE: delete events statement 0, new rows statement 1 (Hive 4)
    assert inputs == ["delete_delta_0000004_0000004_0000", "delete_delta_0000005_0000005_0000",
                      "delta_0000001_0000001_0000", "delta_0000002_0000002_0000",
                      "delta_0000003_0000003_0000", "delta_0000005_0000005_0001"]
    inserted = sum(event_count(os.path.join(part, d)) for d in inputs if d.startswith("delta_"))
    deleted = sum(event_count(os.path.join(part, d)) for d in inputs if d.startswith("delete"))

    result = compact(t, "minor")
    txn = result.txn_id
    assert txn is not None and txn_states(wh)[txn] == "committed"
    outputs = [f"delta_0000001_0000005_v{txn:07d}", f"delete_delta_0000001_0000005_v{txn:07d}"]
    (partition,) = result.partitions
    assert partition.partition == "dt=a" and list(partition.outputs) == outputs
    assert sorted(partition.inputs) == inputs
    assert partition.rows == inserted + deleted
    for name in outputs:
        assert_acid_dir(os.path.join(part, name))
    # events are copied, not applied: every insert and every delete event is still there
    assert event_count(os.path.join(part, outputs[0])) == inserted
    assert event_count(os.path.join(part, outputs[1])) == deleted
    assert read_exact(t) == before
    state = state_of(t)
    assert state.deltas == [outputs[1], outputs[0]] and state.base is None
    assert sorted(state.obsolete) == inputs
    # time travel across a minor compaction still works: its output keeps every write id
    assert sorted(r["id"] for r in t.to_arrow(as_of=3).to_pylist()) == sorted(
        [*range(4), *range(10, 14), *range(20, 24)])


def test_major_applies_deletes_and_keeps_row_ids(t: Table, wh: Warehouse) -> None:
    part = os.path.join(t.location, "dt=a")
    before = read_exact(t)
    result = compact(t, "major")
    txn = result.txn_id
    assert txn is not None
    base = f"base_0000005_v{txn:07d}"
    assert list(result.partitions[0].outputs) == [base]
    assert_acid_dir(os.path.join(part, base), base=True)
    assert read_exact(t) == before
    # only the surviving rows are in the base, as inserts with their original ROW__IDs
    written = pa.concat_tables(events(p) for p in event_files(os.path.join(part, base)))
    assert written.num_rows == len(before) == result.partitions[0].rows == 10
    assert set(written.column("operation").to_pylist()) == {0}
    keys = sorted(zip(written.column("originalTransaction").to_pylist(),
                      written.column("bucket").to_pylist(),
                      written.column("rowId").to_pylist(), strict=True))
    assert keys == sorted(r[0] for r in before)
    state = state_of(t)
    assert state.base == base and state.deltas == []
    assert len(state.obsolete) == 6
    # a second major compaction over the base and one new delta
    t.insert(make_rows([100]))
    again = compact(t, "major")
    assert again.txn_id is not None
    assert state_of(t).base == f"base_0000006_v{again.txn_id:07d}"
    assert values(read_exact(t)) == [*values(before), (100, "n100", 1000, "a")]


def test_minor_then_major_unpartitioned_table(wh: Warehouse) -> None:
    t = new_table(wh, "db.u", partitioned=False, buckets=3)
    data = make_rows(range(30)).drop_columns(["dt"])
    t.insert(data.slice(0, 10))
    t.insert(data.slice(10, 20))
    t.delete("id % 4 = 0")
    before = read_exact(t)
    minor = compact(t, "minor")
    assert minor.partitions[0].partition == ""
    assert read_exact(t) == before
    major = compact(t, "major")
    assert children(t.location) == sorted(
        [f"base_0000003_v{major.txn_id:07d}", "delete_delta_0000003_0000003_0000",
         "delta_0000001_0000001_0000", "delta_0000002_0000002_0000",
         f"delta_0000001_0000003_v{minor.txn_id:07d}",
         f"delete_delta_0000001_0000003_v{minor.txn_id:07d}"])
    assert read_exact(t) == before


def test_minor_drops_aborted_write_ids_and_keeps_delete_events(wh: Warehouse) -> None:
    """A streaming-style delta holds write ids 1-3, 2 aborted: minor drops 2's events."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("name", pa.string()), pa.field("amount", pa.int64())])
    t = wh.create_table("db.s", schema, bucket_by=["id"], buckets=1)
    for outcome in ("commit", "abort", "commit"):  # write ids 1, 2 (aborted), 3
        txn = wh.transaction()
        txn._core.write_id(t.name)
        txn.commit() if outcome == "commit" else txn.abort()
    assert t.snapshot().aborted_write_ids == (2,)
    # Hive's streaming API wrote the delta, and records nothing in acidstore's metastore:
    # reads of such a table list its directories (a table whose record is complete plans
    # from the record and never reads a directory nobody recorded)
    handle = handle_of(t)
    handle.info = dataclasses.replace(handle.info, originals_recorded=False)
    streamed = pa.concat_tables([
        insert_events(w, 0, [{"id": 10 * w + i, "name": f"w{w}", "amount": i}
                             for i in range(3)], schema=schema)
        for w in (1, 2, 3)])
    write_dir(t.location, "delta_0000001_0000003", {0: streamed})
    t.delete("id = 11")  # write id 4: a delete event for a row of write id 1
    t.insert(pa.table({"id": [40], "name": ["w4"], "amount": [0]}, schema=schema))  # 5
    before = read_exact(t)
    assert sorted(r[1] for r in before) == [10, 12, 30, 31, 32, 40]

    result = compact(t, "minor")
    cid = result.txn_id
    assert cid is not None
    delta = os.path.join(t.location, f"delta_0000001_0000005_v{cid:07d}")
    delete = os.path.join(t.location, f"delete_delta_0000001_0000005_v{cid:07d}")
    inserted = pa.concat_tables(events(p) for p in event_files(delta))
    assert sorted(set(inserted.column("currentTransaction").to_pylist())) == [1, 3, 5]
    assert inserted.num_rows == 7  # 3 + 3 + 1: the deleted row's insert event stays
    removed = pa.concat_tables(events(p) for p in event_files(delete))
    assert removed.select(["originalTransaction", "rowId", "currentTransaction"]).to_pylist() \
        == [{"originalTransaction": 1, "rowId": 1, "currentTransaction": 4}]
    assert read_exact(t) == before


# --- visibility and concurrency -------------------------------------------------------------


def test_output_is_invisible_until_the_commit(t: Table, wh: Warehouse) -> None:
    part = os.path.join(t.location, "dt=a")
    before = read_exact(t)
    seen: dict[str, object] = {}

    def during(done: int, total: int) -> None:
        if done != total:
            return
        # every bucket is written, the compaction txn is still open
        assert any("_v" in name for name in children(part))
        seen["rows"] = read_exact(t)
        state = state_of(t)
        seen["dirs"] = [state.base, *state.deltas]
        seen["reader"] = t.to_batches(with_row_id=True)
        seen["scan"] = handle_of(t).scan(with_row_id=True)

    result = compact(t, "major", progress=during)
    assert seen["rows"] == before
    assert not any("_v" in str(d) for d in seen["dirs"])  # type: ignore[attr-defined]
    # readers whose snapshot predates the commit keep reading the old directories
    scan = seen["scan"]
    assert isinstance(scan, Scan)
    old = acid_state(part, scan.write_ids, scan.txns)
    assert old.base is None and old.deltas == seen["dirs"][1:]  # type: ignore[index]
    reader = seen["reader"]
    assert isinstance(reader, pa.RecordBatchReader)
    assert len(reader.read_all()) == len(before) == scan.to_table().num_rows
    assert state_of(t).base == f"base_0000005_v{result.txn_id:07d}"
    assert read_exact(t) == before


def test_an_open_write_id_is_never_compacted(t: Table, wh: Warehouse) -> None:
    part = os.path.join(t.location, "dt=a")
    writer = wh.transaction()
    pending = writer.table(TABLE).insert(make_rows([50, 51]))  # write id 6, open
    writer.table(TABLE).delete("id = 2")
    t.insert(make_rows([60]))  # write id 7, committed above the open one
    minor = compact(t, "minor")
    assert minor.partitions[0].outputs[0] == f"delta_0000001_0000005_v{minor.txn_id:07d}"
    major = compact(t, "major")
    assert major.partitions[0].outputs == (f"base_0000005_v{major.txn_id:07d}",)
    assert "delta_0000006_0000006_0000" in children(part)
    assert {r[1] for r in read_exact(t)} == {0, 3, 2, 10, 11, 12, 13, 20, 21, 23, 60}
    writer.commit()
    assert pending.write_id == 6
    assert {r[1] for r in read_exact(t)} == {0, 3, 10, 11, 12, 13, 20, 21, 23, 50, 51, 60}
    # now everything can be compacted into one base
    last = compact(t, "major")
    assert last.partitions[0].outputs == (f"base_0000007_v{last.txn_id:07d}",)
    assert {r[1] for r in read_exact(t)} == {0, 3, 10, 11, 12, 13, 20, 21, 23, 50, 51, 60}


def test_a_writer_that_started_before_the_compaction_still_deletes_its_rows(
        t: Table, wh: Warehouse) -> None:
    writer = wh.transaction()  # its snapshot and delete events predate the compaction
    writer.table(TABLE).update("id = 0", {"amount": "777"})
    writer.table(TABLE).delete("id = 3")
    compact(t, "major")
    writer.commit()
    got = read_exact(t)
    rows = {r[1]: r for r in got}
    assert 3 not in rows and rows[0][3] == 777
    assert len(rows) == len(got) == 9  # the updated row is there once


def test_a_writer_committing_during_the_compaction_applies_to_its_output(
        t: Table, wh: Warehouse) -> None:
    """The writer's write ids are above the compactor's watermark: its delete events stay in
    their own delete delta and find the rows in the new base by ROW__ID."""
    committed: list[int | None] = []

    def during(done: int, total: int) -> None:
        if not committed:
            committed.append(t.update("id = 0", {"amount": "555"}).write_id)
            committed.append(t.delete("id = 20").write_id)
            committed.append(t.insert(make_rows([70])).write_id)

    before = {r[1]: r for r in read_exact(t)}
    result = compact(t, "major", progress=during)
    assert committed == [6, 7, 8]
    assert result.partitions[0].outputs == (f"base_0000005_v{result.txn_id:07d}",)
    after = {r[1]: r for r in read_exact(t)}
    assert after[0][3] == 555 and 20 not in after and 70 in after
    unchanged = set(before) - {0, 20}
    assert {k: after[k] for k in unchanged} == {k: before[k] for k in unchanged}


def test_writers_open_during_a_compaction_all_commit(t: Table, wh: Warehouse) -> None:
    writers = [wh.transaction() for _ in range(3)]
    writers[0].table(TABLE).update("id = 0", {"name": "'a0'"})
    writers[1].table(TABLE).delete("id = 21")
    writers[2].table(TABLE).insert(make_rows([80], dt="b"))
    late: list[object] = []

    def during(done: int, total: int) -> None:
        if not late:
            txn = wh.transaction()
            txn.table(TABLE).update("id = 13", {"name": "'late'"})
            late.append(txn)

    compact(t, "minor", progress=during)
    compact(t, "major", progress=during)
    for txn in [*writers, *late]:
        assert isinstance(txn, acidstore.Transaction)
        txn.commit()
        assert txn.state == "committed"
    rows = {r[1]: r for r in read_exact(t)}
    assert rows[0][2] == "a0" and 21 not in rows and rows[80][4] == "b"
    assert rows[13][2] == "late"
    compact(t, "major")
    assert {r[1]: r[1:] for r in read_exact(t)} == {k: v[1:] for k, v in rows.items()}


# --- refusals and arguments -------------------------------------------------------------------


def test_refusals_say_why_and_leave_nothing_behind(wh: Warehouse) -> None:
    t = new_table(wh)
    t.insert(make_rows([1, 2]))
    minor = compact(t, "minor")
    assert minor.txn_id is None and not minor.compacted
    assert minor.partitions[0].reason == "1 delta(s): nothing for a minor compaction"
    major = compact(t, "major")
    assert major.partitions[0].reason == \
        "a single base or delta: nothing for a major compaction"
    t.delete("id = 1")  # one delta and one delete delta: still not enough for a minor
    assert compact(t, "minor").partitions[0].reason == \
        "2 delta(s): nothing for a minor compaction"
    assert children(os.path.join(t.location, "dt=a")) == [
        "delete_delta_0000002_0000002_0000", "delta_0000001_0000001_0000"]
    compaction_txns = [r for r in wh.show_transactions().to_pylist()
                       if r["kind"] == "compaction"]
    assert {r["state"] for r in compaction_txns} == {"aborted"}
    done = compact(t, "major")
    assert done.compacted and done.partitions[0].outputs == (
        f"base_0000002_v{done.txn_id:07d}",)
    # a base alone is not enough for another major compaction
    assert not compact(t, "major").compacted


def test_partition_argument(wh: Warehouse) -> None:
    t = new_table(wh)
    for dt in ("a", "b", None):
        t.insert(make_rows([1, 2], dt=dt))
        t.insert(make_rows([3], dt=dt))
    before = read_exact(t)
    one = compact(t, "minor", "dt=a")
    assert [p.partition for p in one.partitions] == ["dt=a"]
    two = compact(t, "minor", {"DT": "b"})
    assert [p.partition for p in two.partitions] == ["dt=b"]
    null = compact(t, "minor", {"dt": None})
    assert [p.partition for p in null.partitions] == ["dt=__HIVE_DEFAULT_PARTITION__"]
    assert read_exact(t) == before
    every = compact(t, "major")
    assert sorted(p.partition for p in every.partitions) == [
        "dt=__HIVE_DEFAULT_PARTITION__", "dt=a", "dt=b"]
    assert all(p.outputs for p in every.partitions)
    assert read_exact(t) == before
    u = new_table(wh, "db.u", partitioned=False)
    bad_args: list[tuple[str | dict[str, str | None], str]] = [
        ("dt=zz", "has no partition"), ({"x": "a"}, "must give exactly"),
        ({"dt": "a", "x": "b"}, "must give exactly"),
        # a partition string names a directory of this table only: no climbing out of it
        # into another table's (or any) directory that happens to exist
        ("../u", "not a partition directory name"),
        ("dt=a/../../u", "not a partition directory name"), ("x=a", "must be dt=VALUE")]
    for bad, message in bad_args:
        with pytest.raises(InvalidInputError, match=message):
            compact(t, "minor", bad)
    with pytest.raises(InvalidInputError, match="kind"):
        compact(t, "full")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="engine"):
        compact(t, "minor", engine="dask")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="not partitioned"):
        compact(u, "major", "dt=a")
    # no failed call left a transaction open
    assert "open" not in txn_states(wh).values()


def test_aborted_directories_are_not_inputs(t: Table, wh: Warehouse) -> None:
    aborted = aborted_write(wh, TABLE, make_rows([90, 91]))
    part = os.path.join(t.location, "dt=a")
    assert f"delta_{aborted:07d}_{aborted:07d}_0000" in children(part)
    before = read_exact(t)
    result = compact(t, "minor")
    assert f"delta_{aborted:07d}_{aborted:07d}_0000" not in result.partitions[0].inputs
    assert read_exact(t) == before
    assert state_of(t).aborted == [f"delta_{aborted:07d}_{aborted:07d}_0000"]


# --- pre-ACID originals (Hive layout) -----------------------------------------------------------


def test_major_compaction_of_original_files(wh: Warehouse) -> None:
    """A converted table: original files get their synthetic ROW__IDs made permanent."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("name", pa.string()), pa.field("amount", pa.int64())])
    t = wh.create_table("db.o", schema)
    write_original(Path(t.location) / "000000_0",
                   [{"id": i, "name": f"o{i}", "amount": i} for i in range(5)], schema=schema)
    write_original(Path(t.location) / "000001_0",
                   [{"id": i, "name": f"o{i}", "amount": i} for i in range(5, 8)],
                   schema=schema)
    record_placed_originals(t)
    before = read_exact(t)
    assert [r[1] for r in before] == list(range(8))
    assert not compact(t, "minor").compacted  # minor never reads originals
    only = compact(t, "major")
    assert only.partitions[0].outputs == (f"base_-9223372036854775808_v{only.txn_id:07d}",)
    assert read_exact(t) == before
    t.delete("id = 6")
    t.insert(pa.table({"id": [9], "name": ["new"], "amount": [9]}, schema=schema))
    expected = [r for r in before if r[1] != 6]
    assert read_exact(t)[:-1] == expected
    again = compact(t, "major")
    assert acid_state(t.location, t.snapshot(), wh.metastore.valid_txns()).base == \
        f"base_0000002_v{again.txn_id:07d}"
    assert read_exact(t)[:-1] == expected


# --- the Spark engine ---------------------------------------------------------------------------


def test_spark_engine_writes_the_same_output(t: Table, wh: Warehouse,
                                             spark: SparkSession) -> None:
    """One Spark task per bucket; the driver commits, exactly as the local engine does."""
    before = read_exact(t)
    minor = compact(t, "minor", engine="spark", spark=spark)
    assert minor.partitions[0].outputs[0] == f"delta_0000001_0000005_v{minor.txn_id:07d}"
    assert read_exact(t) == before
    major = compact(t, "major", engine="spark", spark=spark)
    assert major.partitions[0].rows == 10
    assert state_of(t).base == f"base_0000005_v{major.txn_id:07d}"
    assert read_exact(t) == before
    # the Spark engine's commit records its outputs too: a removed bucket file is named
    recorded = [o for o in wh.metastore.compaction_outputs(t.name) if o.txn_id == major.txn_id]
    base = f"dt=a/{state_of(t).base}"
    assert [(o.directory, o.rows) for o in recorded] == [(base, 10)]
    victim = next(Path(t.location, base).glob("bucket_*"))
    victim.unlink()
    with pytest.raises(MissingDataError):
        t.to_arrow()


def test_overlapping_compactions_of_one_partition_cannot_both_commit(wh: Warehouse) -> None:
    """Two compactions of one partition with different snapshots (found by the chaos test):
    a major one's ``base_3`` and a minor one's ``delta_1_5``, which it did not see, overlap
    without nesting, and every reader selected both and read rows 0-2 twice. The one that
    commits second, without the first in its snapshot, must fail with a typed conflict and
    leave nothing; the table reads each row once."""
    t = new_table(wh, partitioned=False)
    for i in range(3):
        t.insert(make_rows([i]).drop_columns(["dt"]))
    before = read_exact(t)
    minor: list[int] = []

    def meanwhile(txn_id: int, write_ids: object) -> None:
        """After the major compaction's snapshot: two inserts, and a minor compaction of
        write ids 1-5 that commits first."""
        del txn_id, write_ids
        t.insert(make_rows([10]).drop_columns(["dt"]))
        t.insert(make_rows([11]).drop_columns(["dt"]))
        minor.append(compact(t, "minor").txn_id or 0)

    with pytest.raises(ConcurrentCompactionError, match="another compaction") as caught:
        compact(t, "major", on_start=meanwhile)
    error = caught.value
    assert (error.table, error.partition, error.other_txn_id) == (TABLE, "", minor[0])
    got = read_exact(t)
    assert sorted(r[1] for r in got) == [0, 1, 2, 10, 11]
    assert [r for r in got if r[1] < 10] == before  # ROW__IDs kept by the minor compaction
    assert txn_states(wh)[error.txn_id or 0] == "aborted"
    assert [d for d in children(t.location) if d.endswith(f"_v{error.txn_id:07d}")] == []
    assert compact(t, "major").txn_id is not None  # compacting again works
    assert read_exact(t) == got
