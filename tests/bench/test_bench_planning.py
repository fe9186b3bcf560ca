"""Smoke test of the planning benchmark (``benchmarks/planning.py``) on tiny tables, local
and on the suite's S3 server. It checks the structural facts the benchmark reports, which
hold whatever the machine's speed: a read planned from the record lists nothing and its plan
opens nothing, a one-partition read costs the same requests at two table sizes, a full
read's requests grow with the files it reads alone, and each plan names the files built."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import planning
from benchmarks.planning_report import plot, report
from benchmarks.s3_server import S3Server


@pytest.fixture(scope="module")
def results(s3_server: S3Server) -> planning.Results:
    return planning.run(partitions=(10, 20), s3_partitions=(10, 20), records=(10, 20),
                        deltas=(2, 4), repeat=1, server=s3_server)


def test_record_planned_reads_list_nothing(results: planning.Results) -> None:
    assert [(p.store, p.partitions) for p in results.points] == [
        ("local", 10), ("local", 20), ("s3", 10), ("s3", 20)]
    for p in results.points:
        # a delta per partition (the delete delta rides on its delta's split)
        assert (p.full_plan.files, p.one_plan.files) == (p.partitions, 1)
        for calls in (p.full_plan, p.one_plan):
            assert sum(calls.fs.values()) == 0, calls  # no listing, stat nor open to plan
            assert calls.sent in (None, 0), calls
        for calls in (p.full_read, p.one_read):
            assert calls.fs["list"] == 0, calls
        # the reads open every delta, and the one delete delta
        assert (p.full_read.files, p.one_read.files) == (p.partitions + 1, 2)
        assert p.full_plan_seconds > 0 and p.one_plan_seconds > 0


def test_s3_requests_follow_the_files_read(results: planning.Results) -> None:
    small, large = (p for p in results.points if p.store == "s3")
    assert small.one_read.requests == large.one_read.requests, (small, large)
    for p in (small, large):
        assert p.full_read.requests is not None and p.full_read.requests["list"] == 0
        # a HEAD (the open learns the length) per file read, nothing per partition else
        assert p.full_read.requests["head"] == p.full_read.files
    grown = (large.full_read.sent or 0) - (small.full_read.sent or 0)
    per_file = grown / (large.full_read.files - small.full_read.files)
    assert (small.full_read.sent or 0) - per_file * small.full_read.files == pytest.approx(
        (large.full_read.sent or 0) - per_file * large.full_read.files)


def test_synthetic_records_and_w12_points(results: planning.Results, tmp_path: Path
                                          ) -> None:
    assert [(r.partitions, r.files, r.one_files) for r in results.records] == [
        (10, 1000, 100), (20, 2000, 100)]
    assert [d.deltas for d in results.dml] == [2, 4]
    assert all(d.update_seconds > 0 and d.delete_seconds > 0 for d in results.dml)
    text = report(results)
    assert "| s3 | 20 |" in text and "| 20 | 2,000 |" in text and "W12" in text
    plot(results, tmp_path / "planning.png")
    assert (tmp_path / "planning.png").stat().st_size > 0


def test_request_kinds() -> None:
    line = '127.0.0.1 - - [29/Nov/2026 04:00:00] "GET /b?list-type=2&prefix=wh HTTP/1.1" 200 -'
    assert planning.request_kind(line) == "list"
    assert planning.request_kind(line.replace("GET /b?list-type=2&prefix=wh", "HEAD /b/k")
                                 ) == "head"
    assert planning.request_kind(line.replace("?list-type=2&prefix=wh", "/k")) == "get"
    assert planning.request_kind(line.replace("GET", "PUT")) == "other"
