"""Worker functions of the streaming-ingest process tests (imported by ``spawn`` children): a
streaming writer and a reader beside it, each in a process of its own, as separate programs
would be. Reports go through a queue as in ``table_workers``."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
from table_workers import Place, _report_error, connect

TABLE = "db.stream"
APP = "ingest-1"
ROWS = 50  # rows per transaction


def version_rows(version: int) -> pa.Table:
    """The rows version ``version`` of the stream carries (the same on every replay)."""
    ids = pa.array(range(version * ROWS, (version + 1) * ROWS), pa.int64())
    return pa.table({"id": ids, "payload": pa.array(["x" * 40] * ROWS)})


def aborted_rows(version: int) -> pa.Table:
    """Rows of a transaction the writer aborts: negative ids, never to be seen."""
    return pa.table({"id": pa.array([-1 - version] * ROWS, pa.int64()),
                     "payload": pa.array(["aborted"] * ROWS)})


def ingest(place: Place, worker: int, until: int, batch_size: int, log_path: str,
           txn_timeout: float, abort_every: int, pause_after: int, barrier: Any,
           queue: Any) -> None:
    """Resume the stream after the table's last committed version and commit versions up
    to ``until`` (exclusive), logging each commit to ``log_path``. ``abort_every``: before
    each such version, a transaction whose rows are written and then aborted.
    ``pause_after``: after committing that version, begin the next, write its rows, log
    "paused" and wait to be killed (never commits). Reports the versions it committed."""
    try:
        wh = connect(place, txn_timeout=txn_timeout)
        barrier.wait(timeout=60)
        done = []
        with wh.streaming_connection(TABLE, app_id=APP, batch_size=batch_size) as conn, \
                open(log_path, "a") as log:
            last = conn.last_version
            for version in range(0 if last is None else last + 1, until):
                if abort_every and version % abort_every == 0:
                    conn.begin()
                    conn.write(aborted_rows(version))
                    conn.abort()
                conn.begin()
                conn.write(version_rows(version))
                assert not conn.commit(version=version).skipped
                done.append(version)
                print(version, file=log, flush=True)
                if version == pause_after:
                    conn.begin()
                    conn.write(version_rows(version + 1))
                    print("paused", file=log, flush=True)
                    time.sleep(600)  # killed here, mid-batch, with a transaction open
        queue.put(("ok", worker, done))
        wh.close()
    except BaseException:
        _report_error(worker, barrier, queue)


def read_until(place: Place, worker: int, final_rows: int, barrier: Any, queue: Any) -> None:
    """Read the table over and over while the writer runs, until it holds ``final_rows``.
    Every read must hold whole committed transactions only (each version's rows complete,
    no aborted rows) and never fewer than the read before. Reports how many reads ran and
    how many distinct row counts they saw."""
    try:
        wh = connect(place)
        barrier.wait(timeout=60)
        table = wh.table(TABLE)
        reads, seen, previous = 0, set(), 0
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            ids = table.to_arrow(columns=["id"]).column("id").to_pylist()
            reads += 1
            versions: dict[int, int] = {}
            for i in ids:
                assert i >= 0, f"an aborted transaction's row is visible: {i}"
                versions[i // ROWS] = versions.get(i // ROWS, 0) + 1
            assert all(n == ROWS for n in versions.values()), "a partial transaction"
            # one writer commits in version order: a snapshot holds a prefix of the stream
            assert sorted(versions) == list(range(len(versions)))
            assert len(ids) == len(set(ids)) >= previous
            previous = len(ids)
            seen.add(len(ids))
            if len(ids) == final_rows:
                break
        queue.put(("ok", worker, (reads, len(seen), previous)))
        wh.close()
    except BaseException:
        _report_error(worker, barrier, queue)


def writer_or_reader(place: Place, worker: int, until: int, log_path: str, barrier: Any,
                     queue: Any) -> None:
    """Worker 0 streams versions 0 to ``until`` in batches of 5, aborting a transaction
    before every third version; worker 1 reads beside it until all of them are in."""
    if worker == 0:
        ingest(place, worker, until, 5, log_path, 300.0, 3, -1, barrier, queue)
    else:
        read_until(place, worker, until * ROWS, barrier, queue)
