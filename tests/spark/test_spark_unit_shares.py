"""A statement's units are shared among Spark tasks by the bytes they read, not by their count
(``acidstore.spark.jobs.unit_shares``): with partitions of different sizes, equal counts of
units in unit order gave one task every large unit while the other core idled. The outcomes
still come back in unit order (``run_units``' contract), and the statement writes what the
embedded one writes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from spark_support import make_rows, new_table, table_files

import acidstore
from acidstore import Table
from acidstore.engine import writes
from acidstore.engine.handle import handle_of
from acidstore.engine.statement import ChangeUnit
from acidstore.engine.transaction import TransactionCore
from acidstore.read.keys import writer_ids
from acidstore.spark import AcidTable
from acidstore.spark.conf import temporary_conf
from acidstore.spark.jobs import IN_DRIVER_ON_LOCAL, run_units, unit_bytes, unit_shares

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


LARGE, SMALL = 150_000, 60


class _AbortError(Exception):
    """Leaves a transaction that only planned."""


@contextmanager
def aborted_transaction(table: Table) -> Iterator[TransactionCore]:
    """A transaction of ``table``'s warehouse that aborts when the block ends."""
    try:
        with TransactionCore.begin(handle_of(table).core) as txn:
            yield txn
            raise _AbortError
    except _AbortError:
        pass


def skewed_table(root: Path) -> Table:
    """Partition ``a`` holds LARGE rows, ``b`` and ``c`` SMALL / 2 each (3 buckets each), so
    the units in (partition, bucket) order are three large ones, then six small ones."""
    wh = acidstore.connect(root)
    table = new_table(wh)
    table.insert(pa.concat_tables([make_rows(range(LARGE), dts=("a",)),
                                   make_rows(range(LARGE, LARGE + SMALL), dts=("b", "c"))]))
    return table


def planned_units(table: Table) -> list[ChangeUnit]:
    with aborted_transaction(table) as txn:
        return writes.plan_change(handle_of(table), txn, "delete", "id >= 0")


def test_units_are_shared_by_bytes(tmp_path: Path) -> None:
    units = planned_units(skewed_table(tmp_path / "wh"))
    sizes = [unit_bytes(u) for u in units]
    assert [u.partition for u in units][:3] == ["dt=a"] * 3 and len(units) == 9
    # skewed enough that equal counts in unit order (0-3 against 4-8) would leave the loads
    # 3 large - 4 small apart, more than one large unit
    assert min(sizes[:3]) > 2 * max(sizes[3:])
    shares = unit_shares(units, 2)
    assert sorted(i for share in shares for i in share) == list(range(len(units)))
    assert all(share == sorted(share) for share in shares)
    loads = [sum(sizes[i] for i in share) for share in shares]
    assert len(loads) == 2
    # no task waits on the other for more than one unit's work
    assert max(loads) - min(loads) <= max(sizes)
    assert unit_shares(units, 1) == [list(range(len(units)))]


def test_outcomes_come_back_in_unit_order(spark: SparkSession, tmp_path: Path) -> None:
    table = skewed_table(tmp_path / "wh")
    with aborted_transaction(table) as txn, temporary_conf(spark, IN_DRIVER_ON_LOCAL, "false"):
        units = writes.plan_change(handle_of(table), txn, "delete", "id % 3 = 0")
        assert unit_shares(units, 2)[0] != list(range(len(units) // 2))  # reordered
        outcomes = run_units(spark, units)
    assert table.to_arrow().num_rows == LARGE + SMALL  # aborted: every row is still there
    # each outcome is its unit's: same partition, and deleted rows of the unit's bucket only
    assert [o.partition for o in outcomes] == [u.partition for u in units]
    for unit, outcome in zip(units, outcomes, strict=True):
        assert outcome.rows_deleted == len(outcome.deleted)
        assert set(writer_ids(outcome.deleted.bucket).tolist()) <= \
            {split.bucket_id for _, split in unit.planned}
    assert all(o.rows_deleted > 1000 for o in outcomes[:3])
    assert sum(o.rows_deleted for o in outcomes) == len(range(0, LARGE + SMALL, 3))


def with_row_ids(table: Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_arrow(with_row_id=True).to_pylist()
    return sorted(rows, key=lambda r: (r["row__id"]["writeid"], r["row__id"]["bucketid"],
                                       r["row__id"]["rowid"]))


def test_a_skewed_statement_in_tasks_writes_what_the_embedded_one_writes(
        spark: SparkSession, tmp_path: Path) -> None:
    embedded = skewed_table(tmp_path / "embedded")
    in_tasks = skewed_table(tmp_path / "tasks")
    expected = embedded.update("id % 7 = 3", {"amount": "amount + 1"})
    with temporary_conf(spark, IN_DRIVER_ON_LOCAL, "false"):
        got = AcidTable.forName(spark, in_tasks.name, warehouse=str(tmp_path / "tasks")) \
            .update("id % 7 = 3", {"amount": "amount + 1"})
    matching = sum(1 for i in range(LARGE + SMALL) if i % 7 == 3)
    assert got.rows_updated == expected.rows_updated == matching
    assert with_row_ids(in_tasks) == with_row_ids(embedded)
    assert table_files(in_tasks) == table_files(embedded)
