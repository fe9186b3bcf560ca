"""Concurrent writers in real processes (``spawn``), each with its own warehouse handle.

- Writers updating *different rows of the same partition* (even of the same bucket) at the same
  time all commit: the conflict check compares ROW__IDs, which is finer than Hive's
  partition-level write-set check (spec §12.2).
- Writers updating *the same row* at the same time: exactly one commits, every other gets a
  ``WriteConflictError`` naming its own transaction, the winner's and the table/partition.
- Retrying on conflict loses no update and duplicates no row.
- Concurrent inserts never conflict.
- A process killed mid-transaction leaves nothing visible; once its heartbeat is older than
  the transaction timeout, the next metastore call aborts it.

Every check ends with the exact final table (through ``to_arrow`` and both readers).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from metastore_support import (
    place_fixture,  # noqa: F401  (the `place` fixture, parametrised over backends)
)
from process_support import CONTEXT, run_spawned
from table_workers import (
    TABLE,
    Place,
    change_then_commit,
    connect,
    die_before_single_insert_commits,
    die_mid_transaction,
    increment_with_retries,
    insert_batches,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.write.bucketing import bucket_ids
from compaction import Cleaner

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("salary", pa.int64()), pa.field("dt", pa.string())])
SEED: list[dict[str, Any]] = [{"id": i, "name": f"n{i}", "salary": 100 * i, "dt": "d"}
                              for i in range(8)]


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["name"], r["salary"], r["dt"]) for r in table.to_pylist())


def expected(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["name"], r["salary"], r["dt"]) for r in items)


def visible(t: Table) -> list[tuple[Any, ...]]:
    """The table's rows; both readers at the table's snapshot must return the same."""
    got = rows(t.to_arrow())
    snapshot = t.snapshot()
    for reader in ("vectorized", "merge"):
        direct = acidstore.read_directory(t.location, handle_of(t).info.schema, reader=reader,
                                          write_ids=snapshot)
        assert rows(direct.select(SCHEMA.names)) == got, reader
    return got


@pytest.fixture
def warehouse(place: Place) -> Iterator[tuple[Place, Warehouse, Table]]:
    wh = connect(place)
    t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=4)
    t.insert(pa.Table.from_pylist(SEED, schema=SCHEMA))
    yield place, wh, t
    wh.close()


def run_workers(target: Any, args: list[tuple[Any, ...]]) -> list[Any]:
    """The workers' results, by worker number (see process_support.run_spawned)."""
    return [result for _, _, result in run_spawned(target, args, deadline_seconds=90)]


def states(wh: Warehouse) -> dict[int, str]:
    shown = wh.show_transactions()
    return dict(zip(shown.column("txn_id").to_pylist(), shown.column("state").to_pylist(),
                    strict=True))


# --- disjoint rows of one partition ----------------------------------------------------------


def test_disjoint_rows_of_one_partition_all_commit(
        warehouse: tuple[Place, Warehouse, Table]) -> None:
    location, wh, t = warehouse
    workers = 4
    # the rows of different workers share buckets too: not even the bucket file separates them
    buckets = bucket_ids(pa.table({"id": pa.array(range(8), pa.int64())}), ["id"], 4).tolist()
    owners_per_bucket = {b: {i % workers for i in range(8) if buckets[i] == b} for b in buckets}
    assert any(len(owners) > 1 for owners in owners_per_bucket.values())

    outcomes = run_workers(change_then_commit, [
        (location, w, TABLE, f"id % {workers} = {w}", {"salary": f"salary + {1000 * (w + 1)}"})
        for w in range(workers)])
    assert [o[0] for o in outcomes] == ["committed"] * workers
    assert [o[2] for o in outcomes] == [2] * workers  # two rows each, all in partition dt=d
    assert visible(t) == expected([{**r, "salary": r["salary"] + 1000 * (r["id"] % workers + 1)}
                                   for r in SEED])
    history = t.history().to_pylist()
    assert [h["operation"] for h in history] == ["insert"] + ["update"] * workers
    assert {tuple(h["partitions"]) for h in history} == {("dt=d",)}
    assert states(wh) == {1: "committed", **{o[1]: "committed" for o in outcomes}}


# --- one row, many writers ----------------------------------------------------------------------


