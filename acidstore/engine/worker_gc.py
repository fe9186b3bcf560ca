"""What an acidstore task does to the Spark Python worker it runs in.

It sits at L1 (imports nothing of acidstore) so that every Python function Spark runs as a
task can call it: the Spark adapter's (L5: reads, inserts, statement units, the shuffled
MERGE) and the compaction package's, which may import acidstore's L1-L4 only.

PySpark's daemon reuses a Python worker for task after task and runs a full garbage collection
(``gc.collect()``) after each one. A worker that has run an acidstore task holds about 96,000
objects the collector tracks (the modules of pyspark, pyarrow, numpy, DuckDB and acidstore),
objects that live as long as the process, and each of those collections traversed them all:
48 ms of worker CPU per task, measured at 1M rows, so 0.1 s of each S2 UPDATE (two tasks) went
to it, a fifth of its workers' CPU, on cores the JVM and the next task wanted.

``freeze_long_lived`` moves what a worker holds when its first acidstore task starts into the
collector's permanent generation (``gc.freeze``, made for pre-forked workers like these), so
the collections after each task look only at what tasks create (0.1 ms). Frozen objects are
still freed by reference counting; only a reference cycle among them would never be
collected, and the objects alive at that moment are, all but a few, the modules' own.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["freeze_long_lived", "thaw"]

#: whether this process has been through ``freeze_long_lived`` (a fork inherits it together with
#: the frozen objects): ``gc.get_freeze_count()`` walks the whole permanent generation, ~10 ms
#: for a worker's ~96,000 objects, so only the first task of a worker may ask it
_FROZE = threading.Event()


def freeze_long_lived() -> None:
    """Freeze the garbage collector's tracked objects into its permanent generation, once per
    process: nothing is done if anything is frozen already (this worker's earlier task, or
    whoever else froze). Call it at the start of a task, in the worker: never in the driver,
    whose objects come and go with the user's program. After the first call it costs a flag
    test (asking the collector, every task, cost ~10 ms of worker CPU)."""
    if _FROZE.is_set():
        return
    if gc.get_freeze_count() == 0:
        gc.freeze()
    _FROZE.set()


def thaw() -> None:
    """Give the frozen objects back to the collector (``gc.unfreeze``) and forget that this
    process froze, so that the next ``freeze_long_lived`` freezes again: a bare
    ``gc.unfreeze()`` would leave later tasks believing their worker frozen."""
    gc.unfreeze()
    _FROZE.clear()
