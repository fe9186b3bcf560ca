"""Worker functions for the process-level metastore tests (imported by spawned children).

They live in their own module, not in the test file, because a ``spawn`` child re-imports the
target function by module name and must not re-run test collection. Each worker opens its own
metastore from a picklable ``(backend, target)`` spec, exactly as a separate program would, and
reports through a queue: a result, or the repr of whatever it raised (so that a
"database is locked" in a child fails the test in the parent instead of vanishing).
"""

from __future__ import annotations

import time
import traceback
from typing import Any

import pyarrow as pa

from acidstore.errors import TableExistsError, WriteConflictError
from acidstore.metastore import (
    Metastore,
    NewTable,
    PlannedWrite,
    SqliteMetastore,
    TxnInfo,
    WriteComponent,
)
from acidstore.metastore.postgres import PostgresMetastore

BackendSpec = tuple[str, str]


def open_metastore(spec: BackendSpec, **options: Any) -> Metastore:
    """The one place that knows how to open each backend from a spec."""
    kind, target = spec
    if kind == "sqlite":
        return SqliteMetastore(target, **options)
    if kind == "postgresql":
        return PostgresMetastore(target, **options)
    raise ValueError(f"unknown metastore backend {kind!r}")


def allocate_and_commit(spec: BackendSpec, table: str, worker: int, cycles: int,
                        barrier: Any, queue: Any) -> None:
    """``cycles`` times: open a txn, allocate a write id, record and commit an insert."""
    try:
        metastore = open_metastore(spec)
        barrier.wait(timeout=120)  # all workers hammer the metastore at the same moment
        done: list[tuple[int, int, int]] = []
        for _ in range(cycles):
            txn = metastore.open_transaction(user=f"worker{worker}", host="test")
            write_id = metastore.allocate_write_id(txn.txn_id, table)
            component = WriteComponent(table, "", "insert", write_id,
                                       (f"delta_{write_id:07d}_{write_id:07d}_0000",),
                                       rows_inserted=1, files=1, bytes=10)
            metastore.record_write(txn.txn_id, component)
            # A real writer writes its files here. Without this pause the lock holder starts
            # its next txn before the peers wake from SQLite's busy back-off, and the workers
            # would run one after the other instead of with overlapping transactions.
            time.sleep(0.003)
            info = metastore.commit(txn.txn_id, [component])
            done.append((txn.txn_id, write_id, info.commit_seq))
        metastore.close()
        queue.put(("ok", worker, done))
    except BaseException:
        barrier.abort()
        queue.put(("error", worker, traceback.format_exc()))


def open_delete(metastore: Metastore, table: str, user: str) -> tuple[TxnInfo, WriteComponent]:
    """A transaction that deleted one row of ``table``'s unpartitioned root: opened, its
    write id allocated and its delete delta recorded, not yet committed."""
    txn = metastore.open_transaction(user=user, host="test")
    write_id = metastore.allocate_write_id(txn.txn_id, table)
    component = WriteComponent(table, "", "delete", write_id,
                               (f"delete_delta_{write_id:07d}_{write_id:07d}_0000",),
                               rows_deleted=1)
    metastore.record_write(txn.txn_id, component)
    return txn, component


def race_deletes(spec: BackendSpec, table: str, worker: int, rounds: int,
                 barrier: Any, queue: Any) -> None:
    """Each round: open, allocate, record a delete; wait until the peer has done the same (so
    both snapshots predate both commits); commit; wait for the peer before the next round."""
    try:
        metastore = open_metastore(spec)
        outcomes: list[tuple[str, int, int, str]] = []
        for _ in range(rounds):
            txn, component = open_delete(metastore, table, f"racer{worker}")
            barrier.wait(timeout=120)
            try:
                info = metastore.commit(txn.txn_id, [component])
                outcomes.append(("committed", txn.txn_id, info.commit_seq, ""))
            except WriteConflictError as exc:
                outcomes.append(("conflict", txn.txn_id, -1, str(exc)))
            barrier.wait(timeout=120)
        metastore.close()
        queue.put(("ok", worker, outcomes))
    except BaseException:
        barrier.abort()  # release the peer instead of leaving it waiting for 120 s
        queue.put(("error", worker, traceback.format_exc()))


def open_and_create(spec: BackendSpec, worker: int, barrier: Any, queue: Any) -> None:
    """Open a store that may not exist yet at the same moment as the peers, then create one
    table of its own and race the peers for a shared one."""
    try:
        barrier.wait(timeout=120)
        metastore = open_metastore(spec)
        created: list[str] = []
        for name in (f"t{worker}", "shared"):
            try:
                metastore.create_table(NewTable(
                    "default", name, pa.schema([("id", pa.int64())]), pa.schema([]), (), 0, {},
                    f"/warehouse/{name}"))
                created.append(name)
            except TableExistsError:
                pass
        metastore.close()
        queue.put(("ok", worker, created))
    except BaseException:
        barrier.abort()
        queue.put(("error", worker, traceback.format_exc()))


def open_and_go_silent(spec: BackendSpec, table: str, timeout_seconds: float,
                       queue: Any) -> None:
    """A client with ``timeout_seconds`` of its own opens a txn and a batch of two, each
    with an insert planned on ``table``, reports their ids and exits without a heartbeat."""
    try:
        metastore = open_metastore(spec, timeout_seconds=timeout_seconds)
        plan = [PlannedWrite(table, ("",), "insert")]
        single = metastore.open_transaction(user="silent", host="test", writes=plan)
        batch = metastore.open_transaction_batch(2, user="silent", host="test", writes=plan)
        metastore.close()
        queue.put(("ok", [single.txn_id, *(txn.txn_id for txn in batch)]))
    except BaseException:
        queue.put(("error", traceback.format_exc()))
