"""Smoke test of the Spark benchmark code path (S1, S2) on a tiny table: both sides of each
workload run, and each peer does the same change as acidstore (no timings are checked)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from benchmarks.tasks_spark import spark_change, spark_scan
from benchmarks.workloads_spark import FILTERED_SCANS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture
def states(bench_states: dict[str, Any]) -> dict[str, Any]:
    return bench_states


def test_s1_both_sides_read_the_same_rows(spark: SparkSession, states: dict[str, Any]) -> None:
    from acidstore.spark import AcidTable

    acid = AcidTable.forName(spark, "bench.t", warehouse=states["acid_after"]).toDF()
    native = spark.read.orc(states["limit_after"])
    assert sorted(acid.select("id").toArrow().column(0).to_pylist()) == sorted(
        native.select("id").toArrow().column(0).to_pylist())
    assert states["after_rows"] == acid.count()
    for where, _ in FILTERED_SCANS:
        assert acid.where(where).count() == native.where(where).count(), where
    scans: list[dict[str, Any]] = [
        {"engine": "acid"}, {"engine": "acid", "split_by_cores": True}, {"engine": "native"},
        *({"engine": engine, "where": where} for where, _ in FILTERED_SCANS
          for engine in ("acid", "native"))]
    for args in scans:
        result = spark_scan({**states, **args})
        assert result["rows"] == states["after_rows"]
        assert result["seconds"] > 0
        assert result["jvm_rss_mb"] > 0


@pytest.mark.parametrize(("op", "changed", "shuffle", "in_driver"), [
    ("update", 4, False, False), ("update", 4, False, True), ("delete", 20, False, False),
    ("merge", 40, False, False), ("merge", 40, True, False)])
def test_s2_rewrite_makes_the_change_acidstore_makes(
        spark: SparkSession, states: dict[str, Any], monkeypatch: pytest.MonkeyPatch, op: str,
        changed: int, shuffle: bool, in_driver: bool) -> None:
    monkeypatch.setattr("benchmarks.tasks_spark.UPDATES", 2)  # W2's shape, 2 statements not 10
    acid = spark_change({**states, "engine": "acid", "op": op, "digest": True,
                         "shuffle": shuffle, "in_driver": in_driver})
    rewrite = spark_change({**states, "engine": "rewrite", "op": op, "digest": True})
    assert acid["rows"] == changed
    assert rewrite["rows"] == rewrite["table_rows"] == acid["table_rows"]
    assert rewrite["id_sum"] == acid["id_sum"]
    assert rewrite["v1_sum"] == pytest.approx(acid["v1_sum"], rel=1e-12)
    assert not list(Path(states["scratch"]).glob("run-*"))  # copies removed
