"""Scheduled compaction: initiator, worker and cleaner in one pass, once or on an interval.

``acidstore compact --auto`` runs one pass (for cron or an Airflow task) and exits; ``--every
5m`` keeps running passes. Progress goes to a ``Reporter`` (the CLI draws a progress bar for
long compactions and prints a summary); everything is in the metastore, so several schedulers
on several machines can share a warehouse: claims keep them from compacting one partition
twice.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acidstore.config import COMPACTION_STALE_SECONDS, RETENTION_SECONDS
from acidstore.engine.core import HasCore, WarehouseCore, core_of
from acidstore.errors import InvalidInputError
from acidstore.metastore import CompactionInfo
from compaction.cleaner import Cleaner, CleanerReport
from compaction.compactor import Engine
from compaction.initiator import Initiator, Thresholds
from compaction.worker import Worker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PassSummary", "parse_interval", "run_every", "run_once"]

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_interval(text: str) -> float:
    """Seconds from ``30``, ``30s``, ``5m``, ``1h`` or ``1d``."""
    match = _INTERVAL.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise InvalidInputError(f"interval {text!r}: use a positive number with s, m, h or d")
    return float(match.group(1)) * _UNIT[match.group(2)]


@dataclass
class PassSummary:
    """What one pass did."""

    queued: list[CompactionInfo] = field(default_factory=list)
    ran: list[CompactionInfo] = field(default_factory=list)
    cleaned: CleanerReport = field(default_factory=CleanerReport)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        states: dict[str, int] = {}
        for entry in self.ran:
            states[entry.state] = states.get(entry.state, 0) + 1
        ran = ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "none"
        return [
            f"initiator: {len(self.queued)} compaction(s) queued",
            f"worker:    {len(self.ran)} compaction(s) run ({ran})",
            f"cleaner:   {len(self.cleaned.removed)} directories removed, "
            f"{len(self.cleaned.kept_for_readers)} kept for live readers, "
            f"{len(self.cleaned.waiting)} compaction(s) waiting for retention or readers, "
            f"{sum(self.cleaned.forgotten.values())} aborted write id(s) forgotten",
            f"took {self.seconds:.2f} s",
        ]


Reporter = Callable[[str, int, int], None]


def run_once(warehouse: WarehouseCore | HasCore, *, engine: Engine = "local",
             spark: SparkSession | None = None, thresholds: Thresholds | None = None,
             retention_seconds: float = RETENTION_SECONDS,
             stale_seconds: float = COMPACTION_STALE_SECONDS,
             report: Reporter | None = None) -> PassSummary:
    """Initiator, then worker (draining the queue), then cleaner: one pass."""
    started = time.monotonic()
    summary = PassSummary()
    summary.queued = Initiator(warehouse, thresholds).run()
    current: list[str] = [""]

    def progress(done: int, total: int) -> None:
        if report is not None:
            report(current[0], done, total)

    worker = Worker(warehouse, engine=engine, spark=spark, stale_seconds=stale_seconds,
                    progress=progress)
    while True:
        entry = core_of(warehouse).metastore.claim_compaction(worker.name, stale_seconds)
        if entry is None:
            break
        current[0] = f"{entry.kind} {entry.table}" + (f"/{entry.partition}"
                                                      if entry.partition else "")
        summary.ran.append(worker.process(entry))
    summary.cleaned = Cleaner(warehouse, retention_seconds=retention_seconds).run()
    summary.seconds = time.monotonic() - started
    return summary


def run_every(interval_seconds: float, run_pass: Callable[[], PassSummary], *,
              stop: threading.Event | None = None, passes: int | None = None,
              on_pass: Callable[[PassSummary], None] | None = None) -> int:
    """Call ``run_pass`` every ``interval_seconds`` until ``stop`` is set (or ``passes``
    ran); returns the number of passes. A failing pass ends the loop with its error: a
    supervisor (systemd, Airflow) restarts it, and the metastore holds all state."""
    stop = stop or threading.Event()
    count = 0
    while not stop.is_set() and (passes is None or count < passes):
        summary = run_pass()
        count += 1
        if on_pass is not None:
            on_pass(summary)
        if passes is not None and count >= passes:
            break
        stop.wait(interval_seconds)
    return count
