"""The main job: an order pipeline on an embedded warehouse (``acidstore demo``).

It creates a partitioned, bucketed ACID table, loads three days of orders, ships one day's
orders (UPDATE), removes cancelled test orders (DELETE), applies a late batch of corrections and
new orders (MERGE), then shows the history, a time-travel read of the first load, and the
result. The warehouse is left in place to browse with ``acidstore inspect``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.table import Table, WriteResult
from acidstore.warehouse import connect

__all__ = ["ORDERS_SCHEMA", "orders", "run_demo"]

ORDERS_SCHEMA = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False),
    pa.field("customer", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("status", pa.string()),
    pa.field("dt", pa.string()),
])
DAYS = ("2026-11-20", "2026-11-21", "2026-11-22")


def orders(first_id: int, count: int, day: str, seed: int) -> pa.Table:
    """``count`` synthetic orders of ``day``; about 1% are cancelled test orders."""
    rng = np.random.default_rng(seed)
    ids = np.arange(first_id, first_id + count, dtype=np.int64)
    status = np.where(rng.random(count) < 0.01, "cancelled", "open")
    return pa.table({
        "order_id": ids,
        "customer": pa.array([f"c{c:05d}" for c in rng.integers(0, 5000, count)]),
        "amount": np.round(rng.gamma(2.0, 30.0, count), 2),
        "status": pa.array(status),
        "dt": pa.array([day] * count),
    }, schema=ORDERS_SCHEMA)


def _summary(table: pa.Table) -> pa.Table:
    return table.group_by(["dt", "status"]).aggregate(
        [("order_id", "count"), ("amount", "sum")]).sort_by([("dt", "ascending"),
                                                             ("status", "ascending")])


def run_demo(warehouse: Path, *, rows_per_day: int = 20_000, out: TextIO | None = None
             ) -> pa.Table:
    """Run the pipeline; returns the final table and prints progress to ``out``."""
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    def step(label: str, action: Callable[[], WriteResult]) -> WriteResult:
        start = time.perf_counter()
        result = action()
        say(f"  {label:<46} write id {result.write_id}, txn {result.txn_id}: "
            f"+{result.rows_inserted} ~{result.rows_updated} -{result.rows_deleted} "
            f"({time.perf_counter() - start:.2f} s)")
        return result

    wh = connect(warehouse)
    try:
        if "shop.orders" in wh.tables("shop"):
            wh.drop_table("shop.orders")
        t: Table = wh.create_table("shop.orders", ORDERS_SCHEMA, partition_by=["dt"],
                                   bucket_by=["order_id"], buckets=4)
        say(f"warehouse {wh.location}\ntable {t.name} at {t.location}")
        say("1. load three days of orders (one transaction)")
        load = pa.concat_tables([orders(i * rows_per_day, rows_per_day, day, seed=i)
                                 for i, day in enumerate(DAYS)])
        step("INSERT", lambda: t.insert(load))
        loaded_at = datetime.now(UTC)
        say("2. change the data")
        step(f"UPDATE status='shipped' WHERE dt='{DAYS[0]}'",
             lambda: t.update(f"dt = '{DAYS[0]}' AND status = 'open'",
                              {"status": "'shipped'"}))
        step("DELETE WHERE status='cancelled'", lambda: t.delete("status = 'cancelled'"))
        late = pa.concat_tables([
            # corrections to existing orders of the last day, and brand-new orders
            orders(2 * rows_per_day, 200, DAYS[2], seed=99).set_column(
                2, "amount", pa.array(np.full(200, 1.0))),
            orders(3 * rows_per_day, 300, DAYS[2], seed=7),
        ])
        step("MERGE late batch (update matched, insert new)",
             lambda: t.merge(late, "t.order_id = s.order_id")
             .when_matched_update({"amount": "s.amount"}, condition="t.status <> 'cancelled'")
             .when_not_matched_insert_all().execute())
        say("3. history")
        history = t.history().select(["write_id", "operation", "rows_inserted",
                                      "rows_deleted"])
        for row in history.to_pylist():
            say(f"  write {row['write_id']}: {row['operation']:<14} "
                f"+{row['rows_inserted']} -{row['rows_deleted']}")
        say("4. time travel")
        first = t.to_arrow(as_of=1)
        by_time = t.to_arrow(as_of=loaded_at)
        say(f"  as of write id 1: {first.num_rows} rows; as of {loaded_at:%H:%M:%S.%f}: "
            f"{by_time.num_rows} rows; now: {t.to_arrow(columns=['order_id']).num_rows} rows")
        final = t.to_arrow()
        say("5. result (orders and revenue per day and status)")
        summary = _summary(final)
        for row in summary.to_pylist():
            say(f"  {row['dt']}  {row['status']:<9} {row['order_id_count']:>7} orders  "
                f"{row['amount_sum']:>12,.2f}")
        shipped = pc.sum(pc.equal(final.column("status"), "shipped")).as_py()
        say(f"done: {final.num_rows} rows, {shipped} shipped. Browse it with:\n"
            f"  acidstore inspect {t.location}\n  acidstore read {t.location}/dt={DAYS[2]}")
        return final
    finally:
        wh.close()
