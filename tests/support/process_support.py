"""Run test workers in real ``spawn`` processes that start together at a barrier.

A worker is ``target(*args, barrier, reports)`` and puts ``("ok", worker_no, payload)`` (or an
error report) on ``reports``; any error report fails the calling test with its traceback.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import time
from typing import Any

CONTEXT = multiprocessing.get_context("spawn")


def run_spawned(target: Any, args: list[tuple[Any, ...]], *, deadline_seconds: float = 120
                ) -> list[Any]:
    """Run one process per ``args`` entry; their reports, sorted by worker number."""
    barrier = CONTEXT.Barrier(len(args))
    reports = CONTEXT.Queue()
    processes = [CONTEXT.Process(target=target, args=(*a, barrier, reports)) for a in args]
    for process in processes:
        process.start()
    collected: list[Any] = []
    deadline = time.monotonic() + deadline_seconds
    while len(collected) < len(processes) and time.monotonic() < deadline:
        try:
            collected.append(reports.get(timeout=0.5))
        except queue_module.Empty:
            if not any(p.is_alive() for p in processes) and reports.empty():
                break  # a child died without reporting (e.g. it could not import)
    for process in processes:
        process.join(timeout=30)
        if process.is_alive():
            process.kill()
    errors = [report for report in collected if report[0] != "ok"]
    assert errors == []
    assert len(collected) == len(processes), [p.exitcode for p in processes]
    return sorted(collected, key=lambda report: report[1])
