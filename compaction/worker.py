"""The Worker (spec §10.2): claims queued compactions and runs them, surviving crashes.

A claim is kept alive by heartbeats; a worker that dies stops heartbeating and, after
``stale_seconds``, any worker takes the entry over. The new worker first ends the dead one's
attempt: it aborts that compaction transaction (still open, or already reaped) and removes its
``_v<txn>`` output, which no reader ever used; if the attempt had in fact committed, the
entry simply moves on to cleaning.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import TYPE_CHECKING

from acidstore.config import COMPACTION_STALE_SECONDS
from acidstore.engine.core import HasCore, WarehouseCore, core_of
from acidstore.engine.handle import TableHandle
from acidstore.errors import AcidStoreError, TableNotFoundError, TransactionStateError
from acidstore.format.writeids import ValidCompactorWriteIdList
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import CompactionInfo
from compaction.compactor import Engine, Progress, compact, partition_dirs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Worker"]


class _ClaimHeartbeat:
    """Heartbeats a queue claim from a thread while the compaction runs."""

    def __init__(self, warehouse: WarehouseCore, entry: CompactionInfo, worker: str,
                 interval: float) -> None:
        self._wh = warehouse
        self._entry = entry
        self._worker = worker
        self._stop = threading.Event()
        self.lost: AcidStoreError | None = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        args=(interval,), name="acidstore-compaction-heartbeat")
        self._thread.start()

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self._wh.metastore.heartbeat_compaction(self._entry.compaction_id, self._worker)
            except AcidStoreError as exc:
                self.lost = exc
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@storage_boundary
class Worker:
    """``Worker(wh).run()`` drains the queue once; the scheduled job repeats it."""

    def __init__(self, warehouse: WarehouseCore | HasCore, *, name: str | None = None,
                 engine: Engine = "local", spark: SparkSession | None = None,
                 stale_seconds: float = COMPACTION_STALE_SECONDS,
                 progress: Progress | None = None) -> None:
        self._wh = core_of(warehouse)
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-{threading.get_ident()}"
        self._engine: Engine = engine
        self._spark = spark
        self._stale = stale_seconds
        self._progress = progress

    def run(self, max_entries: int | None = None) -> list[CompactionInfo]:
        """Claim and run entries until the queue has none left; returns them as they ended."""
        done: list[CompactionInfo] = []
        while max_entries is None or len(done) < max_entries:
            entry = self._wh.metastore.claim_compaction(self.name, self._stale)
            if entry is None:
                break
            done.append(self.process(entry))
        return done

    def _end_previous_attempt(self, entry: CompactionInfo, table: TableHandle) -> bool:
        """Abort a dead worker's attempt and remove its output; True if it had committed."""
        if entry.txn_id is None:
            return False
        try:
            self._wh.metastore.abort(entry.txn_id, "compaction worker died")
        except TransactionStateError:
            return True  # committed before the worker died: nothing to redo
        suffix = f"_v{entry.txn_id:07d}"
        for relative, directory in partition_dirs(table, entry.partition or None):
            del relative
            for item in afs.list_dir(table.filesystem, directory):
                if item.is_dir and item.name.endswith(suffix):
                    with contextlib.suppress(OSError):
                        table.filesystem.delete_dir(afs.join(directory, item.name))
        return False

    def process(self, entry: CompactionInfo) -> CompactionInfo:
        """Run one claimed entry to its next state."""
        metastore = self._wh.metastore
        try:
            table = TableHandle.open(self._wh, entry.table)
        except TableNotFoundError:
            metastore.finish_compaction(entry.compaction_id, "failed", "the table was dropped")
            return self._final(entry)
        beat = _ClaimHeartbeat(self._wh, entry, self.name, max(self._stale / 4, 0.05))
        try:
            if self._end_previous_attempt(entry, table):
                metastore.compaction_compacted(entry.compaction_id, self.name)
                return self._final(entry)

            def started(txn_id: int, write_ids: ValidCompactorWriteIdList) -> None:
                metastore.heartbeat_compaction(entry.compaction_id, self.name, txn_id=txn_id,
                                               compactor_write_ids=write_ids)

            result = compact(table, entry.kind, entry.partition or None, self._engine,
                             spark=self._spark, progress=self._progress, on_start=started,
                             record=False)
            if result.needs_cleaning:
                metastore.compaction_compacted(entry.compaction_id, self.name)
            else:
                reasons = "; ".join(p.reason for p in result.partitions if p.reason)
                metastore.finish_compaction(
                    entry.compaction_id, "refused",
                    f"None of the compaction thresholds met, compaction request is refused! "
                    f"({reasons})")
        except AcidStoreError as exc:
            with contextlib.suppress(AcidStoreError):
                metastore.finish_compaction(entry.compaction_id, "failed",
                                            f"{type(exc).__name__}: {exc}")
        finally:
            beat.stop()
        return self._final(entry)

    def _final(self, entry: CompactionInfo) -> CompactionInfo:
        for info in self._wh.metastore.show_compactions():
            if info.compaction_id == entry.compaction_id:
                return info
        return entry
