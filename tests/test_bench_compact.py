"""Smoke test of the compaction benchmarks (W7, W8, S3) on a tiny table: every task runs on
both sides, the compactions keep every row, and each peer handles the same rows (no timings
are checked)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.orc as po
import pytest

from benchmarks.tasks_compact import acid_compact, compacted_scan, delta_optimize, limit_rewrite
from benchmarks.tasks_spark import spark_compact

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture
def states(bench_states: dict[str, Any]) -> dict[str, Any]:
    return bench_states


def test_compacted_state_is_one_base_with_the_rows_of_the_limit(states: dict[str, Any]) -> None:
    import acidstore

    with acidstore.connect(states["acid_compacted"]) as wh:
        table = wh.table("bench.t")
        left = [n for n in os.listdir(table.location) if not n.startswith(("_", "."))]
        ids = sorted(table.to_arrow(columns=["id"]).column(0).to_pylist())
    assert len(left) == 1 and left[0].startswith("base_")
    plain = sorted(i for p in sorted(Path(states["limit_after"]).glob("*.orc"))
                   for i in po.ORCFile(str(p)).read(columns=["id"]).column(0).to_pylist())
    assert ids == plain and len(ids) == states["after_rows"]
    assert compacted_scan(states)["rows"] == states["after_rows"]


@pytest.mark.parametrize("kinds", [["minor"], ["major"], ["minor", "major"]])
def test_acid_compactions_keep_every_row(states: dict[str, Any], kinds: list[str]) -> None:
    result = acid_compact({**states, "kinds": kinds, "timed": kinds[-1:]})
    assert result["rows"] == states["after_rows"]
    assert result["seconds"] > 0
    assert not list(Path(states["scratch"]).glob("run-*"))  # copies removed


def test_peers_rewrite_the_same_rows(states: dict[str, Any]) -> None:
    assert limit_rewrite(states)["rows"] == states["after_rows"]
    optimized = delta_optimize(states)
    assert optimized["rows"] == states["after_rows"]
    assert optimized["files_considered"] >= 1
    assert optimized["files_removed"] <= optimized["files_considered"]


@pytest.mark.parametrize("engine", ["acid", "rewrite"])
def test_s3_both_sides(spark: SparkSession, states: dict[str, Any], engine: str) -> None:
    result = spark_compact({**states, "engine": engine})
    assert result["rows"] == states["after_rows"]
    assert result["seconds"] > 0 and result["jvm_rss_mb"] > 0
