"""Worker functions for the process-level table tests (imported by ``spawn`` children).

They live outside the test module because a ``spawn`` child re-imports its target by module
name. Each worker opens the warehouse itself, as a separate program would, and reports through a
queue: ``("ok", worker, result)`` or ``("error", worker, traceback)``, so that a failure in a
child fails the test in the parent instead of vanishing. On error a worker aborts the barrier so
that its peers stop waiting at once.
"""

from __future__ import annotations

import os
import time
import traceback
from typing import Any

import pyarrow as pa

import acidstore
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import WriteConflictError

TABLE = "db.t"


#: a warehouse directory (SQLite metastore inside), or (directory, metastore URL)
Place = str | tuple[str, str]


def connect(place: Place, **options: Any) -> acidstore.Warehouse:
    """Open the warehouse as a separate program would: its own metastore connection."""
    if isinstance(place, tuple):
        return acidstore.connect(place[0], metastore=place[1], **options)
    return acidstore.connect(place, **options)


def _report_error(worker: int, barrier: Any, queue: Any) -> None:
    barrier.abort()
    queue.put(("error", worker, traceback.format_exc()))


def change_then_commit(location: Place, worker: int, table: str, predicate: str,
                       assignments: dict[str, str] | None, barrier: Any, queue: Any) -> None:
    """Open a transaction and update (or, without ``assignments``, delete); wait until every
    peer has done the same (so all snapshots predate all commits); commit. Reports
    ("committed" | "conflict", txn id, rows changed, error text)."""
    try:
        wh = connect(location)
        txn = wh.transaction()
        bound = txn.table(table)
        if assignments is None:
            changed = bound.delete(predicate).rows_deleted
        else:
            changed = bound.update(predicate, assignments).rows_updated
        barrier.wait(timeout=60)
        try:
            txn.commit()
            outcome = ("committed", txn.txn_id, changed, "")
        except WriteConflictError as exc:
            outcome = ("conflict", txn.txn_id, changed, str(exc))
        assert txn.state == outcome[0].replace("conflict", "aborted")
        wh.close()
        queue.put(("ok", worker, outcome))
    except BaseException:
        _report_error(worker, barrier, queue)


def increment_with_retries(location: Place, worker: int, row_id: int, times: int,
                           barrier: Any, queue: Any) -> None:
    """``times`` implicit-transaction increments of one row, each retried on conflict (the
    textbook optimistic loop). Reports (committed txn ids, number of conflicts seen)."""
    try:
        wh = connect(location)
        t = wh.table(TABLE)
        barrier.wait(timeout=60)
        committed: list[int] = []
        conflicts = 0
        while len(committed) < times:
            try:
                result = t.update(f"id = {row_id}", {"salary": "salary + 1"})
            except WriteConflictError:
                conflicts += 1
                continue
            assert result.rows_updated == 1 and result.committed
            committed.append(result.txn_id)
        wh.close()
        queue.put(("ok", worker, (committed, conflicts)))
    except BaseException:
        _report_error(worker, barrier, queue)


def insert_batches(location: Place, worker: int, batches: int, rows: int, explicit: bool,
                   barrier: Any, queue: Any) -> None:
    """Insert ``batches`` batches of ``rows`` rows into one partition, all workers at once;
    with ``explicit``, each in a transaction that commits only once every peer has written."""
    try:
        wh = connect(location)
        t = wh.table(TABLE)
        barrier.wait(timeout=60)
        done: list[int] = []
        for b in range(batches):
            ids = [worker * 1_000_000 + b * 1000 + i for i in range(rows)]
            data = pa.table({"id": pa.array(ids, pa.int64()),
                             "name": [f"w{worker}" for _ in ids],
                             "salary": pa.array([b] * rows, pa.int64()),
                             "dt": ["d"] * rows})
            if explicit:
                with wh.transaction() as txn:
                    txn.table(TABLE).insert(data)
                    barrier.wait(timeout=60)
                done.append(txn.txn_id)
            else:
                done.append(t.insert(data).txn_id)
        wh.close()
        queue.put(("ok", worker, done))
    except BaseException:
        _report_error(worker, barrier, queue)


def die_mid_transaction(location: Place, txn_timeout: float, ready: Any, queue: Any) -> None:
    """Write an insert and an update in one transaction, say so, and die before committing
    (``os._exit``: no ``finally``, no abort, no more heartbeats)."""
    try:
        wh = connect(location, txn_timeout=txn_timeout)
        txn = wh.transaction()
        bound = txn.table(TABLE)
        inserted = bound.insert(pa.table({"id": pa.array([900, 901], pa.int64()),
                                          "name": ["ghost", "ghost"],
                                          "salary": pa.array([1, 2], pa.int64()),
                                          "dt": ["d", "e"]}))
        bound.update("id = 1", {"salary": "-1"})
        queue.put(("ok", 0, (txn.txn_id, inserted.write_id)))
        ready.set()
        time.sleep(0.2)  # let the queue's feeder thread flush the report
    except BaseException:
        queue.put(("error", 0, traceback.format_exc()))
        ready.set()
    os._exit(17)


