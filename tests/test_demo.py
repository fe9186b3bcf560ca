"""The main job runs end to end and its result matches the same pipeline computed in Arrow."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from acidstore.demo import DAYS, orders, run_demo


def expected(rows_per_day: int) -> pa.Table:
    data = pa.concat_tables([orders(i * rows_per_day, rows_per_day, d, seed=i)
                             for i, d in enumerate(DAYS)]).to_pylist()
    by_id = {r["order_id"]: r for r in data}
    for r in by_id.values():
        if r["dt"] == DAYS[0] and r["status"] == "open":
            r["status"] = "shipped"
    by_id = {k: r for k, r in by_id.items() if r["status"] != "cancelled"}
    corrections = orders(2 * rows_per_day, 200, DAYS[2], seed=99).to_pylist()
    new = orders(3 * rows_per_day, 300, DAYS[2], seed=7).to_pylist()
    for r in corrections + new:
        if r["order_id"] in by_id:
            by_id[r["order_id"]]["amount"] = 1.0 if r in corrections else r["amount"]
        else:
            by_id[r["order_id"]] = dict(r, amount=1.0) if r in corrections else r
    return pa.Table.from_pylist(sorted(by_id.values(), key=lambda r: r["order_id"]))


def test_demo_pipeline(tmp_path: Path) -> None:
    out = io.StringIO()
    final = run_demo(tmp_path / "wh", rows_per_day=500, out=out)
    want = expected(500)
    got = final.sort_by("order_id")
    assert got.column("order_id").to_pylist() == want.column("order_id").to_pylist()
    assert got.column("status").to_pylist() == want.column("status").to_pylist()
    assert pc.all(pc.equal(got.column("amount"), want.column("amount"))).as_py()
    text = out.getvalue()
    assert "as of write id 1: 1500 rows" in text
    assert "write 4: insert,update" in text
    # run again on the same warehouse: the table is re-created, not appended to
    again = run_demo(tmp_path / "wh", rows_per_day=500, out=io.StringIO())
    assert again.num_rows == final.num_rows
