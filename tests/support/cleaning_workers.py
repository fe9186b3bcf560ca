"""Processes that die at a chosen point of a compaction, an overwrite, a write or a cleaner
pass (imported by ``spawn`` children).

The child rebinds one function *in its own process* so that the process ends with
``os._exit(DIED)`` there (no ``finally``, no abort, no bookkeeping after), then runs the real
operation; production code has no test hooks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from compaction_support import TABLE, make_rows

import acidstore
import compaction.cleaner
import compaction.worker
from acidstore.engine.transaction import TransactionCore
from acidstore.metastore import SqliteMetastore
from compaction import Cleaner, Worker, compact

DIED = 9

#: point -> what the process was doing when it died
POINTS = {
    "compact: recorded, not committed": "compact",
    "compact: committed, queue entry not moved on": "compact",
    "compact without a queue record: committed": "compact unrecorded",
    "worker: committed, queue entry not moved on": "worker",
    "overwrite: committed": "overwrite",
    "update: files written, not committed": "update",
    "cleaner: marked the partition, removed nothing": "cleaner",
    "cleaner: removed one directory": "cleaner",
}


def _die(*args: Any, **kwargs: Any) -> Any:
    os._exit(DIED)


def _then_die(real: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        os._exit(DIED)
    return wrapper


def _rebind(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    real = getattr(owner, name)
    assert callable(real)
    setattr(owner, name, make(real))


def die_at(location: str, point: str, txn_timeout: float, stale_seconds: float) -> None:
    """Run the operation of ``point`` on the warehouse at ``location``; die at ``point``.
    The dead process's txns time out after its own ``txn_timeout``, and a queue entry it
    claimed goes stale after its own ``stale_seconds`` (whoever looks at them later)."""
    if point == "compact: recorded, not committed":  # the entry names an open txn
        _rebind(TransactionCore, "commit", lambda real: _die)
    elif point == "compact: committed, queue entry not moved on":
        _rebind(SqliteMetastore, "compaction_compacted", lambda real: _die)
    elif point in ("compact without a queue record: committed",
                   "overwrite: committed"):  # dies right after the commit returned
        _rebind(TransactionCore, "commit", _then_die)
    elif point == "worker: committed, queue entry not moved on":
        _rebind(compaction.worker, "compact", _then_die)
    elif point == "update: files written, not committed":
        _rebind(TransactionCore, "commit", lambda real: _die)
    elif point == "cleaner: marked the partition, removed nothing":
        _rebind(SqliteMetastore, "begin_cleaning", _then_die)
    elif point == "cleaner: removed one directory":
        _rebind(compaction.cleaner, "_remove", _then_die)
    else:
        raise ValueError(point)
    wh = acidstore.connect(location, txn_timeout=txn_timeout)
    t = wh.table(TABLE)
    what = POINTS[point]
    if what == "compact":
        compact(t, "major")
    elif what == "compact unrecorded":
        compact(t, "major", record=False)
    elif what == "worker":
        assert wh.metastore.enqueue_compaction(TABLE, "dt=a", "major", "test")
        Worker(wh, stale_seconds=stale_seconds).run()
    elif what == "overwrite":
        t.insert_overwrite(make_rows(range(50, 53)))
    elif what == "update":
        t.update("id = 1", {"name": "'changed'"})
    else:
        Cleaner(wh, retention_seconds=0).run()
    os._exit(0)  # the point was never reached: the parent sees exit code 0, not DIED
