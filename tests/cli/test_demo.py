"""The main job on Spark: the table it leaves equals the pipeline recomputed in plain Python.

The model below restates the demo's data (the multiplicative hash of the row number) and its
statements in plain Python, without acidstore or Spark, so a wrong row id, a lost delete
event, a mis-bucketed row or a MERGE clause taken in the wrong order shows up as a differing
row. What the demo wrote is read back with the embedded API, not with the Spark reader the
demo itself uses.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest

from acidstore.api.connect import connect
from acidstore.cli.demo import DemoResult, run_demo

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOAD = 3000  # the demo's minimum: the smallest load whose change batch is complete
FIRST_DAY = date(2026, 11, 20)
Row = dict[str, Any]


def generated(i: int, load: int) -> Row:
    """Row ``i`` of the demo's generator, as the demo documents it."""
    h = i * 2654435761 % 2**32
    return {"order_id": 100_000 + i, "customer": f"c{h % 1000:04d}",
            "amount": (1000 + h // 1000 % 20_000) / 100,
            "status": "cancelled" if h // 7 % 50 == 0 else "placed",
            "dt": (FIRST_DAY + timedelta(days=3 * i // load)).isoformat()}


@dataclass
class Model:
    rows: dict[int, Row] = field(default_factory=dict)
    shipped: int = 0
    deleted: int = 0
    merge: tuple[int, int, int] = (0, 0, 0)  # updated, deleted, inserted


def model(load: int) -> Model:
    m = Model(rows={r["order_id"]: dict(r) for r in (generated(i, load) for i in range(load))})
    for r in m.rows.values():  # UPDATE: the first day's placed orders ship
        if r["dt"] == FIRST_DAY.isoformat() and r["status"] == "placed":
            r["status"] = "shipped"
            m.shipped += 1
    cancelled = [k for k, r in m.rows.items() if r["status"] == "cancelled"]
    for k in cancelled:  # DELETE the cancelled orders
        del m.rows[k]
    m.deleted = len(cancelled)
    last_day = (FIRST_DAY + timedelta(days=2)).isoformat()
    live = [r for r in (generated(i, load) for i in range(load))
            if r["dt"] == last_day and r["status"] != "cancelled"]
    coupons = [dict(r, amount=r["amount"] - 5, status="paid")
               for r in live if r["order_id"] % 10 == 3][:80]
    cancellations = [dict(r, status="cancelled") for r in live if r["order_id"] % 10 == 7][:10]
    new = [dict(generated(i, load), status="placed") for i in range(load, load + 30)]
    updated = deleted = inserted = 0
    for s in coupons + cancellations + new:  # MERGE: delete, then update, else insert
        target = m.rows.get(s["order_id"])
        if target is None:
            m.rows[s["order_id"]] = s
            inserted += 1
        elif s["status"] == "cancelled":
            del m.rows[s["order_id"]]
            deleted += 1
        else:
            target.update(amount=s["amount"], status=s["status"])
            updated += 1
    m.merge = (updated, deleted, inserted)
    return m


def summary(rows: list[Row]) -> list[tuple[str, str, int, Decimal]]:
    """Orders and revenue per (dt, status); amounts to cents as Spark's decimal cast does."""
    groups: dict[tuple[str, str], tuple[int, Decimal]] = {}
    for r in rows:
        cents = Decimal(repr(r["amount"])).quantize(Decimal("0.01"), ROUND_HALF_UP)
        count, total = groups.get((r["dt"], r["status"]), (0, Decimal(0)))
        groups[(r["dt"], r["status"])] = (count + 1, total + cents)
    return [(dt, status, n, total) for (dt, status), (n, total) in sorted(groups.items())]


@dataclass(frozen=True)
class Run:
    result: DemoResult
    output: str
    warehouse: Path


@pytest.fixture(scope="module")
def demo(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One demo run on the session's SparkSession, into a warehouse that already holds a
    stale ``shop.orders`` (another schema, one row): the demo must replace it, as a re-run of
    ``acidstore demo`` on the same directory does."""
    warehouse = tmp_path_factory.mktemp("demo") / "wh"
    with connect(warehouse) as wh:
        stale = wh.create_table("shop.orders", pa.schema([("x", pa.int64())]))
        stale.insert(pa.table({"x": [1]}))
    out = io.StringIO()
    result = run_demo(warehouse, spark=spark, orders=LOAD, out=out)
    return Run(result, out.getvalue(), warehouse)


def test_final_table_matches_the_plain_python_model(demo: Run) -> None:
    want = model(LOAD)
    with connect(demo.warehouse) as wh:
        assert wh.tables("shop") == ["shop.orders"]
        got = wh.table("shop.orders").to_arrow().sort_by("order_id").to_pylist()
    assert got == sorted(want.rows.values(), key=lambda r: r["order_id"])
    assert demo.result.summary == tuple(summary(got))


def test_statement_counts_and_progress_lines(demo: Run) -> None:
    want = model(LOAD)
    r = demo.result
    assert (r.rows_loaded, r.rows_updated, r.rows_deleted) == (LOAD, want.shipped, want.deleted)
    assert r.merge_counts == want.merge == (80, 10, 30)
    assert dict(r.write_ids) == {"load": 1, "update": 2, "delete": 3, "merge": 4}
    lines = demo.output.splitlines()
    for step, text in enumerate([
            "CREATE shop.orders: partitioned by dt, 4 buckets on order_id",
            f"LOAD {LOAD} orders over 3 days (write id 1,",
            f"UPDATE {want.shipped} placed orders of 2026-11-20 to shipped (write id 2,",
            f"DELETE {want.deleted} cancelled orders (write id 3,",
            "MERGE 120 changes: 80 updated, 10 deleted, 30 inserted (write id 4,",
            "TIME TRAVEL to write id 1:",
            "HISTORY: 4 write ids"], start=1):
        assert any(line.startswith(f"[{step}/7] {text}") for line in lines), text
    assert f"done: {len(want.rows)} orders" in demo.output


def test_history_and_time_travel_in_the_warehouse(demo: Run) -> None:
    with connect(demo.warehouse) as wh:
        table = wh.table("shop.orders")
        history = table.history().to_pylist()
        assert table.to_arrow(as_of=1).num_rows == LOAD
    want = model(LOAD)
    updated, deleted, inserted = want.merge
    assert [(h["write_id"], h["operation"], h["rows_inserted"], h["rows_updated"],
             h["rows_deleted"]) for h in history] == [
        (1, "insert", LOAD, 0, 0), (2, "update", 0, want.shipped, 0),
        (3, "delete", 0, 0, want.deleted), (4, "merge", inserted, updated, deleted)]


def test_spark_time_travel_reads_the_load(demo: Run) -> None:
    assert demo.result.rows_as_of_load == LOAD
    assert f"[6/7] TIME TRAVEL to write id 1: {LOAD} orders, 0 shipped" in demo.output


def test_the_callers_session_is_left_running(demo: Run, spark: SparkSession) -> None:
    assert spark.range(3).count() == 3
