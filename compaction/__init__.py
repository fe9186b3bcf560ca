"""Compaction for acidstore tables: compactors, initiator, worker, cleaner, scheduled jobs.

``compact(table, "minor" | "major")`` rewrites a table's deltas now; ``Initiator``,
``Worker`` and ``Cleaner`` are the three services Hive runs, each one pass per ``run()``;
``run_once`` / ``run_every`` chain them (``acidstore compact --auto``). Depends on acidstore's
layers L1-L4; nothing in acidstore imports it (except the CLI).
"""

from __future__ import annotations

from compaction.cleaner import Cleaner, CleanerReport
from compaction.compactor import CompactionResult, PartitionResult, compact
from compaction.initiator import Initiator, Thresholds
from compaction.scheduler import PassSummary, run_every, run_once
from compaction.worker import Worker

__all__ = ["Cleaner", "CleanerReport", "CompactionResult", "Initiator", "PartitionResult",
           "PassSummary", "Thresholds", "Worker", "compact", "run_every", "run_once"]
