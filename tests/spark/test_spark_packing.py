"""How Spark reads are packed into tasks (``acidstore.spark.packing``), and that the packed
read returns exactly what the embedded reader and a read of one split per task return.

The table is S1's shape in small: per bucket one large insert file (over the reader's small-file
limit, so read alone) and the small insert and delete files of later UPDATEs and DELETEs (read
grouped by directory). A bucket's splits must land in one task (its delete files decoded once,
its small files grouped), tasks come in multiples of the cores, and the rows must not change.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from spark_support import TABLE, arrow_rows, new_table, spark_rows

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.read.grouped import groupable
from acidstore.spark import AcidTable
from acidstore.spark.packing import (
    OPEN_COST_BYTES,
    SMALL_OPEN_COST_BYTES,
    bundles,
    pack,
    split_bytes,
    task_count,
)
from acidstore.spark.read_tasks import ReadTask, plan_read, read_options, read_schema
from acidstore.write.bucketing import bucket_ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BUCKETS = 8


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


def s1_shaped(wh: Warehouse) -> Table:
    """Unpartitioned, 8 buckets: a first insert whose every bucket file is large (the first id
    of each bucket carries 300 KB of random hex), then small UPDATEs, DELETEs and inserts of
    other ids."""
    t = new_table(wh, partitioned=False, buckets=BUCKETS)
    ids = list(range(80))
    of_id = bucket_ids(pa.table({"id": ids}), ["id"], BUCKETS).tolist()
    large = {of_id.index(b) for b in range(BUCKETS)}
    assert max(large) < 40  # below the ids the statements change
    t.insert(pa.table({"id": ids, "name": [os.urandom(150_000).hex() if i in large
                                           else f"n{i}" for i in ids],
                       "amount": [i * 10 for i in ids]}))
    for r in range(3):
        t.update(f"id >= 40 AND id % 5 = {r}", {"amount": "amount + 1"})
    t.delete("id >= 40 AND id % 7 = 3")
    t.insert(pa.table({"id": [100, 101, 102], "name": ["x", "y", "z"], "amount": [1, 2, 3]}))
    return t


def planned(t: Table, options: dict[str, str]) -> list[ReadTask]:
    opts = read_options(options)
    tasks, _ = plan_read(handle_of(t), opts, read_schema(handle_of(t), opts),
                         handle_of(t).read_snapshot())
    return tasks


def test_a_bucket_is_read_by_one_task_and_tasks_fill_the_cores(wh: Warehouse) -> None:
    t = s1_shaped(wh)
    tasks = planned(t, {"minPartitions": "2"})
    splits = [s for task in tasks for _, s in task.planned]
    assert any(not groupable(s) for s in splits), "a large file read alone"
    assert sum(groupable(s) for s in splits) > BUCKETS, "small files read grouped"
    assert len(tasks) == 2
    owner: dict[int, int] = {}
    for n, task in enumerate(tasks):
        for _, split in task.planned:
            assert owner.setdefault(split.bucket_id, n) == n, "a bucket split over tasks"
    loads: Counter[int] = Counter()
    for split in splits:
        loads[owner[split.bucket_id]] += split.size or 0
    largest = max(s.size or 0 for s in splits)
    assert abs(loads[0] - loads[1]) <= largest  # balanced
    # a task count that would leave a core idle in its last wave is rounded up to the cores
    total = sum((s.size or 0) + (SMALL_OPEN_COST_BYTES if groupable(s) else OPEN_COST_BYTES)
                for s in splits)
    three = planned(t, {"minPartitions": "2", "maxPartitionBytes": str(total // 3 + 1)})
    assert len(three) == 4
    # one split per task where maxPartitionBytes asks for it
    assert len(planned(t, {"maxPartitionBytes": "1"})) == len(splits)


@pytest.mark.parametrize("reader", ["vectorized", "merge"])
def test_packed_read_equals_embedded_and_one_split_per_task(
        spark: SparkSession, wh: Warehouse, reader: str) -> None:
    t = s1_shaped(wh)
    expected = arrow_rows(t.to_arrow())
    df = (spark.read.format("acidstore").option("warehouse", str(wh.location))
          .option("reader", reader))
    packed = df.option("minPartitions", "2").load(TABLE)
    assert packed.rdd.getNumPartitions() == 2
    assert spark_rows(packed) == expected
    alone = df.option("maxPartitionBytes", "1").load(TABLE)
    assert spark_rows(alone) == expected
    assert spark_rows(AcidTable.forName(spark, TABLE, warehouse=str(wh.location)).toDF()) \
        == expected
    ids = AcidTable.forName(spark, TABLE, warehouse=str(wh.location)).toDF(with_row_id=True)
    assert spark_rows(ids) == arrow_rows(t.to_arrow(with_row_id=True))


def test_task_count_and_split_bytes() -> None:
    assert split_bytes(128 << 20, 2, [10, 10, 10]) == 15
    assert split_bytes(10, 2, [100, 100]) == 10
    assert split_bytes(128, 4, []) == 1
    assert task_count([30] * 10, 100, 2, 10) == 4  # 3 tasks rounded up to 2 waves of 2
    assert task_count([30] * 10, 100, 1, 10) == 3
    assert task_count([30] * 10, 1, 2, 10) == 10  # at most one per item
    assert task_count([], 100, 2, 0) == 1


def test_bundles_keep_a_key_together_up_to_the_limit() -> None:
    keys = ["a", "b", "a", "b", "a"]
    assert bundles(keys, [1, 1, 1, 1, 1], 10) == [[0, 2, 4], [1, 3]]
    assert bundles(keys, [5, 1, 5, 1, 5], 10) == [[0, 2], [1, 3], [4]]
    assert bundles(keys, [1] * 5, 0) == [[0], [1], [2], [3], [4]]


def test_pack_balances_bundles_and_keeps_item_order() -> None:
    items = list("abcdefgh")
    keys = [0, 1, 2, 3, 0, 1, 2, 3]
    costs = [10, 10, 10, 10, 1, 1, 1, 1]
    groups = pack(items, costs, 2, keys=keys, bundle_limit=100)
    assert [len(g) for g in groups] == [4, 4]  # two bundles of cost 11 each
    for group in groups:
        assert group == sorted(group, key=items.index)
        large = {keys[items.index(x)] for x in group if x in "abcd"}
        assert {keys[items.index(x)] for x in group if x in "efgh"} == large
    assert pack(items, costs, 1) == [items]
    assert pack([], [], 4) == [[]]
