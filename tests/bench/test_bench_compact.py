"""Smoke test of the compaction benchmarks (W7, W8, S3) on a tiny table: every task runs on
both sides, the compactions keep every row with its values, each peer ends with the same rows
as acidstore, and the prepared compacted state is one base (no timings are checked)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.orc as po
import pytest

from benchmarks.tasks import acid_decode
from benchmarks.tasks_compact import acid_compact, compacted_scan, delta_optimize, limit_rewrite
from benchmarks.tasks_spark import spark_compact
from benchmarks.tasks_write import digest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DIGEST_KEYS = ("table_rows", "id_sum", "ids_sha256", "v1_sum")


@pytest.fixture
def states(bench_states: dict[str, Any]) -> dict[str, Any]:
    return {**bench_states, "digest": True}


@pytest.fixture(scope="module")
def expected(bench_states: dict[str, Any]) -> dict[str, Any]:
    """The digest of ``limit_after``: the rows of ``acid_after`` as plain ORC files, which
    every compaction and rewrite must keep (ids and values)."""
    files = sorted(Path(bench_states["limit_after"]).glob("*.orc"))
    rows = pa.concat_tables(po.ORCFile(str(p)).read(columns=["id", "v1"]) for p in files)
    assert rows.num_rows == bench_states["after_rows"]
    return digest(rows)


def same_rows(result: dict[str, Any], expected: dict[str, Any]) -> bool:
    return result["rows"] == expected["table_rows"] and all(
        result[k] == expected[k] for k in DIGEST_KEYS)


def test_compacted_state_is_one_base_with_the_rows_of_the_limit(
        states: dict[str, Any], expected: dict[str, Any]) -> None:
    import acidstore

    with acidstore.connect(states["acid_compacted"]) as wh:
        table = wh.table("bench.t")
        left = [n for n in os.listdir(table.location) if not n.startswith(("_", "."))]
        ids = sorted(table.to_arrow(columns=["id"]).column(0).to_pylist())
    assert len(left) == 1 and left[0].startswith("base_") and "_v" in left[0]
    plain = sorted(i for p in sorted(Path(states["limit_after"]).glob("*.orc"))
                   for i in po.ORCFile(str(p)).read(columns=["id"]).column(0).to_pylist())
    assert ids == plain and len(ids) == states["after_rows"]
    assert same_rows(compacted_scan(states), expected)


@pytest.mark.parametrize("kinds", [["minor"], ["major"], ["minor", "major"]])
def test_acid_compactions_keep_every_row(states: dict[str, Any], expected: dict[str, Any],
                                         kinds: list[str]) -> None:
    result = acid_compact({**states, "kinds": kinds, "timed": kinds[-1:]})
    assert same_rows(result, expected)
    assert result["seconds"] > 0
    assert not list(Path(states["scratch"]).glob("run-*"))  # copies removed


def test_peers_end_with_the_rows_of_acidstore(states: dict[str, Any],
                                              expected: dict[str, Any]) -> None:
    assert same_rows(limit_rewrite(states), expected)
    optimized = delta_optimize(states)
    assert same_rows(optimized, expected)
    assert optimized["files_considered"] >= 1
    assert optimized["files_removed"] <= optimized["files_considered"]
    assert not list(Path(states["scratch"]).glob("run-*"))


def test_tasks_check_the_row_count(states: dict[str, Any]) -> None:
    with pytest.raises(RuntimeError, match="rows, not"):
        limit_rewrite({**states, "after_rows": states["after_rows"] + 1})


@pytest.mark.parametrize("engine", ["acid", "rewrite"])
def test_s3_both_sides_keep_every_row(spark: SparkSession, states: dict[str, Any],
                                      expected: dict[str, Any], engine: str) -> None:
    result = spark_compact({**states, "engine": engine})
    assert same_rows(result, expected)
    assert result["seconds"] > 0 and result["jvm_rss_mb"] > 0


def test_the_floor_decodes_what_a_scan_of_the_acid_files_must(states: dict[str, Any]) -> None:
    """W5/W8's floor rows: pyarrow decoding the same ACID files, nothing applied. The
    compacted base holds exactly the table's rows; after W2-W4 every insert event is decoded
    (the updated rows twice, old and new) and every delete file is read too."""
    compacted = acid_decode({**states, "decode": "acid_compacted"})
    assert compacted["rows"] == states["after_rows"] and compacted["files"] >= 1
    after = acid_decode({**states, "decode": "acid_after", "keys": True, "threads": 1})
    root = Path(states["acid_after"])
    buckets = [p for p in root.rglob("bucket_*") if "_acidstore" not in str(p)]
    assert after["files"] == len(buckets)
    assert any(p.parent.name.startswith("delete_delta_") for p in buckets)
    inserted = sum(po.ORCFile(str(p)).nrows for p in buckets
                   if not p.parent.name.startswith("delete_delta_"))
    assert after["rows"] == inserted > states["after_rows"]
    twice = acid_decode({**states, "decode": "acid_after", "keys": True, "times": 2})
    assert twice["rows"] == 2 * inserted
