"""Smoke test of the PLOT benchmark (``benchmarks.deltas``) on a 2,000-row table: the states
of each point hold the same rows on every side (acidstore as is and compacted, the limit's
ORC files, delta-rs), the compacted one is a single base, the scan tasks read them all, and
the figure is written (no timings are checked)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
from deltalake import DeltaTable

import acidstore
from benchmarks import deltas
from benchmarks.harness import Measurement
from benchmarks.tasks import limit_scan
from benchmarks.tasks_write import TABLE, table_scan

ROWS = 2000


def test_points_hold_the_same_rows_everywhere_and_the_figure_is_written(tmp_path: Path
                                                                        ) -> None:
    states = deltas.prepare_deltas(tmp_path / "states", ROWS, 1 << 20, deltas=(1, 4))
    root = Path(states["root"])
    for d in (1, 4):
        with acidstore.connect(root / f"acid_{d}") as wh:
            ids = sorted(wh.table(TABLE).to_arrow(columns=["id"]).column(0).to_pylist())
        with acidstore.connect(root / f"major_{d}") as wh:
            table = wh.table(TABLE)
            left = [n for n in os.listdir(table.location) if not n.startswith(("_", "."))]
            compacted = sorted(table.to_arrow(columns=["id"]).column(0).to_pylist())
        limit = pa.concat_tables(po.ORCFile(str(p)).read(columns=["id"])
                                 for p in sorted((root / f"limit_{d}").glob("*.orc")))
        delta = DeltaTable(root / f"delta_{d}").to_pyarrow_table(columns=["id"])
        assert len(left) == 1 and left[0].startswith("base_")
        assert ids == compacted == sorted(limit.column(0).to_pylist()) == sorted(
            delta.column(0).to_pylist())
        assert len(ids) == states["rows"][str(d)]
        scans = [table_scan({"engine": "acid", "acid_after": str(root / f"acid_{d}")}),
                 table_scan({"engine": "acid", "acid_after": str(root / f"major_{d}")}),
                 table_scan({"engine": "delta", "delta_after": str(root / f"delta_{d}")}),
                 limit_scan({"limit_dir": str(root / f"limit_{d}"), "threads": 2})]
        assert [s["rows"] for s in scans] == [len(ids)] * 4
    # four statements: UPDATE, DELETE, INSERT, UPDATE of 1 row each (0.01% of 2,000 rounds
    # up to one): one row fewer, one more
    assert states["rows"] == {"1": ROWS, "4": ROWS}
    point = deltas.Point(1, *(Measurement(s, ROWS, 100.0) for s in (0.4, 0.1, 0.1, 0.2)))
    assert [r.ratio() for r in deltas.rows_of([point])] == ["4.00x", "2.00x", "1.00x"]
    figure = tmp_path / "out" / "scan-vs-deltas.png"
    later = deltas.Point(4, *(Measurement(s, ROWS, 100.0) for s in (0.5, 0.1, 0.1, 0.2)))
    deltas.plot_points([point, later], ROWS, figure)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
