"""How the driver packs a snapshot's splits into Spark read tasks.

Spark sizes file splits by bytes plus a fixed cost to open each file (``openCostInBytes``,
4 MiB). The acidstore reader does not open a small bucket file as Spark does: it reads the
small files of one delta directory as one batch (``read.grouped``), at about 0.1 ms a file.
Counting each of W2-W4's ~120 small files as 4 MiB made the S1 table (10 bucket files plus
~240 small ones) look like 550 MiB at 1M rows, so it ran as 5 tasks on 2 cores: a third wave
with one core idle, every delete file decoded in up to 5 tasks, and the small files of a
directory scattered over tasks, each reading its share one by one.

So a small file costs its bytes plus ``SMALL_OPEN_COST_BYTES``; the splits of one bucket of
one partition go to one task as a bundle (the delete registries of a bucket are decoded once,
and a task's small files of one directory sit together, which the reader groups), cut where a
bundle would exceed half a task; bundles are balanced over a task count rounded up to a
multiple of the cores, so no wave leaves a core idle.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["OPEN_COST_BYTES", "SMALL_OPEN_COST_BYTES", "bundles", "pack", "split_bytes",
           "task_count"]

#: what opening a file costs, in bytes of reading (Spark's spark.sql.files.openCostInBytes)
OPEN_COST_BYTES = 4 << 20
#: what a small bucket file read in its directory's group costs beyond its bytes (measured on
#: the S1 table: ~0.1 ms a file, about what 64 KiB of a large file takes to decode)
SMALL_OPEN_COST_BYTES = 64 << 10
T = TypeVar("T")


def split_bytes(partition_bytes: int, min_partitions: int, costs: Sequence[int]) -> int:
    """Bytes per task, as Spark sizes file splits (``FilePartition.maxSplitBytes``): at most
    ``partition_bytes``, but small enough that a small table still gives every core a task.
    ``costs`` are the files' sizes plus their open costs. Unlike Spark's, no floor of
    ``OPEN_COST_BYTES``: a table of small files (each costing little more than its bytes)
    still spreads over the cores."""
    per_core = -(-sum(costs) // max(min_partitions, 1))
    return max(1, min(partition_bytes, per_core))


def task_count(costs: Sequence[int], limit: int, cores: int, items: int) -> int:
    """Tasks for ``costs`` at ``limit`` bytes each, rounded up to a multiple of ``cores`` (a
    last wave of fewer tasks than cores idles a core), at most one per item, at least one."""
    count = max(1, -(-sum(costs) // max(limit, 1)))
    if count > 1 and cores > 1:
        count = -(-count // cores) * cores
    return max(1, min(count, items))


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