def test_same_row_exactly_one_writer_wins(warehouse: tuple[Place, Warehouse, Table]) -> None:
    location, wh, t = warehouse
    workers = 4
    outcomes = run_workers(change_then_commit, [
        (location, w, TABLE, "id = 3", {"salary": f"salary + {w + 1}", "name": f"'by{w}'"})
        for w in range(workers)])
    winners = [(w, o) for w, o in enumerate(outcomes) if o[0] == "committed"]
    losers = [(w, o) for w, o in enumerate(outcomes) if o[0] == "conflict"]
    assert len(winners) == 1 and len(losers) == workers - 1
    (winner, (_, winner_txn, _, _)), = winners
    for _, (_, loser_txn, updated, message) in losers:
        assert updated == 1
        assert message.startswith(f"write conflict on table db.t, partition dt=d: "
                                  f"transaction {winner_txn} committed first"), message
        assert re.search(
            rf"Hive: Aborting \[txnid:{loser_txn}\] due to a write conflict on db/t/dt=d "
            rf"committed by \[txnid:{winner_txn},\d+\] u/u$", message), message
    # the winner's update, and only it: no lost update, no duplicate row
    assert visible(t) == expected([
        {**r, "salary": r["salary"] + winner + 1, "name": f"by{winner}"} if r["id"] == 3 else r
        for r in SEED])
    assert len([r for r in t.to_arrow().to_pylist() if r["id"] == 3]) == 1
    shown = states(wh)
    assert shown[winner_txn] == "committed"
    assert all(shown[o[1]] == "aborted" for _, o in losers)
    assert wh.show_locks().num_rows == 0
    # the losers' files are gone; only the seed's and the winner's directories remain
    history = t.history().to_pylist()
    assert [h["txn_id"] for h in history] == [1, winner_txn]
    w = history[-1]["write_id"]
    assert sorted(p.name for p in (Path(t.location) / "dt=d").iterdir()) == [
        f"delete_delta_{w:07d}_{w:07d}_0000", "delta_0000001_0000001_0000",
        f"delta_{w:07d}_{w:07d}_0001"]  # the update's new rows: statement 1 (Hive 4)


def test_retrying_on_conflict_loses_no_update(warehouse: tuple[Place, Warehouse, Table]) -> None:
    location, wh, t = warehouse
    workers, times = 4, 5
    results = run_workers(increment_with_retries, [(location, w, 5, times)
                                                   for w in range(workers)])
    committed = [txn for txns, _ in results for txn in txns]
    assert len(committed) == len(set(committed)) == workers * times
    assert visible(t) == expected([{**r, "salary": r["salary"] + workers * times}
                                   if r["id"] == 5 else r for r in SEED])
    history = t.history().to_pylist()
    assert len(history) == 1 + workers * times
    assert sorted(h["txn_id"] for h in history[1:]) == sorted(committed)
    conflicts = sum(c for _, c in results)
    assert conflicts > 0  # the writers really contended (typically 20-40 retries in all)
    shown = states(wh)
    assert list(shown.values()).count("aborted") == conflicts
    assert list(shown.values()).count("committed") == 1 + workers * times


def test_update_and_delete_of_one_row_of_an_unpartitioned_table(
        warehouse: tuple[Place, Warehouse, Table]) -> None:
    """U/D and D/U conflict too (spec §12.2, newest Hive); an unpartitioned table is named
    without a partition."""
    location, wh, _ = warehouse
    plain = wh.create_table("db.plain", SCHEMA.remove(3))
    seed = [{k: v for k, v in r.items() if k != "dt"} for r in SEED]
    plain.insert(pa.Table.from_pylist(seed, schema=plain.schema))
    outcomes = run_workers(change_then_commit, [
        (location, 0, "db.plain", "id = 2", {"salary": "0"}),
        (location, 1, "db.plain", "id = 2", None),
        (location, 2, "db.plain", "id = 6", None),  # another row: no conflict
    ])
    assert outcomes[2][0] == "committed"
    first, second = outcomes[0], outcomes[1]
    assert sorted([first[0], second[0]]) == ["committed", "conflict"]
    winner, loser = (first, second) if first[0] == "committed" else (second, first)
    letters = "d/u" if loser is second else "u/d"
    assert re.search(
        rf"Hive: Aborting \[txnid:{loser[1]}\] due to a write conflict on db/plain committed "
        rf"by \[txnid:{winner[1]},\d+\] {letters}$", loser[3]), loser[3]
    left = sorted((r["id"], r["salary"]) for r in plain.to_arrow().to_pylist())
    if winner is first:  # the update won
        assert left == [(i, 0 if i == 2 else 100 * i) for i in range(8) if i != 6]
    else:
        assert left == [(i, 100 * i) for i in range(8) if i not in (2, 6)]


# --- inserts ------------------------------------------------------------------------------------


@pytest.mark.parametrize("explicit", [False, True])
def test_concurrent_inserts_never_conflict(warehouse: tuple[Place, Warehouse, Table],
                                           explicit: bool) -> None:
    location, wh, t = warehouse
    workers, batches, size = 4, 3, 5
    results = run_workers(insert_batches, [(location, w, batches, size, explicit)
                                           for w in range(workers)])
    assert all(len(txns) == batches for txns in results)
    new = [{"id": w * 1_000_000 + b * 1000 + i, "name": f"w{w}", "salary": b, "dt": "d"}
           for w in range(workers) for b in range(batches) for i in range(size)]
    assert visible(t) == expected(SEED + new)
    assert set(states(wh).values()) == {"committed"}
    assert t.history().num_rows == 1 + workers * batches
    if explicit:  # each round's transactions were all open together before any committed
        for txns in zip(*results, strict=True):
            assert len(set(txns)) == workers