def insert_or_overwrite_loop(location: Place, worker: int, table: str, overwrite: bool,
                             count: int, barrier: Any, queue: Any) -> None:
    """``count`` writes of fresh ids (``worker * 100_000 + n``), each its own transaction:
    INSERT OVERWRITEs of one row when ``overwrite``, else inserts of two rows. A slow write
    (the pause between taking the write id and committing) widens the race on purpose.
    Reports [(ids, txn id, write id or None when refused by a conflict)]."""
    try:
        wh = connect(location)
        barrier.wait(timeout=60)
        log: list[tuple[list[int], int, int | None]] = []
        for n in range(count):
            first = worker * 100_000 + 10 * n
            ids = [first] if overwrite else [first, first + 1]
            txn = wh.transaction()
            bound = txn.table(table)
            rows = pa.table({"id": pa.array(ids, pa.int64())})
            result = bound.insert_overwrite(rows) if overwrite else bound.insert(rows)
            time.sleep(0 if overwrite else 0.02)
            try:
                txn.commit()
                log.append((ids, txn.txn_id, result.write_id))
            except WriteConflictError:
                assert txn.state == "aborted"
                log.append((ids, txn.txn_id, None))
        wh.close()
        queue.put(("ok", worker, log))
    except BaseException:
        _report_error(worker, barrier, queue)


def die_before_single_insert_commits(location: Place, txn_timeout: float, queue: Any) -> None:
    """``t.insert`` outside an explicit transaction (its open allocates and records the write),
    dying when the commit starts, after every file is written; reports the txn id, write id
    and how many separate allocate/record calls the insert made (the open makes both)."""
    from acidstore.metastore.sql_store import SqlMetastore

    calls = {"allocate_write_id": 0, "record_write": 0}
    for name in calls:
        real = getattr(SqlMetastore, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _real(*args, **kwargs)

        setattr(SqlMetastore, name, counted)

    def die(txn: TransactionCore) -> None:
        write_id = txn.write_id(TABLE)
        queue.put(("ok", 0, (txn.txn_id, write_id, dict(calls))))
        time.sleep(0.2)  # let the queue's feeder thread flush the report
        os._exit(17)

    try:
        wh = connect(location, txn_timeout=txn_timeout)
        TransactionCore.commit = die  # type: ignore[method-assign,assignment]
        wh.table(TABLE).insert(pa.table({"id": pa.array([900, 901], pa.int64()),
                                         "name": ["ghost", "ghost"],
                                         "salary": pa.array([1, 2], pa.int64()),
                                         "dt": ["d", "new"]}))
    except BaseException:
        queue.put(("error", 0, traceback.format_exc()))
    os._exit(18)


def hold_then_commit(location: Place, txn_timeout: float, hold_seconds: float,
                     ready: Any, queue: Any) -> None:
    """A writer whose warehouse has a long ``txn_timeout`` (so it heartbeats only every
    ``txn_timeout / 2``): insert in a transaction, keep it open ``hold_seconds``, commit.
    Reports ("ok", 0, commit seq) or ("error", 0, traceback)."""
    try:
        wh = connect(location, txn_timeout=txn_timeout)
        with wh.transaction() as txn:
            txn.table(TABLE).insert(pa.table({"id": pa.array([700], pa.int64()),
                                              "name": ["slow"], "salary": pa.array([7]),
                                              "dt": ["d"]}))
            ready.set()
            time.sleep(hold_seconds)
        queue.put(("ok", 0, txn.txn_id))
        wh.close()
    except BaseException:
        queue.put(("error", 0, traceback.format_exc()))
        ready.set()


def open_then_read(location: Place, queue: Any) -> None:
    """Open a transaction with an insert planned on ``TABLE`` (one call, whose snapshot is
    taken before its write id is allocated) and read the table in it; abort. Reports
    ("ok", 0, "opening") first, then ("ok", 0, ids read) or ("error", 0, traceback)."""
    from acidstore.metastore import PlannedWrite

    try:
        wh = connect(location)
        queue.put(("ok", 0, "opening"))
        txn = TransactionCore.begin(core_of(wh),
                                    writes=[PlannedWrite(TABLE, ("",), "insert")])
        try:
            read = TableHandle.open(core_of(wh), TABLE, txn).read_table(
                columns=["id"]).column("id").to_pylist()
            queue.put(("ok", 0, sorted(read)))
        finally:
            txn.abort()
        wh.close()
    except BaseException:
        queue.put(("error", 0, traceback.format_exc()))
