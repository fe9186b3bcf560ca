"""Writer processes for the tests of readers beside writers (imported by ``spawn`` children).

Each worker opens the warehouse itself, as another program would, reaches a chosen point of
its write, reports it on ``queue`` and holds there until the test sets ``go``; then it commits
and reports ``("ok", txn id, state)``, or ``("error", traceback)``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from table_workers import TABLE, Place, connect

import acidstore.engine.conflict_check
from acidstore import Table
from acidstore.read.keys import KeyArrays

#: how long a held worker waits for the test before giving up (the test failed by then)
HOLD_SECONDS = 120


def _write_then_commit(place: Place, write: Callable[[Table], object], reached: Any,
                       wait: Any, queue: Any, *, on_error: tuple[Any, ...] = ()) -> None:
    """``write`` in a transaction, report it open and set ``reached``, wait for ``wait``, then
    commit. An error is reported and sets ``reached`` and ``on_error``, so no test waits."""
    try:
        wh = connect(place)
        txn = wh.transaction()
        write(txn.table(TABLE))
        queue.put(("open", txn.txn_id))
        reached.set()
        wait.wait(HOLD_SECONDS)
        txn.commit()
        queue.put(("ok", txn.txn_id, txn.state))
        wh.close()
    except BaseException:
        queue.put(("error", traceback.format_exc()))
        for event in (reached, *on_error):
            event.set()


def _insert_update_delete(t: Table) -> None:
    t.insert(pa.table({"id": pa.array([100], pa.int64()), "name": ["new"],
                       "salary": pa.array([1], pa.int64()), "dt": ["d"]}))
    t.update("id = 3", {"salary": "0"})
    t.delete("id = 4")


def hold_open_transaction(place: Place, ready: Any, go: Any, queue: Any) -> None:
    """Insert, update and delete in one transaction, then hold it open (written, heartbeating,
    uncommitted) until ``go``; then commit."""
    _write_then_commit(place, _insert_update_delete, ready, go, queue)


def pause_in_commit_check(place: Place, wrote: Any, others_committed: Any, paused: Any,
                          go: Any, queue: Any) -> None:
    """Delete ``id = 1`` in a transaction, wait until the test has committed a delete of
    another row of the same partition (so the commit's conflict check must read that delete
    delta), then commit, pausing inside the check's first file read until ``go``.

    The pause wraps the real reader of delete deltas; nothing else is replaced."""
    real = acidstore.engine.conflict_check.directory_delete_keys  # type: ignore[attr-defined]

    def paused_read(fs: Any, directory: str) -> KeyArrays:
        if not paused.is_set():
            paused.set()
            go.wait(HOLD_SECONDS)
        return real(fs, directory)

    acidstore.engine.conflict_check.directory_delete_keys = paused_read  # type: ignore[attr-defined]
    _write_then_commit(place, lambda t: t.delete("id = 1"), wrote, others_committed, queue,
                       on_error=(paused,))
