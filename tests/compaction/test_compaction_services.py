"""Initiator, Worker and Cleaner against real files and the SQLite metastore (spec §10, §11).

- Initiator: Hive's decision order (aborts, old abort, delta/base size ratio, delta count),
  table-property overrides, ``NO_AUTO_COMPACTION``, no duplicate while one is queued/running.
- Worker: the queue's states in ``show_compactions``, one claim per partition, refusals.
- Cleaner: removes what a compaction replaced, but never what a live reader's lease selects
  and not before ``retention_seconds``; removes aborted writes' directories and forgets their
  write ids; removes Spark staging directories of finished transactions.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from compaction_support import (
    TABLE,
    CleanBeforeLease,
    aborted_write,
    children,
    compactions,
    make_rows,
    new_table,
    read_exact,
    state_of,
    txn_states,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.errors import InvalidInputError
from acidstore.format.layout import STAGING_DIR
from compaction import Cleaner, Initiator, Thresholds, Worker, compact, run_once

DELTA_NUM = "compactorthreshold.hive.compactor.delta.num.threshold"
DELTA_PCT = "compactorthreshold.hive.compactor.delta.pct.threshold"


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = acidstore.connect(tmp_path / "wh")
    yield warehouse
    warehouse.close()


def inserts(t: Table, count: int, *, dt: str = "a", start: int = 0) -> None:
    for i in range(start, start + count):
        t.insert(make_rows([i], dt=dt))


def with_base(wh: Warehouse, name: str, rows: int = 2000, **kw: object) -> Table:
    """A partition dt=a holding a compacted base of ``rows`` rows (and nothing else current)."""
    t = new_table(wh, name, **kw)  # type: ignore[arg-type]
    t.insert(make_rows(range(rows)))
    t.delete(f"id = {rows - 1}")
    assert compact(t, "major").compacted
    return t


def queued(wh: Warehouse, thresholds: Thresholds | None = None) -> list[tuple[str, str, str]]:
    return [(e.table, e.partition, e.kind) for e in Initiator(wh, thresholds).run()]


def reasons(wh: Warehouse) -> list[str]:
    """Why the initiator queued what it queued (direct ``compact()`` calls left out)."""
    return [c["reason"] for c in compactions(wh) if c["reason"] != "requested by compact()"]


def fail_last(wh: Warehouse) -> None:
    """End the newest entry, so that the partition may be queued again."""
    wh.metastore.finish_compaction(compactions(wh)[-1]["compaction_id"], "failed", "test")


# --- Initiator ---------------------------------------------------------------------------------


def test_delta_count_without_a_base_asks_for_major(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 10)
    assert queued(wh) == []
    inserts(t, 1, start=10)
    assert queued(wh) == [(TABLE, "dt=a", "major")]
    assert reasons(wh) == ["11 deltas > 10"]


def test_delta_count_with_a_base_asks_for_minor_and_size_ratio_for_major(
        wh: Warehouse) -> None:
    t = with_base(wh, TABLE)
    inserts(t, 3, start=5000)
    assert queued(wh, Thresholds(delta_num=2, delta_pct=100.0)) == [(TABLE, "dt=a", "minor")]
    assert reasons(wh) == ["3 deltas > 2"]
    fail_last(wh)
    # three small deltas are ~40% of the 2000-row base: the ratio comes first -> major
    assert queued(wh, Thresholds(delta_num=2)) == [(TABLE, "dt=a", "major")]
    assert reasons(wh)[-1].startswith("deltas are ") and reasons(wh)[-1].endswith("> 10%")


def test_size_ratio(wh: Warehouse) -> None:
    t = with_base(wh, TABLE)
    t.insert(make_rows([5000]))  # one small delta: ~13% of the base
    assert queued(wh, Thresholds(delta_pct=0.5)) == []
    assert queued(wh) == [(TABLE, "dt=a", "major")]
    fail_last(wh)
    t.insert(make_rows(range(6000, 8000)))  # a delta as large as the base
    assert queued(wh, Thresholds(delta_pct=0.5)) == [(TABLE, "dt=a", "major")]


def test_aborted_thresholds(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 2)
    first = aborted_write(wh, TABLE, make_rows([100]))
    assert queued(wh, Thresholds(aborted_num=2)) == []
    aborted_write(wh, TABLE, make_rows([101]))
    assert queued(wh, Thresholds(aborted_num=2)) == [(TABLE, "dt=a", "major")]
    assert reasons(wh) == ["2 aborted writes >= 2"]
    fail_last(wh)
    # an old abort asks for a minor compaction
    old = time.time() - 3600
    os.utime(os.path.join(t.location, "dt=a", f"delta_{first:07d}_{first:07d}_0000"),
             (old, old))
    assert queued(wh, Thresholds(aborted_age_seconds=7200)) == []
    assert queued(wh, Thresholds(aborted_age_seconds=60)) == [(TABLE, "dt=a", "minor")]
    assert reasons(wh)[-1].startswith("an aborted write is 3")


def test_table_properties_override_and_opt_out(wh: Warehouse) -> None:
    low = new_table(wh, "db.low", properties={DELTA_NUM: "2"})
    plain = new_table(wh, "db.plain")
    out = new_table(wh, "db.out", properties={DELTA_NUM: "2", "NO_AUTO_COMPACTION": "true"})
    old = new_table(wh, "db.old", properties={DELTA_NUM: "2", "no_auto_compact": "TRUE"})
    pct = with_base(wh, "db.pct", properties={DELTA_PCT: "5"})
    for t in (low, plain, out, old):
        inserts(t, 3)
    pct.insert(make_rows(range(6000, 8000)))
    assert queued(wh) == [("db.low", "dt=a", "major")]
    bad = new_table(wh, "db.bad", properties={DELTA_NUM: "many"})
    with pytest.raises(InvalidInputError, match="not a number"):
        Initiator(wh).run()
    wh.drop_table(bad.name)


def test_no_second_entry_while_one_is_initiated_or_working(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 3)
    inserts(t, 3, dt="b")
    limits = Thresholds(delta_num=2)
    assert sorted(queued(wh, limits)) == [(TABLE, "dt=a", "major"), (TABLE, "dt=b", "major")]
    assert queued(wh, limits) == []
    assert wh.metastore.enqueue_compaction(TABLE, "dt=a", "minor", "by hand") is None
    claimed = wh.metastore.claim_compaction("w1", 60)
    assert claimed is not None and claimed.state == "working"
    assert queued(wh, limits) == []
    assert [(c["partition"], c["state"], c["worker"]) for c in compactions(wh)] == [
        ("dt=a", "working", "w1"), ("dt=b", "initiated", None)]
    Worker(wh, name="w1").process(claimed)
    Worker(wh).run()
    assert [c["state"] for c in compactions(wh)] == ["ready for cleaning"] * 2
    assert queued(wh, limits) == []  # compacted: nothing left to do
    Cleaner(wh, retention_seconds=0).run()
    assert [c["state"] for c in compactions(wh)] == ["succeeded"] * 2
    inserts(t, 3, start=10)
    # finished entries do not block (the base is tiny: the deltas outweigh it -> major)
    assert queued(wh, limits) == [(TABLE, "dt=a", "major")]


# --- Worker ------------------------------------------------------------------------------------


def test_queue_states_and_one_claim_per_partition(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 2)
    inserts(t, 2, dt="b")
    t.insert(make_rows([50], dt="c"))
    before = read_exact(t)
    for part in ("dt=a", "dt=b", "dt=c"):
        assert wh.metastore.enqueue_compaction(TABLE, part, "minor", "by hand") is not None
    shown = wh.show_compactions()
    assert shown.column("state").to_pylist() == ["initiated"] * 3
    a = wh.metastore.claim_compaction("w1", 60)
    b = wh.metastore.claim_compaction("w2", 60)
    c = wh.metastore.claim_compaction("w3", 60)
    assert a is not None and b is not None and c is not None
    assert [a.partition, b.partition, c.partition] == ["dt=a", "dt=b", "dt=c"]
    assert wh.metastore.claim_compaction("w4", 60) is None
    # workers run their claims at the same time; each entry is compacted exactly once
    threads = [threading.Thread(target=Worker(wh, name=name).process, args=(entry,))
               for name, entry in (("w1", a), ("w2", b), ("w3", c))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = compactions(wh)
    assert [(r["state"], r["worker"], r["attempts"]) for r in rows] == [
        ("ready for cleaning", "w1", 1), ("ready for cleaning", "w2", 1),
        ("refused", None, 1)]
    assert rows[2]["error"].startswith(
        "None of the compaction thresholds met, compaction request is refused!")
    assert "1 delta(s): nothing for a minor compaction" in rows[2]["error"]
    assert all(r["txn_id"] is not None and r["highest_write_id"] == 5 for r in rows[:2])
    assert all(txn_states(wh)[r["txn_id"]] == "committed" for r in rows[:2])
    assert read_exact(t) == before


def test_worker_fails_an_entry_of_a_dropped_table(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 2)
    wh.metastore.enqueue_compaction(TABLE, "dt=a", "major", "by hand")
    wh.drop_table(TABLE)
    (entry,) = Worker(wh).run()
    assert (entry.state, entry.error) == ("failed", "the table was dropped")


def test_run_once_chains_the_three_services(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 4)
    t.delete("id = 2")
    before = read_exact(t)
    seen: list[tuple[str, int, int]] = []
    summary = run_once(wh, thresholds=Thresholds(delta_num=3), retention_seconds=0,
                       report=lambda what, done, total: seen.append((what, done, total)))
    assert [(e.kind, e.partition) for e in summary.queued] == [("major", "dt=a")]
    assert [e.state for e in summary.ran] == ["ready for cleaning"]
    assert summary.cleaned.cleaned == [summary.queued[0].compaction_id]
    assert seen and seen[-1][0] == f"major {TABLE}/dt=a" and seen[-1][1] == seen[-1][2]
    assert children(os.path.join(t.location, "dt=a")) == [
        f"base_0000005_v{summary.ran[0].txn_id:07d}"]
    assert read_exact(t) == before
    assert any(line.startswith("cleaner:   5 directories removed") for line in summary.lines())


# --- Cleaner -----------------------------------------------------------------------------------


def compacted_by_worker(wh: Warehouse, t: Table, kind: str = "major") -> int:
    entry = wh.metastore.enqueue_compaction(t.name, "dt=a", kind, "by hand")  # type: ignore[arg-type]
    assert entry is not None
    (done,) = Worker(wh).run()
    assert done.state == "ready for cleaning" and done.txn_id is not None
    return done.txn_id


def test_cleaner_removes_what_a_compaction_replaced(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 3)
    t.update("id = 1", {"name": "'x'"})
    before = read_exact(t)
    minor = compacted_by_worker(wh, t, "minor")
    report = Cleaner(wh, retention_seconds=0).run()
    assert len(report.removed) == 5 and report.cleaned == [1] and report.waiting == []
    part = os.path.join(t.location, "dt=a")
    assert children(part) == [f"delete_delta_0000001_0000004_v{minor:07d}",
                              f"delta_0000001_0000004_v{minor:07d}"]
    assert read_exact(t) == before
    major = compacted_by_worker(wh, t)
    Cleaner(wh, retention_seconds=0).run()
    assert children(part) == [f"base_0000004_v{major:07d}"]
    assert read_exact(t) == before
    assert [c["state"] for c in compactions(wh)] == ["succeeded"] * 2


def test_a_live_reader_keeps_its_directories(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 3)
    t.delete("id = 0")
    before = read_exact(t)
    part = os.path.join(t.location, "dt=a")
    old = children(part)
    reader = t.to_batches(with_row_id=True)  # leased: the snapshot before the compaction
    unread = t.to_batches()  # dropped without being read
    txn = compacted_by_worker(wh, t)
    report = Cleaner(wh, retention_seconds=0).run()
    assert report.removed == [] and report.waiting == [1] and report.cleaned == []
    assert sorted(os.path.basename(p) for p in report.kept_for_readers) == old
    assert children(part) == sorted([*old, f"base_0000004_v{txn:07d}"])
    assert reader.read_all().num_rows == len(before) == 2
    assert Cleaner(wh, retention_seconds=0).run().waiting == [1]  # the unread one
    del unread
    report = Cleaner(wh, retention_seconds=0).run()
    assert sorted(os.path.basename(p) for p in report.removed) == old
    assert report.cleaned == [1]
    assert children(part) == [f"base_0000004_v{txn:07d}"]
    assert read_exact(t) == before


def test_a_compaction_cleaned_between_snapshot_and_lease_is_not_lost(tmp_path: Path) -> None:
    """Issue 12.3: the cleaner removed the directories a snapshot had just selected (a
    compaction committed and was cleaned before the reader's lease existed), and the read
    returned 0 of 29 rows with no error. The reader now sees the compaction it missed and
    takes its snapshot again."""
    root = tmp_path / "wh"
    root.mkdir()
    store = CleanBeforeLease(root / DEFAULT_METASTORE_FILE)
    with acidstore.connect(root, metastore=store) as wh:
        t = new_table(wh)
        inserts(t, 3)
        t.delete("id = 0")
        before = read_exact(t)

        def compact_and_clean() -> None:
            compacted_by_worker(wh, t)
            assert Cleaner(wh, retention_seconds=0).run().cleaned == [1]

        store.armed = compact_and_clean
        got = t.to_arrow(with_row_id=True)  # snapshot, [compaction + clean], lease, read
        assert store.armed is None  # the interleaving did happen
        assert sorted(got.column("id").to_pylist()) == [r[1] for r in before] == [1, 2]
        assert read_exact(t) == before


def test_a_transaction_reads_its_snapshot_after_a_compaction_committed(wh: Warehouse) -> None:
    """The lease check must not chase a transaction's own snapshot: it cannot change, and
    the cleaner keeps what open transactions read."""
    t = new_table(wh)
    inserts(t, 3)
    with wh.transaction() as txn:
        bound = txn.table(TABLE)
        assert bound.to_arrow().num_rows == 3
        compacted_by_worker(wh, t)  # commits while txn is open, invisible to its snapshot
        assert Cleaner(wh, retention_seconds=0).run().cleaned == []  # txn still reads them
        assert bound.to_arrow().num_rows == 3


def test_closing_a_reader_releases_its_lease(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 2)
    reader = t.to_batches()
    assert len(wh.metastore.active_leases(TABLE)) == 1
    reader.close()
    assert wh.metastore.active_leases(TABLE) == []
    with t.to_batches() as started:
        assert started.read_next_batch().num_rows > 0
        assert len(wh.metastore.active_leases(TABLE)) == 1
    assert wh.metastore.active_leases(TABLE) == []


def test_an_open_transaction_keeps_the_directories_of_its_snapshot(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 3)
    writer = wh.transaction()
    mine = writer.table(TABLE)
    assert mine.to_arrow().num_rows == 3
    compacted_by_worker(wh, t)
    report = Cleaner(wh, retention_seconds=0).run()
    assert report.cleaned == [] and report.removed == []
    mine.delete("id = 1")  # still reads (and deletes from) its snapshot's directories
    assert sorted(mine.to_arrow().column("id").to_pylist()) == [0, 2]
    writer.commit()
    Cleaner(wh, retention_seconds=0).run()
    assert sorted(r[1] for r in read_exact(t)) == [0, 2]
    assert state_of(t).obsolete == []


def test_retention_keeps_replaced_directories_and_time_travel(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 3)
    t.delete("id = 2")
    part = os.path.join(t.location, "dt=a")
    old = children(part)
    history = {w: t.to_arrow(as_of=w).num_rows for w in range(1, 5)}
    minor = compacted_by_worker(wh, t, "minor")
    report = Cleaner(wh, retention_seconds=3600).run()
    assert report.waiting == [1] and report.removed == []
    assert set(old) <= set(children(part))
    assert {w: t.to_arrow(as_of=w).num_rows for w in range(1, 5)} == history
    Cleaner(wh, retention_seconds=0).run()
    assert children(part) == [f"delete_delta_0000001_0000004_v{minor:07d}",
                              f"delta_0000001_0000004_v{minor:07d}"]
    # a minor compaction keeps every write id: time travel survives the cleaning too
    assert {w: t.to_arrow(as_of=w).num_rows for w in range(1, 5)} == history


def test_aborted_writes_are_removed_and_forgotten(wh: Warehouse) -> None:
    t = new_table(wh)
    inserts(t, 2)
    first = aborted_write(wh, TABLE, make_rows([100, 101], dt="b"))
    second = aborted_write(wh, TABLE, delete="id = 0")
    assert t.snapshot().aborted_write_ids == (first, second)
    before = read_exact(t)
    report = Cleaner(wh, retention_seconds=0).run()
    assert sorted(os.path.basename(p) for p in report.removed) == [
        f"delete_delta_{second:07d}_{second:07d}_0000", f"delta_{first:07d}_{first:07d}_0000"]
    assert report.forgotten == {TABLE: 2}
    assert t.snapshot().aborted_write_ids == ()
    assert children(os.path.join(t.location, "dt=a")) == [
        "delta_0000001_0000001_0000", "delta_0000002_0000002_0000"]
    assert children(os.path.join(t.location, "dt=b")) == []
    assert read_exact(t) == before
    assert Cleaner(wh, retention_seconds=0).run().removed == []


def test_aborted_write_ids_inside_a_compacted_delta_are_forgotten(wh: Warehouse) -> None:
    """Once a compaction dropped an aborted write's events, the cleaner forgets its id."""
    t = new_table(wh)
    inserts(t, 2)
    aborted = aborted_write(wh, TABLE, make_rows([100]))
    inserts(t, 1, start=2)
    before = read_exact(t)
    compacted_by_worker(wh, t, "minor")
    report = Cleaner(wh, retention_seconds=0).run()
    assert report.forgotten == {TABLE: 1}
    assert aborted not in t.snapshot().aborted_write_ids
    assert read_exact(t) == before


def test_staging_directories_of_finished_transactions_are_removed(wh: Warehouse) -> None:
    t = new_table(wh)
    committed = t.insert(make_rows([1])).txn_id
    aborted = wh.transaction()
    aborted.abort()
    running = wh.transaction()
    staging = Path(t.location) / STAGING_DIR
    for txn in (committed, aborted.txn_id, running.txn_id):
        (staging / f"txn_{txn}" / "dt=a").mkdir(parents=True)
    (staging / "notes").mkdir()
    report = Cleaner(wh, retention_seconds=0).run()
    assert sorted(report.removed) == sorted(
        str(staging / f"txn_{txn}") for txn in (committed, aborted.txn_id))
    assert sorted(os.listdir(staging)) == ["notes", f"txn_{running.txn_id}"]
    running.commit()
    Cleaner(wh, retention_seconds=0).run()
    assert sorted(os.listdir(staging)) == ["notes"]


def test_cleaner_after_a_direct_compaction(wh: Warehouse) -> None:
    """``compact()`` called by hand records its compaction, so the cleaner finds it."""
    t = new_table(wh)
    inserts(t, 3)
    inserts(t, 2, dt="b")
    before = read_exact(t)
    result = compact(t, "major")
    assert [(c["partition"], c["state"], c["txn_id"]) for c in compactions(wh)] == [
        ("dt=a", "ready for cleaning", result.txn_id),
        ("dt=b", "ready for cleaning", result.txn_id)]
    report = Cleaner(wh, retention_seconds=0).run()
    assert len(report.removed) == 5
    assert children(os.path.join(t.location, "dt=a")) == [
        f"base_0000003_v{result.txn_id:07d}"]
    assert read_exact(t) == before


def test_retention_of_a_newer_compaction_holds_for_an_older_entry(wh: Warehouse) -> None:
    """Cleaning an older entry must not remove what a newer compaction of the same partition
    replaced before the newer one's retention has passed."""
    t = new_table(wh)
    inserts(t, 3)
    part = os.path.join(t.location, "dt=a")
    minor = compacted_by_worker(wh, t, "minor")
    time.sleep(1.0)
    inserts(t, 1, start=3)
    major = compacted_by_worker(wh, t)
    report = Cleaner(wh, retention_seconds=0.9).run()  # past for the first only
    assert report.removed == [] and report.waiting == [1, 2]
    Cleaner(wh, retention_seconds=0).run()
    assert children(part) == [f"base_0000004_v{major:07d}"]
    assert minor < major
