"""Worker functions of the idempotent-write tests (imported by ``spawn`` children): each is
one run of a job that writes its rows with an application id and a version, in a process of
its own, as a retried job would be. Reports go through a queue as in ``table_workers``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from table_workers import Place, _report_error, connect

from acidstore.errors import ConcurrentTransactionError

TABLE = "db.events"
APP = "nightly-load"


def job_rows(version: int) -> pa.Table:
    """The rows run ``version`` of the job writes (the same on every retry of that run)."""
    ids = [version * 100 + i for i in range(3)]
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [f"d{i % 2}" for i in ids]})


def outcome(error: ConcurrentTransactionError) -> tuple[Any, ...]:
    return ("conflict", error.txn_id, error.other_txn_id, error.table, error.app_id,
            error.partition, str(error))


def write_then_commit(location: Place, worker: int, version: int, barrier: Any,
                      queue: Any) -> None:
    """Write the run's rows in a transaction, wait until every peer has written too (both
    passed the early check), then commit. Reports ("committed", txn id, write id) or the
    ConcurrentTransactionError's fields, and the transaction's final state."""
    try:
        wh = connect(location)
        txn = wh.transaction()
        written = txn.table(TABLE).insert(job_rows(version), app_id=APP, version=version)
        assert not written.skipped and written.write_id is not None
        barrier.wait(timeout=60)
        try:
            txn.commit()
            report: tuple[Any, ...] = ("committed", txn.txn_id, written.write_id)
        except ConcurrentTransactionError as exc:
            report = outcome(exc)
        queue.put(("ok", worker, (report, txn.state)))
        wh.close()
    except BaseException:
        _report_error(worker, barrier, queue)


def run_job(location: Place, worker: int, version: int, barrier: Any, queue: Any) -> None:
    """One attempt of run ``version`` (an implicit transaction), all attempts at once.
    Reports ("committed" | "skipped", txn id) or the ConcurrentTransactionError's fields."""
    try:
        wh = connect(location)
        t = wh.table(TABLE)
        barrier.wait(timeout=60)
        try:
            result = t.insert(job_rows(version), app_id=APP, version=version)
            report: tuple[Any, ...] = ("skipped" if result.skipped else "committed",
                                       result.txn_id)
            assert result.committed != result.skipped
        except ConcurrentTransactionError as exc:
            report = outcome(exc)
        queue.put(("ok", worker, report))
        wh.close()
    except BaseException:
        _report_error(worker, barrier, queue)
