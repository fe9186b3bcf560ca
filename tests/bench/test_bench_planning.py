"""Smoke test of the planning benchmark (``benchmarks/planning.py``) on tiny tables, local
and on the suite's S3 server: every shape plans exactly the files it built, a plan sends the
S3 requests its listings need and no more, and the report holds the fitted costs and the
projection."""

from __future__ import annotations

import pytest

from benchmarks import planning
from benchmarks.s3_server import S3Server


def test_planning_benchmark_runs_on_both_stores(s3_server: S3Server,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planning, "start_s3", lambda: s3_server)
    monkeypatch.setattr(S3Server, "stop", lambda self: None)  # the suite's server stays up
    results = planning.run(partitions=2, buckets=2, writes=2, repeat=1)
    assert set(results) == {"local", "s3 (moto)"}
    for timings, _ in results.values():
        assert [t.shape.files for t in timings] == [2, 4, 4, 4]
        assert all(t.total > 0 for t in timings)
    # on S3 a plan lists the table once, each partition once and each directory it reads
    # once (no request per file, none twice)
    assert [(t.shape.partitions, t.shape.directories, t.requests)
            for t in results["s3 (moto)"][0]] == [(2, 2, 5), (4, 4, 9), (2, 2, 5), (2, 4, 7)]
    text = planning.report(results)
    assert "ms/partition" in text and "1,000,000 files" in text
