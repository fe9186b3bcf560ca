"""Smoke test of the streaming-ingest benchmark (W11) on a tiny size: the prepared states
hold the rows (before compaction one delta per transaction, after it one base), every task
runs on both sides and the harness renders its rows (no timings are checked)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.orc as po

import acidstore
from benchmarks.harness import Bench, Measurement
from benchmarks.tasks import limit_scan
from benchmarks.tasks_ingest import ingest, ingest_compact
from benchmarks.tasks_write import TABLE, table_scan
from benchmarks.workloads_ingest import prepare_ingest, transactions, w11


def test_w11_tasks_and_states(tmp_path: Path) -> None:
    assert (transactions(1_000_000), transactions(100_000), transactions(10)) == (1000, 100,
                                                                                    10)
    paths = prepare_ingest(tmp_path / "ingest", 12, 1 << 20)
    rows = 12 * paths["rows_per_txn"]
    assert paths["ingest_rows"] == rows
    with acidstore.connect(paths["acid_ingested"]) as wh:
        location = wh.table(TABLE).location
        assert sorted(n for n in os.listdir(location) if n.startswith("delta_")) == [
            f"delta_{w:07d}_{w:07d}_0000" for w in range(1, 13)]
    with acidstore.connect(paths["acid_ingest_compacted"]) as wh:
        table = wh.table(TABLE)
        left = [n for n in os.listdir(table.location) if not n.startswith(("_", "."))]
        ids = table.to_arrow(columns=["id"]).column(0).to_pylist()
    assert len(left) == 1 and left[0].startswith("base_0000012_v")
    plain = po.ORCFile(str(Path(paths["limit_one"]) / "part-00000.orc")).read(columns=["id"])
    assert sorted(ids) == plain.column(0).to_pylist() == list(range(rows))

    for engine in ("acid", "delta"):
        result = ingest({**paths, "engine": engine})
        assert result["rows"] == rows and result["commits_per_s"] > 0
    assert ingest_compact(paths)["directories_after"] == 1
    for state in ("acid_ingested", "acid_ingest_compacted"):
        assert table_scan({"engine": "acid", "acid_after": paths[state]})["rows"] == rows
    assert limit_scan({**paths, "limit_dir": paths["limit_one"]})["rows"] == rows
    assert not list(Path(paths["scratch"]).glob("run-*"))  # copies removed

    figures: dict[str, Any] = {}

    def measured(task: str, **args: Any) -> Measurement:
        figures[task] = args
        return Measurement(1.0, rows, 100.0, {"commits_per_s": 12.0,
                                              "directories_after": 1})

    shown = w11(Bench(lambda specs: [measured(task, **args) for task, args in specs]), 12,
                paths)
    assert [r.workload for r in shown] == ["W11"] * 5
    assert all(r.ratio() in ("1.00x", "-") for r in shown)
    assert [r.target for r in shown] == [
        "<= 1.0x", "-", "-", "<= 1.2x", "-"]