# --- a writer dies -------------------------------------------------------------------------------


def _await_timeout_abort(wh: Warehouse, t: Table, txn: int, timeout: float) -> None:
    """Take snapshots until the metastore aborts the dead ``txn`` for want of heartbeats."""
    deadline = time.monotonic() + 4 * timeout
    while states(wh)[txn] == "open" and time.monotonic() < deadline:
        time.sleep(0.25)
        t.snapshot()
    assert states(wh)[txn] == "aborted"


def test_killed_writer_leaves_nothing_and_is_aborted_after_the_timeout(place: Place) -> None:
    timeout = 4.0
    location = place
    wh = connect(place, txn_timeout=timeout)
    t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=4)
    t.insert(pa.Table.from_pylist(SEED, schema=SCHEMA))
    before = visible(t)

    ready = CONTEXT.Event()
    reports = CONTEXT.Queue()
    child = CONTEXT.Process(target=die_mid_transaction, args=(location, timeout, ready, reports))
    child.start()
    assert ready.wait(timeout=60)
    status, _, payload = reports.get(timeout=30)
    assert status == "ok", payload
    dead_txn, dead_write_id = payload
    child.join(timeout=30)
    assert child.exitcode == 17  # it died by os._exit, before any commit or abort

    # it did write files (an insert in two partitions, statement 0; an update's delete
    # events, statement 1, and new rows, statement 2: Hive 4's split update)...
    written = sorted(str(p.relative_to(t.location)) for p in Path(t.location).glob("*/*")
                     if f"_{dead_write_id:07d}_" in p.name)
    assert written == [f"dt=d/delete_delta_{dead_write_id:07d}_{dead_write_id:07d}_0001",
                       f"dt=d/delta_{dead_write_id:07d}_{dead_write_id:07d}_0000",
                       f"dt=d/delta_{dead_write_id:07d}_{dead_write_id:07d}_0002",
                       f"dt=e/delta_{dead_write_id:07d}_{dead_write_id:07d}_0000"]
    # ...none of them visible, while the transaction is still open
    assert states(wh)[dead_txn] == "open"
    snapshot = t.snapshot()
    assert dead_write_id in snapshot.open_write_ids
    assert visible(t) == before
    assert set(wh.show_locks().column("txn_id").to_pylist()) == {dead_txn}

    # the open, dead transaction blocks nobody: the row it updated can be updated now
    t.update("id = 1", {"salary": "salary + 5"})
    after = expected([{**r, "salary": r["salary"] + 5} if r["id"] == 1 else r for r in SEED])
    assert visible(t) == after

    # once its heartbeat is older than the timeout, the next call that takes a snapshot
    # aborts it (with its locks), and its write id stays invisible as an aborted one
    _await_timeout_abort(wh, t, dead_txn, timeout)
    assert dead_write_id in t.snapshot().aborted_write_ids
    assert dead_txn not in wh.show_locks().column("txn_id").to_pylist()
    assert visible(t) == after
    # its directories are listed for the cleaner
    recorded = {d for c in wh.metastore.aborted_components(TABLE) for d in c.directories}
    assert set(written) <= recorded
    wh.close()
    assert os.path.isdir(t.location)


def test_a_single_insert_killed_before_its_commit_leaves_a_record_to_clean(
        place: Place) -> None:
    """A single-statement insert records its directories in the open of its transaction
    (``open_transaction(writes=...)``), not in calls of its own: killed after writing its
    files, it must still leave the cleaner a record of every directory, a new partition's
    included, and nothing visible."""
    timeout = 3.0
    wh = connect(place, txn_timeout=timeout)
    t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=4)
    t.insert(pa.Table.from_pylist(SEED, schema=SCHEMA))
    before = visible(t)
    reports = CONTEXT.Queue()
    child = CONTEXT.Process(target=die_before_single_insert_commits,
                            args=(place, timeout, reports))
    child.start()
    status, _, payload = reports.get(timeout=60)
    assert status == "ok", payload
    dead_txn, write_id, calls = payload
    child.join(timeout=30)
    assert child.exitcode == 17
    assert calls == {"allocate_write_id": 0, "record_write": 0}  # the open did both
    delta = f"delta_{write_id:07d}_{write_id:07d}_0000"
    written = sorted(str(p.relative_to(t.location)) for p in Path(t.location).glob("*/*")
                     if p.name == delta)
    assert written == [f"dt=d/{delta}", f"dt=new/{delta}"]
    assert visible(t) == before
    _await_timeout_abort(wh, t, dead_txn, timeout)
    recorded = {d for c in wh.metastore.aborted_components(TABLE) for d in c.directories}
    assert set(written) == recorded
    Cleaner(wh, retention_seconds=0).run()
    assert not (Path(t.location) / "dt=new").exists()
    assert not (Path(t.location) / "dt=d" / delta).exists()
    assert visible(t) == before
    wh.close()
