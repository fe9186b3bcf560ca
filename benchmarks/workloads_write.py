"""Rows of W1-W4 and of W5/W6 after the real W2-W4 (acidstore beside limit and delta-rs).

Targets are wave 2's, as ratios acidstore / peer: W2 "at least 8x faster" than delta-rs is
``<= 0.125x``, W3 "10x" ``<= 0.10x``, W4 "4x" ``<= 0.25x``; W5 within 1.2x of the limit scan
and at most 0.8x delta-rs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.harness import Measurement
from benchmarks.report import Row

Measure = Callable[..., Measurement]


def w1(m: Measure, stripe_size: int, delta_files: int) -> list[Row]:
    ours = m("load", engine="acid")
    return [
        Row("W1", "load N rows, one transaction (10 buckets)", ours,
            "limit: pyarrow ORC, 10 files", m("load", engine="limit", stripe_size=stripe_size),
            "<= 1.3x"),
        Row("W1", "load N rows, one transaction (10 buckets)", ours,
            f"delta-rs write_deltalake ({delta_files} files)", m("load", engine="delta"),
            "<= 1.0x"),
    ]


def w2(m: Measure) -> list[Row]:
    return [Row("W2", "10 x UPDATE v1 = v1 + 1 WHERE id % 1000 = r (rows: updated)",
                m("change", engine="acid", op="update"), "delta-rs update x 10",
                m("change", engine="delta", op="update"), "<= 0.125x")]


def w3(m: Measure) -> list[Row]:
    return [Row("W3", "DELETE WHERE id % 100 = 3 (rows: deleted)",
                m("change", engine="acid", op="delete"), "delta-rs delete",
                m("change", engine="delta", op="delete"), "<= 0.10x")]


def w4(m: Measure) -> list[Row]:
    return [Row("W4", "MERGE 1% matched (update) + 1% new (insert) (rows: changed)",
                m("change", engine="acid", op="merge"), "delta-rs merge",
                m("change", engine="delta", op="merge"), "<= 0.25x")]


def w5_after(m: Measure, limit: Measurement) -> list[Row]:
    """Full scan of the table left by W2-W4 (``Table.to_arrow``, default threads)."""
    ours = m("table_scan", engine="acid")
    what = "full scan after W2-W4 (Table.to_arrow)"
    return [Row("W5", what, ours, "limit scan, 2 thr", limit, "<= 1.2x"),
            Row("W5", what, ours, "delta-rs to_pyarrow_table", m("table_scan", engine="delta"),
                "<= 0.8x")]


def w6_after(m: Measure, limit: Measurement) -> list[Row]:
    args: dict[str, Any] = {"columns": ["id", "v1"], "filter_k_lt": 10}
    ours = m("table_scan", engine="acid", **args)
    what = "SELECT id, v1 WHERE k < 10 after W2-W4 (Table.to_arrow)"
    return [Row("W6", what, ours, "limit scan+filter, 2 thr", limit, "<= 1.25x"),
            Row("W6", what, ours, "delta-rs to_pyarrow_table", m("table_scan", engine="delta",
                                                                 **args), "<= 1.0x")]
