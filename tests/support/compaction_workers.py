"""A compaction worker that dies at a chosen step (imported by ``spawn`` children).

The child replaces one compaction function *in its own process* by a wrapper that ends the
process with ``os._exit(9)`` (no ``finally``, no abort, no more heartbeats) at the chosen
step, then runs a real ``Worker``; production code has no test hooks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import acidstore
import compaction.compactor
import compaction.worker
from compaction import Worker

#: where the worker dies, in the order they happen
STEPS = ("claimed", "txn opened", "some buckets written", "committed")
DIED = 9


def _die(*args: Any, **kwargs: Any) -> Any:
    os._exit(DIED)


def _then_die(real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, then death; one call at a time (buckets run in a thread pool), so exactly
    the first call's work is done when the process ends."""
    one_at_a_time = threading.Lock()

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_at_a_time:
            real(*args, **kwargs)
            os._exit(DIED)

    return wrapper


def _replace(module: ModuleType, name: str, make: Callable[[Any], Any]) -> None:
    """Rebind ``module.name`` (the name the caller looks up at call time) in this process."""
    namespace = vars(module)
    assert callable(namespace[name])
    namespace[name] = make(namespace[name])


def die_at(location: str, step: str, stale_seconds: float) -> None:
    """Run a worker over the queue of the warehouse at ``location``; die at ``step``. Its
    claim goes stale after its own ``stale_seconds``, whatever the next worker's window."""
    if step == "claimed":  # the entry is 'working', no transaction yet
        _replace(compaction.worker, "compact", lambda real: _die)
    elif step == "txn opened":  # the compaction txn is open and recorded in the entry
        _replace(compaction.compactor, "plan_partition_compaction", lambda real: _die)
    elif step == "some buckets written":  # the first bucket's files are in the _v dirs
        _replace(compaction.compactor, "run_bucket", _then_die)
    elif step == "committed":  # the txn committed, the entry was not moved on yet
        _replace(compaction.worker, "compact", _then_die)
    else:
        raise ValueError(step)
    wh = acidstore.connect(location)
    Worker(wh, stale_seconds=stale_seconds).run()
    os._exit(0)  # the step was never reached: the parent sees exit code 0, not 9
