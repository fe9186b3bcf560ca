"""Killing a Spark Python worker while it runs a task, for the tests of what a lost worker
leaves behind (``tests/spark/test_spark_faults.py``, the streaming sink's tests).

A UDF (``held``) makes the task wait on a barrier file until the worker is dead, so the kill
always lands while the job runs; ``WorkerKiller`` finds the held worker among the JVM's
Python workers, kills it (SIGKILL) and releases the barrier.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
from pyspark.sql import functions as F  # noqa: N812  (the PySpark idiom)

if TYPE_CHECKING:
    from pyspark.sql import Column, SparkSession

__all__ = ["WAIT_SECONDS", "WorkerKiller", "held", "python_workers"]

#: how long a held task waits for its kill, and the killer for the task (never reached when
#: things work: the kill comes as soon as the task holds)
WAIT_SECONDS = 60.0


def python_workers(spark: SparkSession) -> set[int]:
    """The pids of the Python workers of Spark's JVM: the processes its ``pyspark.daemon``
    children forked, which run tasks (and, from daemons of their own, plan and commit a
    data source's work)."""
    jvm = psutil.Process(spark.sparkContext._gateway.proc.pid)  # type: ignore[union-attr]
    workers: set[int] = set()
    for child in jvm.children():
        try:
            if "pyspark.daemon" in " ".join(child.cmdline()):
                workers.update(worker.pid for worker in child.children())
        except psutil.NoSuchProcess:  # ended, or a zombie the JVM has not reaped yet (an
            continue  # earlier killed worker's daemon or a helper command; its cmdline raises)
    return workers


def held(barrier: Path, value: int, column: Column) -> Column:
    """``column`` through a UDF that returns it, except that for ``value`` it first leaves a file
    ``held_<pid>`` in ``barrier`` and waits there until ``barrier/released`` exists (the
    killer makes it once the worker is dead; later evaluations pass straight through)."""
    where = str(barrier)

    def hold(given: int) -> int:  # nested: pickled by value for Spark's Python workers
        import os
        import time

        released = os.path.join(where, "released")
        if given == value and not os.path.exists(released):
            with open(os.path.join(where, f"held_{os.getpid()}"), "w"):
                pass
            deadline = time.monotonic() + WAIT_SECONDS
            while not os.path.exists(released) and time.monotonic() < deadline:
                time.sleep(0.02)
        return given

    with warnings.catch_warnings():  # "cannot infer the eval type from type hints"
        warnings.simplefilter("ignore", UserWarning)
        udf: Any = F.udf(hold, "bigint")
    result: Column = udf(column)
    return result


class WorkerKiller(threading.Thread):
    """Kills (SIGKILL) the Python worker that holds at ``barrier``, once ``ready()`` too,
    then releases the barrier. ``killed``: the pid; ``error``: what went wrong here."""

    def __init__(self, spark: SparkSession, barrier: Path,
                 ready: Callable[[], bool] = lambda: True) -> None:
        super().__init__(name="worker-killer", daemon=True)
        self.spark, self.barrier, self.ready = spark, barrier, ready
        self.killed: int | None = None
        self.error: str | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            held: list[Path] = []
            while time.monotonic() < deadline:
                held = sorted(self.barrier.glob("held_*"))
                if held and self.ready():
                    break
                time.sleep(0.02)
            else:
                self.error = f"no task held at {self.barrier} (or it never got ready)"
                return
            pid = int(held[0].name.removeprefix("held_"))
            workers = python_workers(self.spark)
            if pid not in workers:
                self.error = f"the holding process {pid} is no Python worker of {workers}"
                return
            os.kill(pid, signal.SIGKILL)
            self.killed = pid
        except Exception:
            self.error = traceback.format_exc()
        finally:
            (self.barrier / "released").touch()

    def finish(self) -> int:
        self.join(WAIT_SECONDS)
        assert self.error is None, self.error
        assert self.killed is not None
        return self.killed


