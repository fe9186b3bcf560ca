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

from collections.abc import Sequence

from acidstore.engine.executors import bundles, pack

__all__ = ["OPEN_COST_BYTES", "SMALL_OPEN_COST_BYTES", "bundles", "pack", "split_bytes",
           "task_count"]

#: what opening a file costs, in bytes of reading (Spark's spark.sql.files.openCostInBytes)
OPEN_COST_BYTES = 4 << 20
#: what a small bucket file read in its directory's group costs beyond its bytes (measured on
#: the S1 table: ~0.1 ms a file, about what 64 KiB of a large file takes to decode)
SMALL_OPEN_COST_BYTES = 64 << 10


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
