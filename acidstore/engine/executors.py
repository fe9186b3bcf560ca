"""Where a write's units run: threads of this process, or Spark tasks.

``spark_tasks`` is the one way acidstore runs work in Spark tasks from a driver: a
statement's units (``spark.jobs``) and a compaction's buckets (``compaction``) alike. Items
are picklable values that need the filesystem only, never the metastore; they are packed
into at most ``slots`` tasks of about equal cost, run in the executors' Python workers
(each worker's long-lived objects frozen first, ``worker_gc``), and their results come back
in item order. An acidstore error raised in a task carries a note from which the driver
rebuilds it (``reported_errors``; ``acidstore.spark.typed_error`` reads it).

``pack`` is the balancing both use, and the Spark reader's planning too.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import AcidStoreError, InvalidInputError
from acidstore.io.fs import storage_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["NOTE", "bundles", "note_error", "pack", "reported_errors", "spark_session",
           "spark_tasks"]

T = TypeVar("T")
R = TypeVar("R")

#: the start of the note line ``reported_errors`` adds (JSON follows on the same line)
NOTE = "acidstore error as JSON: "


def note_error(exc: AcidStoreError) -> None:
    """Add to ``exc`` the note the driver rebuilds it from (once: a re-raised error keeps its
    first): its class, message and plain attributes as JSON. Errors cross from Spark's
    workers to the driver only as text."""
    if any(str(n).startswith(NOTE) for n in getattr(exc, "__notes__", ())):
        return
    # an OSError's errno is a slot, not in its __dict__ (StorageError is one)
    found = {**vars(exc), **({"errno": exc.errno} if isinstance(exc, OSError) else {})}
    attributes = {key: value for key, value in found.items()
                  if not key.startswith("_") and (value is None or isinstance(
                      value, str | int | float | bool))}
    exc.add_note(NOTE + json.dumps({"class": type(exc).__name__, "message": str(exc),
                                    "attributes": attributes}))


@contextmanager
def reported_errors() -> Iterator[None]:
    """Around code Spark runs in a Python worker (a task, or the driver-side worker that
    plans or commits a data source's work): an acidstore error raised there gets the note
    from which the driver rebuilds it, and a failure of the storage (an ``OSError`` the code
    did not type) becomes a ``StorageError`` first. Anything else goes through as it is."""
    try:
        yield
    except AcidStoreError as exc:
        note_error(exc)
        raise
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise  # for the caller to judge (often a MissingDataError)
        typed = storage_error(exc, None, action="write or read in a Spark task")
        note_error(typed)
        raise typed from exc


def bundles(keys: Sequence[Hashable], costs: Sequence[int], limit: int) -> list[list[int]]:
    """Indexes of items with equal ``keys`` (a partition's bucket) together, in item order,
    a bundle cut before an item that would take it over ``limit``."""
    open_bundle: dict[Hashable, int] = {}
    loads: list[int] = []
    out: list[list[int]] = []
    for index, (key, cost) in enumerate(zip(keys, costs, strict=True)):
        at = open_bundle.get(key)
        if at is None or loads[at] + cost > limit:
            at = len(out)
            open_bundle[key] = at
            out.append([])
            loads.append(0)
        out[at].append(index)
        loads[at] += cost
    return out


def pack(items: Sequence[T], costs: Sequence[int], count: int,
         keys: Sequence[Hashable] | None = None, bundle_limit: int = 0) -> list[list[T]]:
    """``items`` in at most ``count`` groups, balanced: bundles (``keys``, see ``bundles``;
    every item alone without them) costliest first, each into the group with the least so
    far; each group in item order. Greedy next-fit packing (Spark's) can leave a last task
    with one small file, so that half of two cores idles through a table of ten equal
    buckets."""
    parts = bundles(keys, costs, bundle_limit) if keys is not None else \
        [[i] for i in range(len(items))]
    count = min(count, len(parts))
    if count <= 1:
        return [list(items)]  # an empty snapshot still gets one (empty) task
    weights = [sum(costs[i] for i in part) for part in parts]
    loads = [(0, g) for g in range(count)]
    members: list[list[int]] = [[] for _ in range(count)]
    for b in sorted(range(len(parts)), key=lambda b: -weights[b]):
        load, group = heapq.heappop(loads)
        members[group].extend(parts[b])
        heapq.heappush(loads, (load + weights[b], group))
    return [[items[i] for i in sorted(m)] for m in members if m]


def spark_session(spark: SparkSession | None) -> SparkSession:
    """``spark``, or the active session (``InvalidInputError`` if there is none)."""
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None:
        raise InvalidInputError("engine='spark' needs a SparkSession (pass spark=...)")
    return active


def spark_tasks(spark: SparkSession, items: Sequence[T],
                run: Callable[[Sequence[T]], list[R]], *,
                costs: Sequence[int] | None = None, slots: int | None = None) -> list[R]:
    """``run(share)`` for shares of ``items`` in Spark tasks: the items packed by ``costs``
    (equal without them) into at most ``slots`` tasks (default: the session's parallelism; a
    task costs more to schedule than a small item takes to run), each task running its share
    in item order (one thread: Spark runs a task per core); ``run`` returns one result per
    item. Results in item order."""
    if not items:
        return []
    count = max(1, min(len(items), slots or spark.sparkContext.defaultParallelism))
    shares = pack(list(range(len(items))),
                  list(costs) if costs is not None else [1] * len(items), count)

    def task(chosen: list[T]) -> list[R]:
        freeze_long_lived()
        with reported_errors():
            return run(chosen)

    done: list[list[R]] = spark.sparkContext.parallelize(
        [[items[i] for i in part] for part in shares], len(shares)).map(task).collect()
    results: dict[int, R] = {}
    for part, outcome in zip(shares, done, strict=True):
        results.update(zip(part, outcome, strict=True))
    return [results[i] for i in range(len(items))]
