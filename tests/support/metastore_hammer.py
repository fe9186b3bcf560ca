"""Workers of the mixed-load snapshot test (``test_metastore_snapshots.py``), imported by
``spawn`` children: writers on tables of their own, writers racing deletes on one shared
table, and readers taking snapshots all the while. Each logs what it did with the moments
(``time.monotonic``, one clock for every process of the machine) its calls started and
returned, so the parent can check the snapshots against real-time order.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from metastore_workers import BackendSpec, open_delete, open_metastore

from acidstore.errors import WriteConflictError
from acidstore.metastore import PlannedWrite, WriteComponent

#: one finished txn: (txn id, table, write id, outcome, snapshot at open, commit started,
#: commit returned); outcome "committed", "aborted" or "conflict"
Done = tuple[int, str, int, str, str, float, float]


def _insert(table: str, write_id: int) -> WriteComponent:
    return WriteComponent(table, "", "insert", write_id,
                          (f"delta_{write_id:07d}_{write_id:07d}_0000",), rows_inserted=1,
                          files=1, bytes=10)


def own_table_writer(spec: BackendSpec, table: str, worker: int, cycles: int,
                     barrier: Any) -> list[Done]:
    """Inserts into its own table, cycling through the three ways a writer talks to the
    metastore: open with the planned write and commit (2 calls); open, allocate, record,
    heartbeat and commit (the explicit transaction's calls); open with the planned write and
    abort."""
    store = open_metastore(spec)
    barrier.wait(timeout=120)
    done: list[Done] = []
    for cycle in range(cycles):
        if cycle % 3 == 1:
            info = store.open_transaction(user=f"w{worker}", host="test")
            write_id = store.allocate_write_id(info.txn_id, table)
            store.record_write(info.txn_id, _insert(table, write_id))
            store.heartbeat(info.txn_id)
        else:
            info = store.open_transaction(user=f"w{worker}", host="test",
                                          writes=[PlannedWrite(table, ("",), "insert")])
            write_id = info.write_ids[table]
        began = time.monotonic()
        if cycle % 3 == 2:
            store.abort(info.txn_id, "test")
            outcome = "aborted"
        else:
            store.commit(info.txn_id, [_insert(table, write_id)])
            outcome = "committed"
        done.append((info.txn_id, table, write_id, outcome, str(info.snapshot), began,
                     time.monotonic()))
    store.close()
    return done


def shared_table_writer(spec: BackendSpec, table: str, worker: int, cycles: int,
                        barrier: Any) -> list[Done]:
    """Deletes on one partition of a table the peers delete from too: of two whose snapshots
    miss each other's commit, one must fail with ``WriteConflictError``. The pause stands for
    the writer's files and makes such overlaps common."""
    store = open_metastore(spec)
    barrier.wait(timeout=120)
    done: list[Done] = []
    for _ in range(cycles):
        info, deleted = open_delete(store, table, f"s{worker}")
        write_id = deleted.write_id
        time.sleep(0.01)
        began = time.monotonic()
        try:
            store.commit(info.txn_id, [deleted])
            outcome = "committed"
        except WriteConflictError:
            outcome = "conflict"
        done.append((info.txn_id, table, write_id, outcome, str(info.snapshot), began,
                     time.monotonic()))
    store.close()
    return done


def snapshot_reader(spec: BackendSpec, tables: list[str], worker: int, rounds: int,
                    barrier: Any) -> list[tuple[float, float, str, dict[str, str]]]:
    """Snapshots as a reader takes them: the txn list, then each table's write id list at it;
    logged as (asked, answered, snapshot, {table: write id list})."""
    store = open_metastore(spec)
    barrier.wait(timeout=120)
    seen: list[tuple[float, float, str, dict[str, str]]] = []
    for _ in range(rounds):
        asked = time.monotonic()
        snapshot = store.valid_txns()
        answered = time.monotonic()
        lists = {t: str(store.valid_write_ids(t, snapshot)) for t in tables}
        seen.append((asked, answered, str(snapshot), lists))
    store.close()
    return seen


def hammer(spec: BackendSpec, role: str, target: Any, worker: int, count: int,
           barrier: Any, queue: Any) -> None:
    """One entry point for ``run_spawned``, which starts every process with one function."""
    roles: dict[str, Callable[..., list[Any]]] = {
        "own": own_table_writer, "shared": shared_table_writer, "reader": snapshot_reader}
    try:
        queue.put(("ok", worker, roles[role](spec, target, worker, count, barrier)))
    except BaseException:
        barrier.abort()  # release the peers instead of leaving them waiting for 120 s
        queue.put(("error", worker, traceback.format_exc()))
