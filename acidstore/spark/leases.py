"""Snapshot leases of Spark reads, released when the read is over instead of an hour later.

A lease keeps the cleaner from deleting what a reader's snapshot selects. A Spark read's
snapshot is taken where the read is planned, but its files are read later, by tasks, and
PySpark tells a Python data source neither when a query ends nor when a DataFrame is dropped.
So the ends are where the work is:

- ``format("acidstore")`` reads: planning takes one lease per read task (the planning lease,
  taken before anything was listed, is released once they exist). Each task checks its lease
  when it starts (when an earlier action on the same DataFrame already released it, it takes a
  new one on the same snapshot: PySpark reuses a DataFrame's planned partitions) and releases
  it when it has read everything. A task that fails keeps its lease for Spark's retry; a task
  that never runs (``show()``/``limit`` read only some) keeps it until ``leaseSeconds`` pass.
  Tasks that cannot reach the metastore (a SQLite file on another machine's disk) skip all
  this, and their leases expire.
- ``AcidTable.toDF()``: the driver process takes the lease (its DataFrame may be planned any
  time later), holds it here, and releases it at ``SparkSession.stop()`` or process exit.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

from acidstore.api.warehouse import Warehouse
from acidstore.engine.handle import TableHandle
from acidstore.errors import AcidStoreError, MetastoreError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.metastore.task_guard import permit_in_task
from acidstore.spark.options import Target, open_target

__all__ = ["hold", "held", "leased_plan", "release_at_exit", "release_held", "task_lease"]

T = TypeVar("T")

_lock = threading.Lock()
_held: dict[Target, set[int]] = {}
_at_exit = False


def hold(target: Target, lease_id: int) -> None:
    """Keep ``lease_id`` (taken in this driver process) until the session stops."""
    with _lock:
        _held.setdefault(target, set()).add(lease_id)


def held() -> dict[Target, set[int]]:
    """The leases this process holds, by table (a copy)."""
    with _lock:
        return {t: set(ids) for t, ids in _held.items()}


def release_held() -> int:
    """Release every lease this process holds; returns how many. Best effort: a warehouse
    that is gone or unreachable keeps them until they expire."""
    with _lock:
        taken = dict(_held)
        _held.clear()
    released = 0
    for target, ids in taken.items():
        try:
            wh, _ = open_target(target)
        except (AcidStoreError, OSError):
            continue
        try:
            for lease in sorted(ids):
                with contextlib.suppress(MetastoreError, OSError):
                    wh.metastore.release_lease(lease)
                    released += 1
        finally:
            wh.close()
    return released


def release_at_exit() -> None:
    """Release the held leases when the process exits (registered once)."""
    global _at_exit  # noqa: PLW0603  (one process-wide registration)
    with _lock:
        if _at_exit:
            return
        _at_exit = True
    atexit.register(release_held)


def _reachable(target: Target) -> Warehouse | None:
    """The target's warehouse, if this process can open it (an executor may not)."""
    try:
        with permit_in_task("a read task's snapshot lease"):
            wh, _ = open_target(target)
    except (AcidStoreError, OSError):
        return None
    return wh


@contextmanager
def task_lease(target: Target | None, table: str, lease: int | None,
               snapshot: tuple[ValidTxnList, ValidWriteIdList], ttl_seconds: float
               ) -> Iterator[None]:
    """Hold a read task's lease while the body reads (on an executor); release it when the
    body finished without an error. See the module docstring."""
    wh = None if target is None or lease is None else _reachable(target)
    if wh is None:
        yield
        return
    try:
        try:
            if lease not in {held.lease_id for held in wh.metastore.active_leases(table)}:
                # released by an earlier action on this DataFrame (or expired): lease the
                # same snapshot again while this task reads it
                lease = wh.metastore.acquire_lease(table, snapshot[0], snapshot[1],
                                                   ttl_seconds)
        except (AcidStoreError, OSError):
            lease = None  # out of reach now: read, and let the planned lease expire
        yield
        if lease is not None:
            with contextlib.suppress(AcidStoreError, OSError):
                wh.metastore.release_lease(lease)
    finally:
        wh.close()


def leased_plan(table: TableHandle, as_of: int | datetime | None, ttl_seconds: float,
                plan: Callable[[tuple[ValidTxnList, ValidWriteIdList]], Sequence[T]]
                ) -> list[tuple[T, int]]:
    """The tasks ``plan`` makes of a fresh snapshot (``as_of`` a write id, or now), each with
    a lease of its own that the task releases when it has read (``task_lease``). The
    snapshot is leased before anything is listed, so nothing planned can be cleaned away;
    that planning lease goes once the tasks' leases hold the snapshot."""
    metastore = table.metastore
    txns, write_ids, planning = table.leased_snapshot(as_of, ttl_seconds=ttl_seconds)
    taken: list[int] = []
    try:
        tasks = plan((txns, write_ids))
        for _ in tasks:
            taken.append(metastore.acquire_lease(table.name, txns, write_ids, ttl_seconds))
    except BaseException:
        for lease in taken:
            metastore.release_lease(lease)
        raise
    finally:
        metastore.release_lease(planning)
    return list(zip(tasks, taken, strict=True))
