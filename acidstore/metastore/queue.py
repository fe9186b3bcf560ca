"""The compaction queue's value objects (Hive's COMPACTION_QUEUE / COMPLETED_COMPACTIONS).

An entry moves ``initiated -> working -> ready for cleaning -> succeeded``; ``failed`` and
``refused`` end a run without output; ``did not initiate`` records an initiator decision that
found nothing to do, so ``show_compactions`` explains why a partition was left alone. The queue
lives in the metastore so that initiators, workers and cleaners in different processes (or on
different machines) coordinate through it, and a dead worker's claim can be taken over.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__all__ = ["ACTIVE_STATES", "CompactionCommit", "CompactionInfo", "CompactionKind",
           "CompactionState"]

CompactionKind = Literal["minor", "major"]
CompactionState = Literal["initiated", "working", "ready for cleaning", "succeeded", "failed",
                          "did not initiate", "refused"]
#: an entry in these states blocks another compaction of the same partition
ACTIVE_STATES: tuple[CompactionState, ...] = ("initiated", "working")


@dataclass(frozen=True)
class CompactionInfo:
    """One queue entry. ``txn_id`` is the compaction's transaction (its output directories
    carry ``_v<txn_id>``); ``highest_write_id`` the compactor list's watermark;
    ``next_txn_id`` the first txn id after the compaction committed (the cleaner waits until
    every txn below it has finished); ``compacted`` the commit time (for retention)."""

    compaction_id: int
    table: str
    partition: str
    kind: CompactionKind
    state: CompactionState
    reason: str
    enqueued: datetime
    worker: str | None = None
    started: datetime | None = None
    heartbeat: datetime | None = None
    txn_id: int | None = None
    highest_write_id: int | None = None
    compactor_write_ids: str | None = None
    next_txn_id: int | None = None
    compacted: datetime | None = None
    finished: datetime | None = None
    error: str | None = None
    attempts: int = 0
    cleaning_started: datetime | None = None


@dataclass(frozen=True)
class CompactionCommit:
    """A committed compaction as time travel needs it: a read ``as_of`` a point before
    ``commit_seq`` may ignore its output (the ``_v<txn_id>`` suffix) and read what it replaced,
    but only while ``cleaning`` is false: once the cleaner has started on its partition, what
    it replaced may be partly gone."""

    txn_id: int
    partition: str
    commit_seq: int
    committed: datetime
    cleaning: bool
